"""Handing every student a copy of a demo: its current state, as a lab of their own.

What is copied: the brokers and their config, every topic with its partitions, replication factor
and config, every committed record (below the high watermark) at the same partition and in the same
order, with its key, value and timestamp, so the same offsets when retention or compaction removed
nothing (a log that starts above 0 starts at 0 in the copy), the consumer groups' committed offsets,
and the simulated clients that run. What is not: broker faults (every broker of the copy runs and
is healthy), which replica leads and the leader epochs, records above the high watermark and
anything in flight (unanswered requests, fetches), record headers, the journal and the charts.

The demo's state is read on the demo's driver thread (``read_state``, the command
``classroom.read-state``) and travels as JSON (``state_to_json``; ``state_from_json`` checks it where
it arrives); each copy is then filled on its own lab's driver thread (``fill``, the command
``classroom.fill``), writing by producing in order.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lab.classroom.grading import client_specs
from lab.engine import limits
from lab.engine.errors import IllegalArgument, IllegalState, KafkaError, KafkaTimeout
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
    """The demo's state (driver thread: the command ``classroom.read-state``)."""
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
                config={str(k): str(v) for k, v in (topic.get("config") or {}).items()},
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

    The lab was made with the demo's topics in its spec, so they exist (a topic it lacks is created
    first, and its records wait for its leaders); records go in with one acks=all producer,
    partition by partition in offset order; once every one is acknowledged the groups' offsets are
    committed, then the clients start. Each stage is a request in flight the driver waits for
    between its ticks, so filling a copy holds up nothing else on its lab.
    """
    cluster = lab.cluster
    known = set(cluster.snapshot().get("topics", {}))  # what the controller knows: no ZooKeeper read
    missing = [t for t in state.topics if t.name not in known]
    creating = [
        cluster.begin_create_topic(
            spec.name,
            partitions=spec.partitions,
            replication_factor=min(spec.replication_factor, len(cluster.brokers)),
            config=dict(spec.config),
        )
        for spec in missing
    ]
    total = state.record_count
    sent: list[Any] = []
    producers: list[Any] = []
    commits: list[Waiting] = []
    stage = ["creating" if missing else "sending"]  # creating -> sending -> committing

    def send() -> None:
        producer = cluster.producer("all", client_id="demo-copy", max_in_flight_requests_per_connection=1)
        producers.append(producer)
        for (topic, partition), recs in sorted(state.records.items()):
            for rec in recs:
                sent.append(
                    producer.send(topic, rec.value, key=rec.key, partition=partition, timestamp=rec.timestamp)
                )
        stage[0] = "sent"

    def ready() -> bool:
        if stage[0] == "creating":
            if not all(p.done() for p in creating):
                return False
            for pending in creating:
                pending.result()  # Kafka's error, if a topic could not be created
            if not all(cluster.partitions_usable(t.name, range(t.partitions)) for t in missing):
                return False
            stage[0] = "sending"
        if stage[0] == "sending":
            send()
        if stage[0] == "sent":
            if not all(f.done() for f in sent):
                return False
            cluster.remove_client(producers[0].client_id)
            failed = [f for f in sent if f.failed_with() is not None]
            if failed:
                raise IllegalState(f"{len(failed)} of {len(sent)} record(s) could not be written to the copy")
            commits.extend(commit_offsets(lab, group, offsets) for group, offsets in state.committed.items())
            stage[0] = "committing"
        return all(c.ready() for c in commits)

    def result() -> str:
        for commit in commits:
            commit.result()
        for client in state.clients:
            lab.add_client(client)
        return f"{total} record(s) copied into {len(state.topics)} topic(s)."

    def timed_out() -> str:
        if stage[0] == "creating":
            names = ", ".join(t.name for t in missing)
            raise KafkaTimeout(f"the copy's topics ({names}) have no leaders after {FILL_WAIT_S:g} s")
        unanswered = sum(not f.done() for f in sent)
        raise KafkaTimeout(
            f"the copy is not filled after {FILL_WAIT_S:g} s: {unanswered} of {len(sent)} record(s) unacknowledged"
            if unanswered
            else f"the copy's group offsets were not committed within {FILL_WAIT_S:g} s"
        )

    if not missing:
        send()  # at once, as the records were read: the topics are there
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


# ---------------------------------------------------------------------------- as JSON, to travel


def state_to_json(state: DemoState) -> dict[str, Any]:
    """The state as JSON: a record is ``[offset, key, value, timestamp]`` (a copy holds up to
    ``MAX_RECORDS`` of them, so no per-record keys), a committed offset ``[topic, partition, offset]``."""
    return {
        "brokers": state.brokers,
        "config": dict(state.config),
        "seed": state.seed,
        "topics": [t.to_json() for t in state.topics],
        "records": [
            {
                "topic": topic,
                "partition": partition,
                "records": [[r.offset, r.key, r.value, r.timestamp] for r in recs],
            }
            for (topic, partition), recs in sorted(state.records.items())
        ],
        "committed": {
            group: [[topic, partition, at] for (topic, partition), at in sorted(offsets.items())]
            for group, offsets in sorted(state.committed.items())
        },
        "clients": [c.to_json() for c in state.clients],
        "skipped": list(state.skipped),
    }


def state_from_json(data: Any) -> DemoState:
    """A demo's state sent as JSON (``state_to_json``), checked: IllegalArgument says what is wrong."""
    try:
        return _state_from_json(data)
    except IllegalArgument as error:
        raise IllegalArgument(f"the demo's state is not usable: {error.message}") from None
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise IllegalArgument(f"the demo's state is malformed ({type(error).__name__}: {error})") from None


def _state_from_json(data: Any) -> DemoState:
    _expect(isinstance(data, dict), "it is not an object")
    brokers = limits.BROKERS.check(_int(data["brokers"], "brokers"))
    config = _strings(data.get("config") or {}, "config")
    topics = tuple(TopicSpec.from_json(_dict(t, "a topic")) for t in _list(data["topics"], "topics"))
    partitions = {t.name: limits.PARTITIONS.check(t.partitions) for t in topics}
    for t in topics:
        limits.TOPIC_NAME.check(t.name)
    records: dict[tuple[str, int], tuple[Record, ...]] = {}
    total = 0
    for entry in _list(data.get("records") or [], "records"):
        entry = _dict(entry, "a partition's records")
        topic, partition = str(entry["topic"]), _int(entry["partition"], "partition")
        _expect(topic in partitions, f"records of {topic!r}, which is not among its topics")
        _expect(0 <= partition < partitions[topic], f"{topic}-{partition} is not a partition of {topic}")
        rows = _list(entry["records"], f"{topic}-{partition}'s records")
        total += len(rows)
        _expect(total <= MAX_RECORDS, f"it holds more than {MAX_RECORDS} records")
        records[(topic, partition)] = tuple(_record(row) for row in rows)
    committed: dict[str, dict[tuple[str, int], int]] = {}
    for group, offsets in _dict(data.get("committed") or {}, "committed").items():
        limits.GROUP_ID.check(str(group))
        for row in _list(offsets, f"group {group}'s offsets"):
            topic, partition, at = _list(row, "a committed offset")
            committed.setdefault(str(group), {})[(str(topic), _int(partition, "partition"))] = _int(
                at, "offset"
            )
    return DemoState(
        brokers=brokers,
        config=config,
        seed=_int(data.get("seed", 0), "seed"),
        topics=topics,
        records=records,
        committed=committed,
        clients=tuple(
            ClientSpec.from_json(_dict(c, "a client")) for c in _list(data.get("clients") or [], "clients")
        ),
        skipped=tuple(str(s) for s in _list(data.get("skipped") or [], "skipped")),
    )


def _record(row: Any) -> Record:
    offset, key, value, timestamp = _list(row, "a record")
    _expect(key is None or isinstance(key, str), "a record's key is not text")
    _expect(value is None or isinstance(value, str), "a record's value is not text")
    return Record(key=key, value=value, timestamp=_int(timestamp, "timestamp"), offset=_int(offset, "offset"))


def _expect(condition: bool, why: str) -> None:
    if not condition:
        raise IllegalArgument(why)


def _int(value: Any, what: str) -> int:
    _expect(isinstance(value, int) and not isinstance(value, bool), f"{what} is not a whole number")
    return int(value)


def _list(value: Any, what: str) -> list[Any]:
    _expect(isinstance(value, list), f"{what} is not a list")
    return list(value)


def _dict(value: Any, what: str) -> dict[str, Any]:
    _expect(isinstance(value, dict), f"{what} is not an object")
    return dict(value)


def _strings(value: Any, what: str) -> dict[str, str]:
    found = _dict(value, what)
    _expect(all(isinstance(v, str) for v in found.values()), f"{what} holds a value that is not text")
    return found


def summary(state: DemoState) -> dict[str, Any]:
    return {
        "topics": [t.name for t in state.topics],
        "records": state.record_count,
        "groups": sorted(state.committed),
        "clients": [c.name for c in state.clients],
        "skipped": list(state.skipped),
    }
