"""Grading an exercise's checks against a lab's snapshot and journal (pure functions).

The live runtime calls ``evaluate`` with each frame's snapshot and the journal since the exercise
started; a check that holds once is remembered as passed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lab.exercises.format import CheckSpec


@dataclass(frozen=True, slots=True, kw_only=True)
class Outcome:
    ok: bool
    detail: str


def _partition(snapshot: Mapping[str, Any], name: str) -> Mapping[str, Any] | None:
    topic, _, number = str(name).rpartition("-")
    parts = snapshot.get("topics", {}).get(topic, {}).get("partitions", [])
    for part in parts:
        if str(part["partition"]) == number:
            return part
    return None


def _leader_log(part: Mapping[str, Any]) -> Mapping[str, Any]:
    return part.get("logs", {}).get(str(part.get("leader")), {})


def _broker(snapshot: Mapping[str, Any], broker: int) -> Mapping[str, Any] | None:
    return next((b for b in snapshot.get("brokers", []) if b["id"] == int(broker)), None)


def _group(snapshot: Mapping[str, Any], name: str) -> Mapping[str, Any] | None:
    return snapshot.get("groups", {}).get(name)


def condition(
    name: str,
    arg: Any,
    snapshot: Mapping[str, Any],
    events: Sequence[Mapping[str, Any]],
    start: Mapping[str, Any] | None = None,
) -> Outcome:
    """One condition: whether it holds, and what the lab shows now (for the student).

    ``start`` is the snapshot taken when the exercise began, for conditions about change.
    """
    if name == "topic_exists":
        ok = arg in snapshot.get("topics", {})
        return Outcome(ok=ok, detail=f"topic {arg} {'exists' if ok else 'does not exist yet'}")
    if name == "partitions_at_least":
        count = len(snapshot.get("topics", {}).get(arg["topic"], {}).get("partitions", []))
        return Outcome(ok=count >= arg["count"], detail=f"{arg['topic']} has {count} partition(s)")
    if name == "records_at_least":
        parts = snapshot.get("topics", {}).get(arg["topic"], {}).get("partitions", [])
        total = sum(_leader_log(p).get("log_end_offset", 0) for p in parts)
        return Outcome(ok=total >= arg["count"], detail=f"{arg['topic']} holds {total} record(s)")
    if name in ("leader", "leader_not", "leader_epoch_at_least", "isr_excludes", "isr_size_at_most"):
        part = _partition(snapshot, arg["partition"])
        if part is None:
            return Outcome(ok=False, detail=f"{arg['partition']} does not exist")
        leader, isr, epoch = part["leader"], part["isr"], part["leader_epoch"]
        shown = f"{arg['partition']}: leader {leader if leader >= 0 else 'none'}, epoch {epoch}, isr {isr}"
        if name == "leader":
            return Outcome(ok=leader == arg["broker"] and not part["offline"], detail=shown)
        if name == "leader_not":
            return Outcome(ok=leader >= 0 and leader != arg["broker"] and not part["offline"], detail=shown)
        if name == "leader_epoch_at_least":
            return Outcome(ok=epoch >= arg["epoch"], detail=shown)
        if name == "isr_excludes":
            return Outcome(ok=arg["broker"] not in isr, detail=shown)
        return Outcome(ok=len(isr) <= arg["size"], detail=shown)
    if name == "offline":
        part = _partition(snapshot, arg)
        if part is None:
            return Outcome(ok=False, detail=f"{arg} does not exist")
        return Outcome(
            ok=bool(part["offline"]), detail=f"{arg} is {'offline' if part['offline'] else 'online'}"
        )
    if name in ("hw_behind_leo", "leo_at_least"):
        part = _partition(snapshot, arg["partition"])
        if part is None:
            return Outcome(ok=False, detail=f"{arg['partition']} does not exist")
        log = _leader_log(part)
        hw, leo = log.get("high_watermark", 0), log.get("log_end_offset", 0)
        shown = f"{arg['partition']}: HW {hw}, LEO {leo} at the leader"
        if name == "leo_at_least":
            return Outcome(ok=leo >= arg["count"], detail=shown)
        return Outcome(ok=not part["offline"] and leo - hw >= arg["by"], detail=shown)
    if name == "log_start_above":
        part = _partition(snapshot, arg["partition"])
        first = _leader_log(part).get("log_start_offset", 0) if part is not None else 0
        return Outcome(ok=first > arg["offset"], detail=f"{arg['partition']}: log start offset {first}")
    if name in ("broker_state", "broker_running"):
        broker = _broker(snapshot, arg["broker"] if isinstance(arg, Mapping) else arg)
        state = None if broker is None else broker["state"]
        if name == "broker_state":
            return Outcome(ok=state == arg["state"], detail=f"broker {arg['broker']} is {state}")
        return Outcome(
            ok=state not in (None, "killed", "stopped", "paused"), detail=f"broker {arg} is {state}"
        )
    if name == "all_brokers_running":
        down = [b["id"] for b in snapshot.get("brokers", []) if b["state"] in ("killed", "stopped")]
        return Outcome(ok=not down, detail="every broker runs" if not down else f"broker(s) {down} are down")
    if name in ("group_state", "group_members", "member_owns_at_least", "lag_at_least"):
        group = _group(snapshot, arg["group"])
        if group is None:
            return Outcome(ok=False, detail=f"group {arg['group']} does not exist yet")
        sizes = [len(m["assignment"]) for m in group["members"]]
        shown = f"group {arg['group']}: {group['state']}, {len(sizes)} member(s) owning {sizes}, lag {group['total_lag']}"
        if name == "group_state":
            return Outcome(ok=group["state"] == arg["state"], detail=shown)
        if name == "group_members":
            return Outcome(ok=len(sizes) == arg["count"], detail=shown)
        if name == "member_owns_at_least":
            return Outcome(
                ok=group["state"] == "Stable" and max(sizes, default=0) >= arg["count"], detail=shown
            )
        return Outcome(ok=group["total_lag"] >= arg["count"], detail=shown)
    if name == "event":
        found = [e for e in events if e["kind"] == arg["kind"] and arg.get("contains", "") in e["text"]]
        return Outcome(ok=bool(found), detail=found[-1]["text"] if found else f"no {arg['kind']} event yet")
    if name == "records_lost":
        found = [e for e in events if e["kind"] == "records_lost"]
        return Outcome(
            ok=bool(found) == bool(arg),
            detail=found[-1]["text"] if found else "nothing acknowledged was lost",
        )
    if name == "controller_changed":
        before = (start or {}).get("controller")
        now, epoch = snapshot.get("controller"), snapshot.get("controller_epoch", 0)
        grew = epoch > (start or {}).get("controller_epoch", 0)
        return Outcome(
            ok=now is not None and now != before and grew,
            detail=f"the controller is broker {now} (it was {before}), controller epoch {epoch}",
        )
    if name == "controller_not":
        controller = snapshot.get("controller")
        return Outcome(
            ok=controller is not None and controller != arg, detail=f"the controller is broker {controller}"
        )
    if name == "controller_epoch_at_least":
        epoch = snapshot.get("controller_epoch", 0)
        return Outcome(ok=epoch >= arg, detail=f"controller epoch {epoch}")
    if name in ("transaction_state", "transaction_epoch_at_least"):
        meta = (snapshot.get("transactions") or {}).get(arg["id"])
        if meta is None:
            return Outcome(ok=False, detail=f"no coordinator knows transactional.id {arg['id']} yet")
        shown = f"{arg['id']}: {meta['state']} at coordinator broker {meta['coordinator']}, epoch {meta['producer_epoch']}"
        if name == "transaction_state":
            return Outcome(ok=meta["state"] == arg["state"], detail=shown)
        return Outcome(ok=meta["producer_epoch"] >= arg["epoch"], detail=shown)
    if name == "producer_fenced":
        client = next((c for c in snapshot.get("clients", []) if c["name"] == arg), None)
        txn = None if client is None else client.get("transaction")
        if txn is None:
            return Outcome(ok=False, detail=f"no transactional producer named {arg}")
        error = txn.get("error")
        return Outcome(
            ok=error == "PRODUCER_FENCED",
            detail=f"{arg} is {txn['state']}" + (f" ({error})" if error else ""),
        )
    if name in ("lso_at_hw", "aborted_transactions_at_least"):
        where = arg if name == "lso_at_hw" else arg["partition"]
        part = _partition(snapshot, where)
        if part is None:
            return Outcome(ok=False, detail=f"{where} does not exist")
        log = _leader_log(part)
        hw, lso = log.get("high_watermark", 0), log.get("last_stable_offset", 0)
        aborted = len((log.get("transactions") or {}).get("aborted") or ())
        shown = f"{where}: LSO {lso}, HW {hw}, {aborted} aborted transaction(s) at the leader"
        if name == "lso_at_hw":
            return Outcome(ok=not part["offline"] and lso == hw, detail=shown)
        return Outcome(ok=aborted >= arg["count"], detail=shown)
    if name in ("acl_allows", "acl_denies"):
        return _acl(name, arg, snapshot)
    raise ValueError(f"unknown condition {name!r}")


def _acl(name: str, arg: Mapping[str, Any], snapshot: Mapping[str, Any]) -> Outcome:
    """What the brokers' authorizer answers now for ``arg``'s principal, operation and resource."""
    from lab.engine.acl import (
        AclBinding,
        AclEntry,
        Authorizer,
        Operation,
        PatternType,
        Permission,
        ResourcePattern,
        ResourceType,
        named,
    )

    held = snapshot.get("acls") or {}
    authorizer = Authorizer(
        (
            AclBinding(
                ResourcePattern(ResourceType(b["resource_type"]), b["name"], PatternType(b["pattern"])),
                AclEntry(b["principal"], b["host"], Operation(b["operation"]), Permission(b["permission"])),
            )
            for b in held.get("bindings", ())
        ),
        super_users=held.get("super_users", ()),
        allow_everyone_if_no_acl_found=bool(held.get("allow_everyone_if_no_acl_found")),
    )
    kind = next(k for k in ("topic", "group", "cluster", "transactional_id") if k in arg)
    resource = named(ResourceType, kind)
    decision = authorizer.authorize(
        arg["principal"],
        arg.get("host", "127.0.0.1"),
        named(Operation, arg["operation"]),
        resource,
        str(arg[kind]),
    )
    if not held.get("enforced"):
        return Outcome(ok=False, detail="the brokers have no authorizer: nothing is enforced")
    wanted = decision.allowed if name == "acl_allows" else not decision.allowed
    verdict = "may" if decision.allowed else "may not"
    what = f"{arg['principal']} {verdict} {str(arg['operation']).upper()} {resource.value}:{arg[kind]}"
    return Outcome(ok=wanted, detail=f"{what} ({decision.reason})")


def evaluate(
    check: CheckSpec,
    snapshot: Mapping[str, Any],
    events: Iterable[Mapping[str, Any]],
    start: Mapping[str, Any] | None = None,
) -> Outcome:
    """All conditions at one instant; the detail says where the lab stands on each."""
    events = list(events)
    outcomes = []
    for item in check.conditions:
        ((name, arg),) = item.items()
        outcomes.append(condition(name, arg, snapshot, events, start))
    return Outcome(ok=all(o.ok for o in outcomes), detail="; ".join(o.detail for o in outcomes))
