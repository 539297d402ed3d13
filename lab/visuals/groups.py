"""Consumer groups: members, who owns which partition, committed offsets, lag, and rebalances.

The rebalance history comes from the journal's ``rebalance`` events, one per generation
the group reached: each names the generation, the reason, the members by member id, and per
member what it gave up (revoked) and received.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lab.engine.events import Event
from lab.visuals.glossary import tip

REBALANCES_SHOWN = 8


@dataclass(frozen=True, slots=True, kw_only=True)
class Member:
    member_id: str
    client_id: str
    instance_id: str | None
    leader: bool
    partitions: tuple[str, ...]  # "orders-0"
    host: str = ""  # where a real client joined from; the lab's own consumers have none

    @property
    def short_id(self) -> str:
        """The member id's last characters: enough to tell two members of one client apart."""
        return self.member_id[-6:]


@dataclass(frozen=True, slots=True, kw_only=True)
class Ownership:
    topic: str
    partition: int
    owner: str | None  # client id
    committed: int | None
    lag: int | None


@dataclass(frozen=True, slots=True, kw_only=True)
class MemberChange:
    member_id: str
    client: str
    gave: tuple[str, ...]
    got: tuple[str, ...]
    left: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class Rebalance:
    seq: int
    time_ms: int
    generation: int
    reason: str
    protocol: str
    members: tuple[str, ...]  # the generation's member ids
    abandoned: str  # why it was abandoned before its members took their partitions ("": it settled)
    changes: tuple[MemberChange, ...]
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupView:
    group_id: str
    state: str
    generation: int
    assignor: str
    coordinator: int | None
    members: tuple[Member, ...]
    partitions: tuple[Ownership, ...]
    total_lag: int
    rebalances: tuple[Rebalance, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupsView:
    groups: tuple[GroupView, ...]
    tips: tuple[tuple[str, str], ...]

    @property
    def tip(self) -> dict[str, str]:
        return dict(self.tips)

    def group(self, group_id: str) -> GroupView | None:
        return next((g for g in self.groups if g.group_id == group_id), None)


def _tp(pair: Sequence[Any]) -> str:
    return f"{pair[0]}-{pair[1]}"


def _client_of(member_id: str, known: Mapping[str, str]) -> str:
    if member_id in known:
        return known[member_id]
    # Kafka's member ids are "<client.id>-<uuid>": the client id is what a person recognises.
    head, sep, tail = member_id.rpartition("-")
    return head if sep and len(tail) >= 8 else member_id


def rebalance(event: Event, known: Mapping[str, str]) -> Rebalance:
    data = event.data
    revoked: Mapping[str, Any] = data.get("revoked") or {}
    assigned: Mapping[str, Any] = data.get("assigned") or {}
    clients: Mapping[str, str] = {**known, **(data.get("clients") or {})}
    members = tuple(str(m) for m in data.get("members") or ())
    changes = []
    for mid in sorted(set(revoked) | set(assigned)):
        gave = tuple(_tp(p) for p in revoked.get(mid, ()))
        got = tuple(_tp(p) for p in assigned.get(mid, ()))
        left = (bool(members) and mid not in members) or (not members and not got)
        if gave or got or left:
            changes.append(
                MemberChange(member_id=mid, client=_client_of(mid, clients), gave=gave, got=got, left=left)
            )
    return Rebalance(
        seq=event.seq,
        time_ms=event.time_ms,
        generation=int(data.get("generation", 0)),
        reason=str(data.get("reason") or ""),
        protocol=str(data.get("protocol") or ""),
        members=members,
        abandoned=str(data.get("abandoned") or ""),
        changes=tuple(changes),
        text=event.text,
    )


def group_view(group_id: str, info: Mapping[str, Any], rebalances: Iterable[Event]) -> GroupView:
    known = {str(m["member_id"]): str(m.get("client_id") or m["member_id"]) for m in info.get("members", ())}
    members = []
    owner: dict[str, str] = {}
    for m in sorted(info.get("members", ()), key=lambda m: str(m.get("client_id") or m["member_id"])):
        parts = tuple(_tp(p) for p in sorted(m.get("assignment") or (), key=lambda p: (p[0], p[1])))
        client = str(m.get("client_id") or m["member_id"])
        for p in parts:
            owner[p] = client
        members.append(
            Member(
                member_id=str(m["member_id"]),
                client_id=client,
                instance_id=m.get("instance_id"),
                leader=m["member_id"] == info.get("leader"),
                partitions=parts,
                host=str(m.get("client_host") or "").lstrip("/"),
            )
        )
    committed: Mapping[str, int] = info.get("committed") or {}
    lag: Mapping[str, int] = info.get("lag") or {}
    keys = set(committed) | set(lag)
    for m in info.get("members", ()):
        keys |= {f"{p[0]}/{p[1]}" for p in m.get("assignment") or ()}
    rows = []
    for key in sorted(keys, key=lambda k: (k.rpartition("/")[0], int(k.rpartition("/")[2]))):
        topic, _, p = key.rpartition("/")
        rows.append(
            Ownership(
                topic=topic,
                partition=int(p),
                owner=owner.get(f"{topic}-{p}"),
                committed=committed.get(key),
                lag=lag.get(key),
            )
        )
    mine = [e for e in rebalances if e.group == group_id]
    mine.sort(key=lambda e: e.seq, reverse=True)
    coordinator = info.get("coordinator")
    return GroupView(
        group_id=group_id,
        state=str(info.get("state", "Unknown")),
        generation=int(info.get("generation", 0)),
        assignor=str(info.get("assignor") or "none yet"),
        coordinator=None if coordinator is None else int(coordinator),
        members=tuple(members),
        partitions=tuple(rows),
        total_lag=int(info.get("total_lag") or sum(lag.values())),
        rebalances=tuple(rebalance(e, known) for e in mine[:REBALANCES_SHOWN]),
    )


def groups_view(
    snapshot: Mapping[str, Any], rebalances: Sequence[Event], config: Mapping[str, str]
) -> GroupsView:
    groups = snapshot.get("groups") or {}
    return GroupsView(
        groups=tuple(group_view(g, groups[g], rebalances) for g in sorted(groups)),
        tips=tuple((k, tip(k, config)) for k in ("group_generation", "lag", "committed", "coordinator")),
    )
