"""Who gets what: replica placement for new topics, and the consumer group assignors.

Placement is the lab's rule (DESIGN.md): sort the n brokers; replica j of
partition i goes to broker (i + j) % n, so the first replica, the preferred
leader, walks round the brokers. The assignors are Kafka's four, run by the
group's leader member: range, roundrobin, sticky, and cooperative-sticky,
which assigns like sticky but never hands a partition from one member to
another in one rebalance: the owner gives it up first, then a second
rebalance gives it away.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from lab.engine.errors import IllegalArgument
from lab.engine.ids import BrokerId, TopicPartition


def place_replicas(
    brokers: Sequence[BrokerId], partitions: int, replication_factor: int, *, start: int = 0
) -> dict[int, tuple[BrokerId, ...]]:
    """Replica j of partition i on sorted broker (i + j) % n; the first replica is the preferred leader."""
    ordered = sorted(brokers)
    n = len(ordered)
    return {
        i: tuple(ordered[(i + j) % n] for j in range(replication_factor))
        for i in range(start, start + partitions)
    }


@dataclass(frozen=True, slots=True, kw_only=True)
class Subscription:
    """What a member tells the group leader when it joins."""

    topics: tuple[str, ...]
    owned: tuple[TopicPartition, ...] = ()
    generation: int = -1


Assignment = dict[str, list[TopicPartition]]


@dataclass(slots=True)
class _Plan:
    members: list[str]
    subs: Mapping[str, Subscription]
    partitions: Mapping[str, int]
    owner: dict[TopicPartition, str] = field(default_factory=dict)

    def all_partitions(self) -> list[TopicPartition]:
        topics = sorted({t for s in self.subs.values() for t in s.topics if t in self.partitions})
        return [TopicPartition(t, p) for t in topics for p in range(self.partitions[t])]

    def eligible(self, tp: TopicPartition) -> list[str]:
        return [m for m in self.members if tp.topic in self.subs[m].topics]


def range_assign(subs: Mapping[str, Subscription], partitions: Mapping[str, int]) -> Assignment:
    """Per topic: members in order, each a contiguous range; the first ones get one extra."""
    out: Assignment = {m: [] for m in sorted(subs)}
    topics = sorted({t for s in subs.values() for t in s.topics if t in partitions})
    for topic in topics:
        members = sorted(m for m, s in subs.items() if topic in s.topics)
        count = partitions[topic]
        per, extra = divmod(count, len(members))
        start = 0
        for i, member in enumerate(members):
            size = per + (1 if i < extra else 0)
            out[member] += [TopicPartition(topic, p) for p in range(start, start + size)]
            start += size
    return out


def roundrobin_assign(subs: Mapping[str, Subscription], partitions: Mapping[str, int]) -> Assignment:
    """Every partition of every topic, in order, dealt round the members like cards."""
    plan = _Plan(sorted(subs), subs, partitions)
    out: Assignment = {m: [] for m in plan.members}
    turn = 0
    for tp in plan.all_partitions():
        members = plan.members
        for _ in range(len(members)):
            member = members[turn % len(members)]
            turn += 1
            if tp.topic in subs[member].topics:
                out[member].append(tp)
                break
    return out


def sticky_assign(subs: Mapping[str, Subscription], partitions: Mapping[str, int]) -> Assignment:
    """Balanced (counts differ by at most one where subscriptions allow), moving as few partitions as possible."""
    plan = _Plan(sorted(subs), subs, partitions)
    valid = set(plan.all_partitions())
    out: Assignment = {m: [] for m in plan.members}
    # Keep what each member owned, if still valid; a partition claimed twice stays with the newer generation.
    claims: dict[TopicPartition, tuple[int, str]] = {}
    for member in plan.members:
        sub = subs[member]
        for tp in sub.owned:
            if tp in valid and tp.topic in sub.topics:
                best = claims.get(tp)
                if best is None or sub.generation > best[0]:
                    claims[tp] = (sub.generation, member)
    # Keep every valid claim; the even-out loop below moves only what balance needs.
    for tp, (_, member) in sorted(claims.items()):
        out[member].append(tp)
    taken = {tp for tps in out.values() for tp in tps}
    for tp in sorted(valid - taken):
        eligible = plan.eligible(tp)
        if eligible:
            target = min(eligible, key=lambda m: (len(out[m]), m))
            out[target].append(tp)
    # Even out: move from the fullest to the emptiest member that may take it.
    while True:
        moved = False
        for giver in sorted(plan.members, key=lambda m: (-len(out[m]), m)):
            for tp in sorted(out[giver], reverse=True):
                takers = [m for m in plan.eligible(tp) if len(out[m]) + 1 < len(out[giver])]
                if takers:
                    taker = min(takers, key=lambda m: (len(out[m]), m))
                    out[giver].remove(tp)
                    out[taker].append(tp)
                    moved = True
                    break
            if moved:
                break
        if not moved:
            break
    return {m: sorted(tps) for m, tps in out.items()}


def cooperative_sticky_assign(subs: Mapping[str, Subscription], partitions: Mapping[str, int]) -> Assignment:
    """Sticky's target, minus every partition that would change hands now: its owner must give it up first."""
    target = sticky_assign(subs, partitions)
    owned_by: dict[TopicPartition, str] = {}
    for member, sub in subs.items():
        for tp in sub.owned:
            owned_by.setdefault(tp, member)
    return {m: [tp for tp in tps if owned_by.get(tp, m) == m] for m, tps in target.items()}


ASSIGNORS = {
    "range": range_assign,
    "roundrobin": roundrobin_assign,
    "sticky": sticky_assign,
    "cooperative-sticky": cooperative_sticky_assign,
}
EAGER = frozenset({"range", "roundrobin", "sticky"})


def assign(name: str, subs: Mapping[str, Subscription], partitions: Mapping[str, int]) -> Assignment:
    assignor = ASSIGNORS.get(name)
    if assignor is None:
        raise IllegalArgument(f"unknown assignor {name!r}; Kafka's are {', '.join(ASSIGNORS)}")
    if not subs:
        return {}
    return assignor(subs, partitions)
