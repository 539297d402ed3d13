"""What the panel asks of a lab, as functions its driver thread runs (``LiveLab.submit``).

Each builder takes checked input and returns an ``Act``: called with the live lab on its
driver thread, it reads or changes ``lab.cluster`` and returns what the page shows (a
sentence, a snapshot, records), or ``Waiting`` when the answer takes engine time. Bad
requests raise the engine's Kafka errors and change nothing. Changes to topics are also
recorded in the lab's spec, so a lab rebuilt from it (memory store, reset) has them.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from lab.adminpanel.rows import is_internal
from lab.engine.errors import (
    ElectionNotNeeded,
    IllegalArgument,
    InvalidPartitions,
    InvalidRequest,
    LeaderNotAvailable,
    PreferredLeaderNotAvailable,
    UnknownTopicOrPartition,
)
from lab.engine.ids import TopicPartition
from lab.runtime.actions import Act, Waiting, acks_waiting, config_change, group_retriable, retrying
from lab.runtime.spec import TopicSpec

if TYPE_CHECKING:
    from lab.engine.cluster import Cluster
    from lab.runtime.live import LiveLab

WAIT_S = 3.0  # how long a page waits for the cluster to show a change before answering anyway
OFFSETS_TOPIC = "__consumer_offsets"


def _deadline() -> float:
    return time.monotonic() + WAIT_S


def snapshot() -> Act:
    def run(lab: LiveLab) -> dict[str, Any]:
        return lab.cluster.snapshot()

    return run


def topic_state(topic: str) -> Act:
    """The snapshot, and the topic's config overrides as ZooKeeper holds them now (None: no such topic).

    The snapshot's configs are the controller's copy, which follows a change a moment later.
    """

    def run(lab: LiveLab) -> tuple[dict[str, Any], dict[str, str] | None]:
        cluster = lab.cluster
        snap = cluster.snapshot()
        try:
            config = cluster.topic_config(topic)
        except UnknownTopicOrPartition:
            config = None
        return snap, config

    return run


def _replicas(cluster: Cluster, topic: str, partition: int) -> list[int]:
    return list(cluster.partition_state(topic, partition)["replicas"])


def _moving(cluster: Cluster) -> set[tuple[str, int]]:
    """The partitions the controller is reassigning now (the snapshot's "reassigning")."""
    ctx = cluster.ctx.controller_context
    return set() if ctx is None else {(tp.topic, tp.partition) for tp in ctx.reassignments}


def _exists(cluster: Cluster, topic: str) -> bool:
    return bool(_replicas(cluster, topic, 0))


def _remember(lab: LiveLab, topic: str, **changes: Any) -> None:
    """Record the topic's new shape in the lab's spec (a topic the spec lacks is added as it is now)."""
    spec = lab.spec
    known = next((t for t in spec.topics if t.name == topic), None)
    if known is None:
        cluster = lab.cluster
        known = TopicSpec(
            name=topic,
            partitions=cluster.partition_count(topic),
            replication_factor=len(_replicas(cluster, topic, 0)) or 1,
            config=cluster.topic_config(topic),
        )
    lab.update_spec(spec.with_topic(replace(known, **changes)))


def _forget(lab: LiveLab, topic: str) -> None:
    spec = lab.spec
    lab.update_spec(replace(spec, topics=tuple(t for t in spec.topics if t.name != topic)))


def _led(cluster: Cluster, topic: str, partitions: Sequence[int]) -> bool:
    return all(cluster.leader_of(topic, p) is not None for p in partitions)


# ---------------------------------------------------------------------------- topics


def create_topic(name: str, partitions: int, replication_factor: int, config: Mapping[str, str]) -> Act:
    def run(lab: LiveLab) -> Waiting:
        cluster = lab.cluster
        cluster.create_topic(
            name,
            partitions=partitions,
            replication_factor=replication_factor,
            config=dict(config),
            wait=False,
        )
        lab.update_spec(
            lab.spec.with_topic(
                TopicSpec(
                    name=name,
                    partitions=partitions,
                    replication_factor=replication_factor,
                    config=dict(config),
                )
            )
        )
        said = f"Topic {name} created: {partitions} partition(s), replication factor {replication_factor}"
        if config:
            said += ", " + ", ".join(f"{k}={v}" for k, v in sorted(config.items()))
        return Waiting(
            ready=lambda: _led(cluster, name, range(partitions)),
            result=lambda: said + ".",
            on_timeout=lambda: said + "; its partitions have no leader yet (is the clock paused?).",
            deadline=_deadline(),
        )

    return run


def delete_topic(name: str) -> Act:
    def run(lab: LiveLab) -> Waiting:
        cluster = lab.cluster
        if is_internal(name):
            raise InvalidRequest(
                f"Topic {name} is a kafka internal topic and is not allowed to be marked for deletion."
            )
        cluster.delete_topic(name, wait=False)
        _forget(lab, name)
        return Waiting(
            ready=lambda: not _exists(cluster, name),
            result=lambda: f"Topic {name} deleted: its replicas removed their logs.",
            on_timeout=lambda: f"Topic {name} is marked for deletion; the controller deletes it next.",
            deadline=_deadline(),
        )

    return run


def add_partitions(topic: str, total: int) -> Act:
    def run(lab: LiveLab) -> Waiting:
        cluster = lab.cluster
        if topic == OFFSETS_TOPIC:
            raise InvalidPartitions("The number of partitions for the offsets topic cannot be changed.")
        before = cluster.partition_count(topic)
        cluster.create_partitions(topic, total, wait=False)
        _remember(lab, topic, partitions=total)
        said = f"Topic {topic} grows from {before} to {total} partitions"
        note = " (keys now map to other partitions: murmur2(key) mod the new count)"
        return Waiting(
            ready=lambda: _led(cluster, topic, range(before, total)),
            result=lambda: said + note + ".",
            on_timeout=lambda: said + "; the new partitions have no leader yet (is the clock paused?).",
            deadline=_deadline(),
        )

    return run


def alter_config(topic: str, updates: Mapping[str, str], remove: Sequence[str]) -> Act:
    def run(lab: LiveLab) -> Waiting:
        parts = [f"{k}={v}" for k, v in sorted(updates.items())]
        parts += [f"{k} back to the default" for k in remove]

        def said(merged: dict[str, str], taken_in: bool) -> str:
            _remember(lab, topic, config=merged)
            if taken_in:
                return f"Topic {topic} config: {', '.join(parts)}."
            return (
                f"Topic {topic} config: {', '.join(parts)}, written to ZooKeeper; the brokers apply it when "
                "the controller reads the change (is it paused?): the page shows it then."
            )

        return config_change(lab.cluster, topic, dict(updates), tuple(remove), then=said, wait_s=WAIT_S)

    return run


def reassign(topic: str, targets: Mapping[int, Sequence[int]]) -> Act:
    def run(lab: LiveLab) -> Waiting:
        cluster = lab.cluster
        count = cluster.partition_count(topic)
        bad = [p for p in targets if not 0 <= p < count]
        if bad:
            raise UnknownTopicOrPartition(f"{topic} has {count} partition(s); there is no partition {bad[0]}")
        changed = {
            (topic, p): list(r) for p, r in sorted(targets.items()) if list(r) != _replicas(cluster, topic, p)
        }
        if not changed:
            raise IllegalArgument("the plan changes nothing: every partition already has those replicas")
        cluster.reassign_partitions(changed, wait=False)
        sizes = {len(r) for r in changed.values()}
        if len(sizes) == 1 and len(changed) == count:
            _remember(lab, topic, replication_factor=sizes.pop())
        said = (
            f"Reassignment of {len(changed)} partition(s) of {topic} started: the new replicas catch up, "
            "then the leader moves if it must, then the old replicas are removed."
        )

        def started() -> bool:
            # The controller has taken the plan: each partition is moving, or already moved.
            moving = _moving(cluster)
            return all((t, p) in moving or _replicas(cluster, t, p) == r for (t, p), r in changed.items())

        return Waiting(ready=started, result=lambda: said, on_timeout=lambda: said, deadline=_deadline())

    return run


def elect_preferred(topic: str | None, partition: int | None = None) -> Act:
    """A preferred-leader election: one partition, every partition of ``topic``, or every partition."""

    def run(lab: LiveLab) -> Waiting:
        cluster = lab.cluster
        topics = [topic] if topic is not None else cluster.topics()
        wanted: list[tuple[str, int, int]] = []
        blocked: list[str] = []
        for name in topics:
            if topic is not None and not _exists(cluster, name):
                raise UnknownTopicOrPartition(f"Topic '{name}' does not exist.")
            count = cluster.partition_count(name)
            parts = range(count) if partition is None else [partition]
            for p in parts:
                if not 0 <= p < count:
                    raise UnknownTopicOrPartition(
                        f"{name} has {count} partition(s); there is no partition {p}"
                    )
                state = cluster.partition_state(name, p)
                replicas, leader, isr = state["replicas"], state["leader"], state["isr"]
                preferred = replicas[0] if replicas else -1
                if preferred == leader:
                    continue
                if preferred not in isr:
                    blocked.append(f"{name}-{p} (broker {preferred} is not in the ISR {list(isr)})")
                    continue
                wanted.append((name, p, preferred))
        if not wanted:
            if blocked:
                raise PreferredLeaderNotAvailable(
                    f"The preferred leader is not available for {', '.join(blocked)}."
                )
            where = f"{topic}-{partition}" if partition is not None else (topic or "any partition")
            raise ElectionNotNeeded(
                f"Leader election not needed for {where}: the preferred replica already leads."
            )
        cluster.elect_preferred_leaders([(t, p) for t, p, _ in wanted], wait=False)

        def said() -> str:
            moved = [f"{t}-{p} → broker {b}" for t, p, b in wanted if cluster.leader_of(t, p) == b]
            text = f"Preferred leaders elected: {', '.join(moved) or 'none yet'}."
            if blocked:
                text += f" Not elected: {', '.join(blocked)}."
            return text

        return Waiting(
            ready=lambda: all(cluster.leader_of(t, p) == b for t, p, b in wanted),
            result=said,
            on_timeout=lambda: said() + " The controller is still at it (is the clock paused?).",
            deadline=_deadline(),
        )

    return run


# ---------------------------------------------------------------------------- messages


@dataclass(frozen=True, slots=True, kw_only=True)
class Page:
    """One page of the message browser: the records and where they sit in the partition's log."""

    topic: str
    partition: int
    leader: int
    log_start_offset: int
    high_watermark: int
    log_end_offset: int
    records: tuple[dict[str, Any], ...]
    start: int  # the offset the read started from
    full: bool  # as many records as asked: there may be more after


def browse(
    topic: str,
    partition: int,
    *,
    start: str,
    offset: int | None,
    time_ms: int | None,
    search: str,
    limit: int,
) -> Act:
    def run(lab: LiveLab) -> Page:
        cluster = lab.cluster
        if not _exists(cluster, topic):
            raise UnknownTopicOrPartition(f"Topic '{topic}' does not exist.")
        count = cluster.partition_count(topic)
        if not 0 <= partition < count:
            raise UnknownTopicOrPartition(
                f"{topic} has {count} partition(s); there is no partition {partition}"
            )
        leader = cluster.leader_of(topic, partition)
        if leader is None:
            raise LeaderNotAvailable(
                f"{topic}-{partition} has no leader right now: its records cannot be read"
            )
        replica = cluster.brokers[leader].partitions[TopicPartition(topic, partition)]
        lso, hw, leo = replica.log_start_offset, replica.high_watermark, replica.log.log_end_offset
        if start == "newest":
            if search:
                # The newest matches among the last records (at most the browser's widest read).
                from_offset = max(lso, hw - 10_000)
                found = cluster.browse(topic, partition, offset=from_offset, limit=10_000, search=search)
                records = found[-limit:]
            else:
                from_offset = max(lso, hw - limit)
                records = cluster.browse(topic, partition, offset=from_offset, limit=limit)
            first = records[0]["offset"] if records else from_offset
            return Page(
                topic=topic,
                partition=partition,
                leader=leader,
                log_start_offset=lso,
                high_watermark=hw,
                log_end_offset=leo,
                records=tuple(records),
                start=first,
                full=False,
            )
        if start == "time":
            records = cluster.browse(
                topic, partition, timestamp=time_ms or 0, limit=limit, search=search or None
            )
            first = records[0]["offset"] if records else hw
        else:
            first = lso if offset is None else offset
            records = cluster.browse(topic, partition, offset=first, limit=limit, search=search or None)
        return Page(
            topic=topic,
            partition=partition,
            leader=leader,
            log_start_offset=lso,
            high_watermark=hw,
            log_end_offset=leo,
            records=tuple(records),
            start=first,
            full=len(records) >= limit,
        )

    return run


def produce(
    topic: str, *, key: str | None, value: str | None, partition: int | None, acks: str, count: int
) -> Act:
    """``count`` records; ``{i}`` in the key or value becomes the record's number (1, 2, ...)."""

    def run(lab: LiveLab) -> Any:
        cluster = lab.cluster
        if not _exists(cluster, topic):
            raise UnknownTopicOrPartition(f"Topic '{topic}' does not exist.")
        if partition is not None:
            have = cluster.partition_count(topic)
            if partition >= have:
                raise UnknownTopicOrPartition(
                    f"{topic} has {have} partition(s); there is no partition {partition}"
                )
        producer = lab.producer(acks)

        def fill(text: str | None, i: int) -> str | None:
            return None if text is None else text.replace("{i}", str(i))

        futures = [
            producer.send(topic, fill(value, i), key=fill(key, i), partition=partition)
            for i in range(1, count + 1)
        ]
        if acks == "0":
            return f"{count} record(s) sent to {topic} with acks=0: no answer comes back, so no offsets."

        return acks_waiting(futures, topic=topic, acks=acks, deadline=_deadline())

    return run


# ---------------------------------------------------------------------------- groups


COORDINATOR_WAIT_S = 5.0  # how long a reset waits for the group's coordinator


def reset_offsets(
    group: str, topic: str, to: str | int | dict[str, int], partitions: Sequence[int] | None
) -> Act:
    def run(lab: LiveLab) -> Waiting:
        cluster = lab.cluster
        how = (
            f"the time {to['timestamp']} ms"
            if isinstance(to, dict)
            else (f"offset {to}" if isinstance(to, int) else f"the {to} offset")
        )

        def said(done: dict[str, int]) -> str:
            moved = ", ".join(f"{k.replace('/', '-')} → {v}" for k, v in done.items())
            return f"Group {group}'s offsets of {topic} reset to {how}: {moved}."

        # As Kafka's tool does, wait for the coordinator (the lab's first group creates
        # __consumer_offsets, and a new coordinator loads its groups first); the commit is a request
        # in flight, answered between the driver's ticks, so it holds up no other call on the lab.
        return retrying(
            lambda: cluster.begin_reset_group_offsets(
                group,
                topic,
                to,  # type: ignore[arg-type]  # the engine takes {"timestamp": ms} too
                partitions=None if partitions is None else list(partitions),
            ),
            then=said,
            wait_s=COORDINATOR_WAIT_S,
            retry=group_retriable,
        )

    return run
