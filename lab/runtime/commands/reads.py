"""Reads: the snapshot, topics and their configs, the clock, the journal of events, groups, records.

Each answers JSON values (dicts, lists, text and numbers) built from what the lab holds in memory:
no read waits for ZooKeeper while the controller has loaded the topics.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from lab.engine import limits
from lab.engine.config import TOPIC_KEYS
from lab.engine.errors import GroupIdNotFound, LeaderNotAvailable, UnknownTopicOrPartition
from lab.engine.ids import TopicPartition
from lab.runtime.actions import (
    Act,
    IllegalArgument,
    _choice,
    _int,
    _optional_int,
    _text,
    register_read,
)

if TYPE_CHECKING:
    from lab.runtime.live import LiveLab

INTERNAL_PREFIX = "__"
BROWSE_WIDEST = 10_000
SEQ, OFFSET, TIMESTAMP = limits.SINCE, limits.OFFSET, limits.TIMESTAMP


def is_internal(topic: str) -> bool:
    return topic.startswith(INTERNAL_PREFIX)


def _topic(p: Mapping[str, Any]) -> str:
    return _text(p, "topic", limits.TOPIC_NAME)


# ---------------------------------------------------------------------------- shapes the API answers


def summaries(lab: LiveLab) -> list[dict[str, Any]]:
    out = []
    for name, topic in sorted(lab.cluster.snapshot()["topics"].items()):
        parts = topic["partitions"]
        out.append(
            {
                "name": name,
                "partitions": len(parts),
                "replication_factor": max((len(p["replicas"]) for p in parts), default=0),
                "under_replicated": sum(1 for p in parts if p["under_replicated"]),
                "offline": sum(1 for p in parts if p["offline"]),
                "internal": is_internal(name),
                "reassigning": bool(topic.get("reassigning")),
            }
        )
    return out


def configs(lab: LiveLab, name: str, *, overrides: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """Every config of topic ``name``: its ``overrides`` (default: as the controller reads them)."""
    cluster = lab.cluster
    if overrides is None:
        overrides = cluster.topic_config(name)
    return [
        {
            "name": key.name,
            "value": overrides.get(key.name, cluster.config.topic_default(key.name)),
            "source": "topic" if key.name in overrides else "default",
            "lab_default": cluster.config.topic_default(key.name),
            "kafka_default": key.kafka_default,
            "doc": key.doc,
        }
        for key in TOPIC_KEYS.values()
    ]


def describe(
    lab: LiveLab, name: str, *, count: int | None = None, overrides: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """The topic's partitions and configs (``count`` and ``overrides`` when the caller knows them: a topic
    just written, which the controller has not read yet)."""
    cluster = lab.cluster
    if count is None:
        count = partition_count(lab, name)
    moving = cluster.snapshot()["topics"].get(name, {}).get("reassigning", {})
    return {
        "name": name,
        "partitions": [cluster.partition_state(name, p) for p in range(count)],
        "reassigning": moving,
        "configs": configs(lab, name, overrides=overrides),
    }


def clock(lab: LiveLab) -> dict[str, Any]:
    return {"time_ms": lab.cluster.now_ms, "rate": lab.clock.rate, "paused": lab.clock.paused}


def partition_count(lab: LiveLab, topic: str) -> int:
    """How many partitions the controller knows ``topic`` to have (UNKNOWN_TOPIC_OR_PARTITION: none), as
    Kafka's admin reads come from the brokers' metadata: no ZooKeeper round trip."""
    ctx = lab.cluster.ctx.controller_context
    count = 0 if ctx is None else sum(1 for tp in ctx.assignments if tp.topic == topic)
    if not count:
        raise UnknownTopicOrPartition(f"Topic '{topic}' does not exist.")
    return count


def exists(lab: LiveLab, topic: str) -> bool:
    """Whether the controller knows ``topic`` (its partitions have replicas)."""
    return bool(lab.cluster.partition_state(topic, 0)["replicas"])


# ---------------------------------------------------------------------------- the commands


def _snapshot(p: Mapping[str, Any]) -> Act:
    return lambda lab: lab.cluster.snapshot()


def _topics(p: Mapping[str, Any]) -> Act:
    return summaries


def _describe(p: Mapping[str, Any]) -> Act:
    topic = _topic(p)
    return lambda lab: describe(lab, topic)


def _configs(p: Mapping[str, Any]) -> Act:
    topic = _topic(p)
    return lambda lab: configs(lab, topic)


def _topic_state(p: Mapping[str, Any]) -> Act:
    """The snapshot, and the topic's config overrides as ZooKeeper holds them now (None: no such topic).

    The snapshot's configs are the controller's copy, which follows a change a moment later."""
    topic = _topic(p)

    def run(lab: LiveLab) -> dict[str, Any]:
        snap = lab.cluster.snapshot()
        try:
            overrides: dict[str, str] | None = lab.cluster.topic_config(topic)
        except UnknownTopicOrPartition:
            overrides = None
        return {"snapshot": snap, "overrides": overrides}

    return run


def _clock(p: Mapping[str, Any]) -> Act:
    return clock


def _events(p: Mapping[str, Any]) -> Act:
    since = _int(p, "since", SEQ, default=0)
    limit = _int(p, "limit", limits.EVENTS, default=100)

    def run(lab: LiveLab) -> dict[str, Any]:
        after = lab.cluster.events(since)
        page = after[:limit]
        return {
            "events": [e.to_dict() for e in page],
            "next": page[-1].seq if page else since,
            "more": len(after) > limit,
        }

    return run


def _groups(p: Mapping[str, Any]) -> Act:
    return lambda lab: [{"group": name, **g} for name, g in sorted(lab.cluster.groups().items())]


def _group(p: Mapping[str, Any]) -> Act:
    name = _text(p, "group", limits.GROUP_ID)

    def run(lab: LiveLab) -> dict[str, Any]:
        found = lab.cluster.groups().get(name)
        if found is None:
            raise GroupIdNotFound(f"there is no group {name!r} (it has no members and no committed offsets)")
        return {"group": name, **found}

    return run


def _read(p: Mapping[str, Any]) -> Act:
    """Records of one partition as a consumer sees them (committed ones, read at the leader)."""
    topic = _topic(p)
    partition = _int(p, "partition", limits.PARTITION)
    offset = _optional_int(p, "offset", OFFSET)
    timestamp = _optional_int(p, "timestamp", TIMESTAMP)
    if offset is not None and timestamp is not None:
        raise IllegalArgument("start at an offset or at a timestamp, not both")
    limit = _int(p, "limit", limits.RECORDS, default=100)
    search = _text(p, "search", limits.SEARCH, required=False, strip=False) or None

    def run(lab: LiveLab) -> dict[str, Any]:
        found = lab.cluster.browse(
            topic, partition, offset=offset, timestamp=timestamp, limit=limit, search=search
        )
        return {"records": found}

    return run


def _messages(p: Mapping[str, Any]) -> Act:
    """One page of the message browser: records, and where they sit in the partition's log (``start``:
    the offset the page starts from; ``full``: as many records as asked, there may be more after)."""
    topic = _topic(p)
    partition = _int(p, "partition", limits.PARTITION)
    start = _choice(p, "start", ("offset", "time", "newest"), default="offset")
    offset = _optional_int(p, "offset", OFFSET)
    time_ms = _optional_int(p, "time_ms", TIMESTAMP)
    search = _text(p, "search", limits.SEARCH, required=False, strip=False)
    limit = _int(p, "limit", limits.RECORDS, default=50)

    def run(lab: LiveLab) -> dict[str, Any]:
        cluster = lab.cluster
        count = partition_count(lab, topic)
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
        full = False
        if start == "newest":
            if search:
                from_offset = max(lso, hw - BROWSE_WIDEST)
                found = cluster.browse(
                    topic, partition, offset=from_offset, limit=BROWSE_WIDEST, search=search
                )
                records = found[-limit:]
            else:
                from_offset = max(lso, hw - limit)
                records = cluster.browse(topic, partition, offset=from_offset, limit=limit)
            first = records[0]["offset"] if records else from_offset
        elif start == "time":
            records = cluster.browse(
                topic, partition, timestamp=time_ms or 0, limit=limit, search=search or None
            )
            first = records[0]["offset"] if records else hw
            full = len(records) >= limit
        else:
            first = lso if offset is None else offset
            records = cluster.browse(topic, partition, offset=first, limit=limit, search=search or None)
            full = len(records) >= limit
        return {
            "topic": topic,
            "partition": partition,
            "leader": leader,
            "log_start_offset": lso,
            "high_watermark": hw,
            "log_end_offset": leo,
            "records": records,
            "start": first,
            "full": full,
        }

    return run


register_read("snapshot", _snapshot)
register_read("topics", _topics)
register_read("topic-describe", _describe)
register_read("topic-configs", _configs)
register_read("topic-state", _topic_state)
register_read("clock", _clock)
register_read("events", _events)
register_read("groups", _groups)
register_read("group", _group)
register_read("records-read", _read)
register_read("messages", _messages)
