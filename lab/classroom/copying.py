"""Handing every student a copy of a demo: its current state, as a lab of their own.

What is copied: the brokers and their config, every topic with its partitions, replication factor
and config, every committed record (below the high watermark) at the same partition and in the same
order, with its key, value and timestamp, so the same offsets when retention or compaction removed
nothing (a log that starts above 0 starts at 0 in the copy), the consumer groups' committed offsets,
and the simulated clients that run. What is not: broker faults (every broker of the copy runs and
is healthy), which replica leads and the leader epochs, records above the high watermark and
anything in flight (unanswered requests, fetches), record headers, the journal and the charts.

The demo's state is read on the demo's driver thread (``read_state``, through ``submit``); each copy
is then filled on its own lab's driver thread (``fill``), writing by producing in order.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lab.classroom.grading import client_specs
from lab.engine.errors import IllegalState, KafkaError, KafkaTimeout
from lab.runtime.actions import Waiting, group_retriable, retrying
from lab.runtime.spec import ClientSpec, TopicSpec

if TYPE_CHECKING:
    from lab.runtime.live import LiveLab

MAX_RECORDS = 100_000  # a demo is a lesson, not a data set: beyond this, copying would stall the demo
PAGE = 10_000  # records per browse
FILL_WAIT_S = 110.0  # wall time: the most a copy's filling waits for acknowledgements and commits

COPIED = (
    "the brokers and their config; every topic with its partitions, replication factor and config; "
    "every committed record at the same partition, in the same order, with its key, value and timestamp "
    "(so at the same offsets, unless retention or compaction had removed records); the consumer groups' "
    "committed offsets; the simulated clients that run"
)
NOT_COPIED = (
    "broker faults (killed, paused, slow or cut-off brokers start healthy), which replica leads and the "
    "leader epochs, records above the high watermark and anything in flight (unanswered requests, "
    "fetches), record headers, the timeline and the charts"
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Record:
    key: str | None
    value: str | None
    timestamp: int
    offset: int


@dataclass(frozen=True, slots=True, kw_only=True)
class DemoState:
    brokers: int
    config: Mapping[str, str]
    seed: int
    topics: tuple[TopicSpec, ...]
    records: Mapping[tuple[str, int], tuple[Record, ...]]  # (topic, partition) -> records in offset order
    committed: Mapping[str, Mapping[tuple[str, int], int]]  # group -> (topic, partition) -> offset
    clients: tuple[ClientSpec, ...]
    skipped: tuple[str, ...] = field(default_factory=tuple)  # what could not be read, in words

    @property
    def record_count(self) -> int:
        return sum(len(r) for r in self.records.values())


def read_state(lab: LiveLab) -> DemoState:
    """The demo's state (driver thread: ``live.submit(read_state)``)."""
    cluster = lab.cluster
    snapshot = cluster.snapshot()
    topics: list[TopicSpec] = []
    records: dict[tuple[str, int], tuple[Record, ...]] = {}
    skipped: list[str] = []
    total = 0
    for name in sorted(snapshot.get("topics", {})):
        if name.startswith("__"):
            continue
        topic = snapshot["topics"][name]
        parts = topic.get("partitions", [])
        topics.append(
            TopicSpec(
                name=name,
                partitions=max(1, len(parts)),
                replication_factor=max(1, len(parts[0]["replicas"])) if parts else 1,
                config=cluster.topic_config(name),
            )
        )
        for part in parts:
            number = int(part["partition"])
            got: list[Record] = []
            offset: int | None = None
            try:
                while True:
                    page = cluster.browse(name, number, offset=offset, limit=PAGE)
                    got.extend(
                        Record(
                            key=r["key"],
                            value=r["value"],
                            timestamp=int(r["timestamp"]),
                            offset=int(r["offset"]),
                        )
                        for r in page
                    )
                    total += len(page)
                    if total > MAX_RECORDS:
                        raise IllegalState(
                            f"the demo holds more than {MAX_RECORDS} committed records; "
                            "a copy that large would stall the demo"
                        )
                    if len(page) < PAGE:
                        break
                    offset = int(page[-1]["offset"]) + 1
            except KafkaError as error:
                if isinstance(error, IllegalState):
                    raise
                # An offline partition has no leader to read from: say so and copy the rest.
                skipped.append(f"{name}-{number}: {error.name} ({error.message})")
            records[(name, number)] = tuple(got)
    committed: dict[str, dict[tuple[str, int], int]] = {}
    for group_id, group in snapshot.get("groups", {}).items():
        for key, at in (group.get("committed") or {}).items():
            topic_name, _, part = str(key).rpartition("/")
            if topic_name.startswith("__") or at is None:
                continue
            committed.setdefault(group_id, {})[(topic_name, int(part))] = int(at)
    return DemoState(
        brokers=len(snapshot.get("brokers", [])) or lab.spec.brokers,
        config=dict(lab.spec.config),
        seed=lab.spec.seed,
        topics=tuple(topics),
        records=records,
        committed=committed,
        clients=tuple(client_specs(cluster, lab.spec.clients)),
        skipped=tuple(skipped),
    )


def fill(lab: LiveLab, state: DemoState) -> Waiting:
    """Write the demo's records and offsets into a new lab, then start its clients (driver thread).

    The lab was made with the demo's topics in its spec, so they exist; records go in with one
    acks=all producer, partition by partition in offset order; once every one is acknowledged the
    groups' offsets are committed, then the clients start. Each stage is a request in flight the
    driver waits for between its ticks, so filling a copy holds up nothing else on its lab.
    """
    cluster = lab.cluster
    missing = [t.name for t in state.topics if t.name not in cluster.topics()]
    for spec in state.topics:
        if spec.name in missing:
            cluster.create_topic(
                spec.name,
                partitions=spec.partitions,
                replication_factor=min(spec.replication_factor, len(cluster.brokers)),
                config=dict(spec.config),
                wait=False,
            )
    producer = cluster.producer("all", client_id="demo-copy", max_in_flight_requests_per_connection=1)
    sent = []
    for (topic, partition), recs in sorted(state.records.items()):
        for rec in recs:
            sent.append(
                producer.send(topic, rec.value, key=rec.key, partition=partition, timestamp=rec.timestamp)
            )
    commits: list[Waiting] = []
    written: list[bool] = []  # [True] once every record is acknowledged and the commits are sent
    said = f"{len(sent)} record(s) copied into {len(state.topics)} topic(s)."

    def ready() -> bool:
        if not written:
            if not all(f.done() for f in sent):
                return False
            cluster.remove_client(producer.client_id)
            failed = [f for f in sent if f.failed_with() is not None]
            if failed:
                raise IllegalState(f"{len(failed)} of {len(sent)} record(s) could not be written to the copy")
            commits.extend(commit_offsets(lab, group, offsets) for group, offsets in state.committed.items())
            written.append(True)
        return all(c.ready() for c in commits)

    def result() -> str:
        for commit in commits:
            commit.result()
        for client in state.clients:
            lab.add_client(client)
        return said

    def timed_out() -> str:
        unanswered = sum(not f.done() for f in sent)
        raise KafkaTimeout(
            f"the copy is not filled after {FILL_WAIT_S:g} s: {unanswered} of {len(sent)} record(s) unacknowledged"
            if unanswered
            else f"the copy's group offsets were not committed within {FILL_WAIT_S:g} s"
        )

    return Waiting(ready=ready, result=result, on_timeout=timed_out, deadline=time.monotonic() + FILL_WAIT_S)


def commit_offsets(lab: LiveLab, group: str, offsets: Mapping[tuple[str, int], int]) -> Waiting:
    """Commit a group's offsets, retrying as a client does while the group's coordinator is not
    there yet (the first group of a cluster makes ``__consumer_offsets``), between the driver's ticks."""
    cluster = lab.cluster
    return retrying(
        lambda: cluster.commit_group_offsets(group, offsets, client_id=f"copy-{group}"),
        retry=group_retriable,
        wait_s=FILL_WAIT_S,
    )


def commit_offset(lab: LiveLab, group: str, topic: str, partition: int, offset: int) -> Waiting:
    """One partition's committed offset for a group (``commit_offsets``)."""
    return commit_offsets(lab, group, {(topic, partition): offset})


def summary(state: DemoState) -> dict[str, Any]:
    return {
        "topics": [t.name for t in state.topics],
        "records": state.record_count,
        "groups": sorted(state.committed),
        "clients": [c.name for c in state.clients],
        "skipped": list(state.skipped),
    }
