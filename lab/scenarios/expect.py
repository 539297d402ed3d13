"""Checking a scenario's expectations against the cluster: the snapshot, the journal, the logs, the clients."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lab.engine.ids import TopicPartition
from lab.engine.records import iter_records

if TYPE_CHECKING:
    from lab.scenarios.runner import Check, ScenarioRun


def evaluate(run: ScenarioRun, args: dict[str, Any]) -> list[Check]:
    from lab.scenarios.runner import Check

    cluster = run.cluster
    checks: list[Check] = []

    def add(what: str, expected: Any, actual: Any, ok: bool | None = None) -> None:
        checks.append(
            Check(what=what, expected=expected, actual=actual, ok=(expected == actual) if ok is None else ok)
        )

    if "partition" in args:
        tp = TopicPartition.parse(args["partition"])
        state = cluster.partition_state(tp.topic, tp.partition)
        name = str(tp)
        if not state["replicas"]:
            add(f"{name} exists", True, False)
        else:
            leader = state["leader"]
            logs = state["logs"]
            # ZooKeeper names the leader first; until that broker has taken over it does not lead yet.
            node = cluster.brokers.get(leader)
            taking_over = (
                leader >= 0
                and node is not None
                and node.alive
                and cluster.leader_of(tp.topic, tp.partition) != leader
            )
            leader_log = logs.get(str(leader), {}) if leader >= 0 else {}
            simple = {
                "leader": f"{leader} (taking over)" if taking_over else leader,
                "isr": sorted(state["isr"]),
                "leader_epoch": state["leader_epoch"],
                "replicas": state["replicas"],
                "offline": state["offline"],
                "hw": leader_log.get("high_watermark"),
                "lso": leader_log.get("last_stable_offset"),
                "leo": leader_log.get("log_end_offset"),
                "log_start_offset": leader_log.get("log_start_offset"),
            }
            for key, actual in simple.items():
                if key in args:
                    expected = sorted(args[key]) if key == "isr" else args[key]
                    add(f"{name} {key}", expected, actual)
            if "not_leader" in args:
                add(
                    f"{name} leader is not {args['not_leader']}",
                    True,
                    leader != args["not_leader"] and leader >= 0,
                )
            for key, field in (("hw_by_broker", "high_watermark"), ("leo_by_broker", "log_end_offset")):
                for broker, expected in args.get(key, {}).items():
                    add(f"{name} {field} on broker {broker}", expected, logs.get(str(broker), {}).get(field))
            if "replica" in args:
                r = args["replica"]
                node = cluster.brokers.get(r["broker"])
                replica = None if node is None or not node.alive else node.partitions.get(tp)
                if "leader" in r:
                    add(
                        f"{name} on broker {r['broker']} follows",
                        r["leader"],
                        None if replica is None else replica.leader,
                    )
                if "leader_epoch" in r:
                    add(
                        f"{name} leader epoch on broker {r['broker']}",
                        r["leader_epoch"],
                        None if replica is None else replica.leader_epoch,
                    )
            if "log" in args:
                broker = args["log"]["broker"]
                add(f"{name} log on broker {broker}", args["log"]["values"], _values(run, broker, tp))
    if "lost" in args:
        add("acknowledged records lost", args["lost"], cluster.lost_records())
    if "lost_count" in args:
        add(
            "acknowledged records lost",
            args["lost_count"],
            sum(len(v) for v in cluster.lost_records().values()),
        )
    for item in args.get("journal", []):
        count = _journal_count(run, item)
        if "count" in item:
            add(f"journal {_journal_label(item)} events", item["count"], count)
        else:
            add(f"journal has {_journal_label(item)}", True, count > 0)
    for item in args.get("no_journal", []):
        add(f"journal has no {_journal_label(item)}", 0, _journal_count(run, item))
    if "group" in args:
        _check_group(run, args["group"], add)
    if "consumed" in args:
        c = args["consumed"]
        got = run.consumed.get(c["as"], [])
        if "count" in c:
            add(f"records read as {c['as']}", c["count"], len(got))
        if "min_count" in c:
            add(f"at least {c['min_count']} records read as {c['as']}", True, len(got) >= c["min_count"])
        if "values" in c:
            add(f"values read as {c['as']}", c["values"], [_text(r.value) for r in got])
        if "offsets" in c:
            add(f"offsets read as {c['as']}", c["offsets"], [r.offset for r in got])
    if "produced" in args:
        p = args["produced"]
        futures = run.sent.get(p["producer"], [])
        done = [f for f in futures if f.done()]
        acked = [f for f in done if f.exception() is None]
        failed = [f for f in done if f.exception() is not None]
        if "acked" in p:
            add(f"{p['producer']} acknowledged", p["acked"], len(acked))
        if "failed" in p:
            add(f"{p['producer']} failed", p["failed"], len(failed))
        if "error" in p:
            names = sorted({getattr(f.exception(), "name", "") for f in failed})
            add(f"{p['producer']} errors", True, p["error"] in names, ok=p["error"] in names)
        if "offsets" in p:
            add(f"{p['producer']} offsets", p["offsets"], [f.result().offset for f in acked])
    if "transaction" in args:
        _transaction(run, args["transaction"], add)
    snapshot = None
    if (
        "controller" in args
        or "not_controller" in args
        or "controller_epoch" in args
        or "broker_state" in args
    ):
        snapshot = cluster.snapshot()
    if snapshot is not None:
        if "controller" in args:
            add("controller", args["controller"], snapshot["controller"])
        if "not_controller" in args:
            add(
                f"controller is not {args['not_controller']}",
                True,
                snapshot["controller"] not in (None, args["not_controller"]),
            )
        if "controller_epoch" in args:
            add("controller epoch", args["controller_epoch"], snapshot["controller_epoch"])
        if "broker_state" in args:
            b = args["broker_state"]
            states = {x["id"]: x["state"] for x in snapshot["brokers"]}
            add(f"broker {b['broker']} state", b["state"], states.get(b["broker"]))
    return checks


def _text(value: bytes | None) -> str | None:
    return None if value is None else value.decode("utf-8", errors="replace")


def _values(run: ScenarioRun, broker: int, tp: TopicPartition) -> list[str | None]:
    node = run.cluster.brokers.get(broker)
    partition = None if node is None else node.partitions.get(tp)
    if partition is None:
        return []
    log = partition.log
    out: list[str | None] = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        data = log.read(offset, 1 << 20)
        if not data.records:
            break
        out += [_text(r.value) for r in iter_records(data.records) if r.offset >= offset]
        offset = data.next_offset
    return out


def _journal_count(run: ScenarioRun, item: dict[str, Any]) -> int:
    events = run.cluster.journal.since(run.start_seq)
    return sum(
        1 for e in events if e.kind == item["kind"] and ("contains" not in item or item["contains"] in e.text)
    )


def _journal_label(item: dict[str, Any]) -> str:
    return item["kind"] + (f" containing {item['contains']!r}" if "contains" in item else "")


def _check_group(run: ScenarioRun, g: dict[str, Any], add: Any) -> None:
    groups = run.cluster.snapshot()["groups"]
    group = groups.get(g["name"])
    if group is None:
        add(f"group {g['name']} exists", True, False, ok=False)
        return
    if "state" in g:
        add(f"group {g['name']} state", g["state"], group["state"])
    if "members" in g:
        add(f"group {g['name']} members", g["members"], len(group["members"]))
    if "generation" in g:
        add(f"group {g['name']} generation", g["generation"], group["generation"])
    if "committed" in g:
        expected = {k.replace("-", "/") if "/" not in k else k: int(v) for k, v in g["committed"].items()}
        add(
            f"group {g['name']} committed",
            expected,
            {k: v for k, v in group["committed"].items() if k in expected},
        )
    if "lag" in g:
        add(f"group {g['name']} total lag", g["lag"], group["total_lag"])
    if "revoked_total" in g:
        events = [
            e
            for e in run.cluster.journal.since(run.start_seq)
            if e.kind == "rebalance" and e.group == g["name"]
        ]
        revoked = sum(len(v) for e in events for v in e.data.get("revoked", {}).values())
        add(f"partitions revoked in group {g['name']}", g["revoked_total"], revoked)


def _transaction(run: ScenarioRun, t: dict[str, Any], add: Any) -> None:
    """A transactional id as its coordinator (a live broker leading its __transaction_state partition) holds it."""
    from lab.engine.transactions import transaction_coordinator_of

    found = transaction_coordinator_of(run.cluster.brokers, t["id"])
    name = f"transaction {t['id']}"
    if found is None:
        add(f"{name} has a coordinator", True, False)
        return
    broker, meta = found
    if "state" in t:
        add(f"{name} state", t["state"], meta.state.value)
    if "producer_epoch" in t:
        add(f"{name} producer epoch", t["producer_epoch"], meta.producer_epoch)
    if "coordinator" in t:
        add(f"{name} coordinator", t["coordinator"], broker.id)
    if "not_coordinator" in t:
        add(f"{name} coordinator is not {t['not_coordinator']}", True, broker.id != t["not_coordinator"])
    if "partitions" in t:
        add(f"{name} partitions", sorted(t["partitions"]), sorted(str(tp) for tp in meta.partitions))
