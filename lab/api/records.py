"""Records: produce, read (a partition below its high watermark), and consume as a group.

Reading as a group is a standalone consumer with a ``group.id``, as Kafka allows one: it starts at the
group's committed offsets (``auto_offset_reset`` where there are none), reads below the high watermark
at each partition's leader, and commits the offsets after what it returned, with generation -1. Kafka
accepts such a commit only while the group has no members, so a group that has live members (a
simulated consumer, say) is refused with NON_EMPTY_GROUP, as Kafka's coordinator refuses it. Nothing
is held between calls: each call reads, commits, and leaves; the commit holds up no other call on the
lab (the driver runs the lab until the coordinator answers).
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from ninja import Path, Query, Router, Status
from ninja.errors import ValidationError

from lab.api import driver, openapi, produce
from lab.api.errors import ERRORS
from lab.api.schemas import (
    MAX_NAME,
    TOPIC_PATTERN,
    ConsumeIn,
    ConsumeOut,
    ProduceFailedOut,
    ProduceIn,
    ProduceOut,
    ProducePendingOut,
    RecordsOut,
)
from lab.engine import errors, limits
from lab.engine.errors import NonEmptyGroup, UnknownTopicOrPartition
from lab.engine.ids import TopicPartition
from lab.runtime import actions
from lab.runtime.live import LiveLab

router = Router(tags=["records"])

TopicName = Path(..., min_length=1, max_length=MAX_NAME, pattern=TOPIC_PATTERN)


# ----------------------------------------------------------------------------- produce


def _close_when_answered(lab: LiveLab, request: produce.ProduceRequest) -> None:
    """A producer made for one request (its own ``retries``) closes once every record has its answer."""
    cluster = lab.cluster

    def close() -> None:
        request.producer.close()
        cluster.clients.pop(request.producer.client_id, None)

    if request.answered():
        close()
        return
    name = f"api-produce-{request.id}"

    def hook(lab: LiveLab) -> None:
        if lab.cluster is not cluster:  # reset: that cluster, and the producer with it, is gone
            lab.remove_tick_hook(name)
        elif request.answered():
            close()
            lab.remove_tick_hook(name)

    lab.add_tick_hook(name, hook)


def _answer(response: HttpResponse, status: int, body: dict[str, Any]) -> Any:
    if status == 202:
        response["Location"] = body["poll"]
        response["Retry-After"] = str(produce.POLL_AFTER_S)
    return Status(status, body)


PRODUCE_RESPONSES: dict[int, Any] = {
    200: ProduceOut,
    202: ProducePendingOut,
    **ERRORS,
    409: ProduceFailedOut,
}
# The 202's headers, in the document.
POLL_HEADERS = {
    "responses": {
        202: {
            "headers": {
                "Location": {"description": "where to ask for the outcome", "schema": {"type": "string"}},
                "Retry-After": {
                    "description": "seconds to wait before asking",
                    "schema": {"type": "integer"},
                },
            }
        }
    }
}


@router.post(
    "/labs/{slug}/topics/{topic}/records",
    response=PRODUCE_RESPONSES,
    summary="Produce records",
    openapi_extra=POLL_HEADERS,
)
async def produce_records(
    request: HttpRequest, response: HttpResponse, slug: str, body: ProduceIn, topic: str = TopicName
) -> Any:
    """Send records with one producer (``acks`` 0, 1 or all; ``retries``, Kafka's default: retry until
    delivery.timeout.ms). **200** when every record is written (each with its partition and offset),
    **409** when some failed (each failed record with Kafka's error, NOT_ENOUGH_REPLICAS below
    min.insync.replicas with acks=all, say), **202** when some still have no answer after a few
    seconds (no leader, the producer retrying, a paused clock): poll ``Location`` for the outcome."""
    request_id = produce.new_id()
    poll = reverse("api:produce-request", kwargs={"slug": slug, "request_id": request_id})

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
        else:
            producer = cluster.producer(acks=body.acks, retries=body.retries)
        since = cluster.journal.last_seq
        futures = [producer.send(topic, r.value, key=r.key, partition=r.partition) for r in body.records]
        sent = produce.ProduceRequest(
            id=request_id,
            slug=slug,
            topic=topic,
            acks=body.acks,
            cluster=cluster,
            producer=producer,
            futures=futures,
            since_seq=since,
        )
        produce.requests.add(sent)

        def answer() -> tuple[int, dict[str, Any]]:
            if body.retries is not None:
                _close_when_answered(lab, sent)
            return produce.outcome(lab, sent, poll)

        return driver.settle(sent.answered, answer)

    status, out = await driver.act(request, slug, run)
    return _answer(response, status, out)


@router.get(
    "/labs/{slug}/produce-requests/{request_id}",
    response=PRODUCE_RESPONSES,
    summary="A produce's outcome",
    url_name="produce-request",
    openapi_extra=POLL_HEADERS,
)
async def produce_request(request: HttpRequest, response: HttpResponse, slug: str, request_id: str) -> Any:
    """What became of a produce's records now, answered as the produce is: 200 every record written, 409 some
    failed (Kafka's error on each), 202 some still without an answer (ask again after ``Retry-After``)."""
    poll = reverse("api:produce-request", kwargs={"slug": slug, "request_id": request_id})

    def run(lab: LiveLab) -> tuple[int, dict[str, Any]]:
        return produce.outcome(lab, produce.requests.get(slug, request_id), poll)

    status, out = await driver.act(request, slug, run)  # the lab owner's, as the produce was
    return _answer(response, status, out)


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


def consume_as_group(lab: LiveLab, topic: str, body: ConsumeIn) -> Any:
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
    answer = {
        "group": body.group,
        "records": records,
        "committed": {TopicPartition(t, p).key: o for (t, p), o in sorted(positions.items())},
    }
    if not positions:
        return answer
    # The commit is a request in flight: the driver runs the lab (and everyone else's calls) until
    # the coordinator answers, retrying as a client does while there is none yet.
    return actions.retrying(
        lambda: cluster.commit_group_offsets(body.group, positions),
        then=lambda _: answer,
        retry=actions.group_retriable,
    )


@router.post(
    "/labs/{slug}/topics/{topic}/consume", response={200: ConsumeOut, **ERRORS}, summary="Consume as a group"
)
async def consume(request: HttpRequest, slug: str, body: ConsumeIn, topic: str = TopicName) -> Any:
    """Read from the group's committed offsets and commit past what is returned, so the next call goes on
    where this one stopped. The group must have no live members (NON_EMPTY_GROUP otherwise)."""
    return await driver.act(request, slug, lambda lab: consume_as_group(lab, topic, body))
