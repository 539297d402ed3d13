"""Records: produce, read (a partition below its high watermark), and consume as a group.

Reading as a group is a standalone consumer with a ``group.id``, as Kafka allows one: it starts at the
group's committed offsets (``auto_offset_reset`` where there are none), reads below the high watermark
at each partition's leader, and commits the offsets after what it returned, with generation -1. Kafka
accepts such a commit only while the group has no members, so a group that has live members (a
simulated consumer, say) is refused with NON_EMPTY_GROUP, as Kafka's coordinator refuses it. Nothing
is held between calls: each call reads, commits, and leaves.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja import Path, Query, Router
from ninja.errors import ValidationError

from lab.api import driver, openapi
from lab.api.errors import ERRORS
from lab.api.schemas import (
    MAX_NAME,
    TOPIC_PATTERN,
    ConsumeIn,
    ConsumeOut,
    ProduceIn,
    ProduceOut,
    RecordsOut,
)
from lab.engine import errors, limits
from lab.engine.errors import KafkaError, NonEmptyGroup, UnknownTopicOrPartition
from lab.engine.ids import TopicPartition
from lab.runtime.live import LiveLab

router = Router(tags=["records"])

TopicName = Path(..., min_length=1, max_length=MAX_NAME, pattern=TOPIC_PATTERN)


# ----------------------------------------------------------------------------- produce


def _outcome(future: Any, acks: str) -> dict[str, Any]:
    if not future.done():
        return {"status": "pending"}
    error = future.failed_with()
    if error is not None:
        name = error.name if isinstance(error, KafkaError) else "UNKNOWN_SERVER_ERROR"
        message = error.message if isinstance(error, KafkaError) else str(error)
        return {"status": "failed", "error": name, "message": message}
    md = future.result()
    if acks == "0":
        # No answer comes back with acks=0: the producer does not learn the offset.
        return {"status": "sent", "partition": md.partition}
    return {"status": "acknowledged", "partition": md.partition, "offset": md.offset}


@router.post(
    "/labs/{slug}/topics/{topic}/records", response={200: ProduceOut, **ERRORS}, summary="Produce records"
)
async def produce(request: HttpRequest, slug: str, body: ProduceIn, topic: str = TopicName) -> Any:
    """Send records with one producer (``acks`` 0, 1 or all); each record's partition and offset, or its
    Kafka error (NOT_ENOUGH_REPLICAS below min.insync.replicas with acks=all, say). A record with no answer
    after a few seconds (a paused clock, a leader gone) is ``pending``."""

    def run(lab: LiveLab) -> Any:
        cluster = lab.cluster
        count = cluster.partition_count(topic)
        for record in body.records:
            if record.partition is not None and record.partition >= count:
                raise UnknownTopicOrPartition(
                    f"{topic} has {count} partition(s); there is no partition {record.partition}"
                )
        if body.retries is None:
            producer = lab.producer(body.acks)  # the dashboard's producer for these acks, kept by the lab
            own = None
        else:
            producer = own = cluster.producer(acks=body.acks, retries=body.retries)
        futures = [producer.send(topic, r.value, key=r.key, partition=r.partition) for r in body.records]

        def answer() -> dict[str, Any]:
            out = {"acks": body.acks, "records": [_outcome(f, body.acks) for f in futures]}
            if own is not None:
                # A producer made for this request goes with it: what is still pending is abandoned.
                own.close()
                cluster.clients.pop(own.client_id, None)
            return out

        return driver.settle(lambda: all(f.done() for f in futures), answer)

    return await driver.act(request, slug, run)


# ----------------------------------------------------------------------------- read


openapi.exclusive_query(
    method="get",
    path="/api/labs/{slug}/topics/{topic}/records",
    name="start",
    fields=("offset", "timestamp"),
    description="where to start: ?offset=N, or ?timestamp=T (the first record at or after that time), "
    "not both; neither starts at the log start offset",
)


@router.get(
    "/labs/{slug}/topics/{topic}/records", response={200: RecordsOut, **ERRORS}, summary="Read a partition"
)
async def read(
    request: HttpRequest,
    slug: str,
    topic: str = TopicName,
    partition: int = Query(..., ge=limits.PARTITION.low, le=limits.PARTITION.high),
    offset: int | None = Query(None, ge=0, description="start here (default: the log start offset)"),
    timestamp: int | None = Query(
        None, ge=0, description="or start at the first record at or after this time"
    ),
    limit: int = Query(100, ge=limits.RECORDS.low, le=limits.RECORDS.high),
    search: str | None = Query(
        None, max_length=limits.SEARCH.max_length, description="keep records whose key or value contains it"
    ),
) -> Any:
    """Records of one partition as a consumer sees them: committed ones only (below the high watermark),
    read at the leader. Commits nothing; anyone who may see the lab may read."""
    if offset is not None and timestamp is not None:
        # The OpenAPI document says so too (offset and timestamp are one parameter object, at most one set).
        raise ValidationError(
            [{"loc": ("query", "timestamp"), "msg": "start at an offset or at a timestamp, not both"}]
        )

    def run(lab: LiveLab) -> Any:
        records = lab.cluster.browse(
            topic, partition, offset=offset, timestamp=timestamp, limit=limit, search=search or None
        )
        return {"records": records}

    return await driver.read(request, slug, run)


# ----------------------------------------------------------------------------- consume as a group


def _bounds(lab: LiveLab, topic: str, partition: int) -> tuple[int, int, int]:
    cluster = lab.cluster
    leader = cluster.leader_of(topic, partition)
    if leader is None:
        raise errors.LeaderNotAvailable(f"{topic}-{partition} has no leader right now")
    replica = cluster.brokers[leader].partitions[TopicPartition(topic, partition)]
    return replica.log_start_offset, replica.high_watermark, replica.log_end_offset


def _commit(lab: LiveLab, group: str, offsets: dict[tuple[str, int], int]) -> None:
    cluster = lab.cluster
    committer = cluster.consumer(group)
    try:
        committer.assign(list(offsets))
        committer.commit(offsets)
    finally:
        committer.crash()  # it never joined: nothing to leave
        cluster.clients.pop(committer.client_id, None)


def consume_as_group(lab: LiveLab, topic: str, body: ConsumeIn) -> dict[str, Any]:
    cluster = lab.cluster
    count = cluster.partition_count(topic)
    if body.partition is not None and body.partition >= count:
        raise UnknownTopicOrPartition(
            f"{topic} has {count} partition(s); there is no partition {body.partition}"
        )
    described = cluster.groups().get(body.group)
    if described is not None and described["members"]:
        raise NonEmptyGroup(
            f"group {body.group} has {len(described['members'])} member(s) ({described['state']}): Kafka takes "
            "offset commits from outside a group only while it is empty"
        )
    committed: dict[str, int] = dict(described["committed"]) if described else {}
    partitions = [body.partition] if body.partition is not None else list(range(count))
    records: list[dict[str, Any]] = []
    positions: dict[tuple[str, int], int] = {}
    for p in partitions:
        remaining = body.limit - len(records)
        if remaining <= 0:
            break
        start, high_watermark, end = _bounds(lab, topic, p)
        position = committed.get(TopicPartition(topic, p).key)
        if position is None or not start <= position <= end:
            # No committed offset, or one the log no longer holds: auto.offset.reset decides.
            position = start if body.auto_offset_reset == "earliest" else high_watermark
        got = cluster.browse(topic, p, offset=position, limit=remaining) if position < high_watermark else []
        records += got
        positions[(topic, p)] = got[-1]["offset"] + 1 if got else position
    if positions:
        driver.retrying(lab, lambda: _commit(lab, body.group, positions))
    return {
        "group": body.group,
        "records": records,
        "committed": {TopicPartition(t, p).key: o for (t, p), o in sorted(positions.items())},
    }


@router.post(
    "/labs/{slug}/topics/{topic}/consume", response={200: ConsumeOut, **ERRORS}, summary="Consume as a group"
)
async def consume(request: HttpRequest, slug: str, body: ConsumeIn, topic: str = TopicName) -> Any:
    """Read from the group's committed offsets and commit past what is returned, so the next call goes on
    where this one stopped. The group must have no live members (NON_EMPTY_GROUP otherwise)."""
    return await driver.act(request, slug, lambda lab: consume_as_group(lab, topic, body))
