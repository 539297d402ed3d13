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
from ninja import Query, Router, Status
from ninja.errors import ValidationError

from lab.api import driver, openapi
from lab.api.errors import ERRORS
from lab.api.schemas import (
    ConsumeIn,
    ConsumeOut,
    ProduceFailedOut,
    ProduceIn,
    ProduceOut,
    ProducePendingOut,
    RecordsOut,
    path,
)
from lab.engine import limits
from lab.runtime.commands import produced

router = Router(tags=["records"])

TopicName = path(limits.TOPIC_NAME)


# ----------------------------------------------------------------------------- produce


def _answer(response: HttpResponse, status: int, body: dict[str, Any]) -> Any:
    if status == 202:
        response["Location"] = body["poll"]
        response["Retry-After"] = str(produced.POLL_AFTER_S)
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
    request_id = produced.new_id()
    poll = reverse("api:produce-request", kwargs={"slug": slug, "request_id": request_id})

    args = {
        "topic": topic,
        "records": [{"key": r.key, "value": r.value, "partition": r.partition} for r in body.records],
        "acks": body.acks,
        "retries": body.retries,
        "request_id": request_id,
        "poll": poll,
    }
    status, out = await driver.act(request, slug, "records-produce", args)
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

    args = {"request_id": request_id, "poll": poll}
    status, out = await driver.act(
        request, slug, "records-produce-outcome", args
    )  # the lab owner's, as the produce was
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
    offset: int | None = Query(
        None,
        ge=limits.OFFSET.low,
        le=limits.OFFSET.high,
        description="start here (default: the log start offset)",
    ),
    timestamp: int | None = Query(
        None,
        ge=limits.TIMESTAMP.low,
        le=limits.TIMESTAMP.high,
        description="or start at the first record at or after this time",
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

    args = {
        "topic": topic,
        "partition": partition,
        "offset": offset,
        "timestamp": timestamp,
        "limit": limit,
        "search": search,
    }
    return await driver.read(request, slug, "records-read", args)


# ----------------------------------------------------------------------------- consume as a group


@router.post(
    "/labs/{slug}/topics/{topic}/consume", response={200: ConsumeOut, **ERRORS}, summary="Consume as a group"
)
async def consume(request: HttpRequest, slug: str, body: ConsumeIn, topic: str = TopicName) -> Any:
    """Read from the group's committed offsets and commit past what is returned, so the next call goes on
    where this one stopped. The group must have no live members (NON_EMPTY_GROUP otherwise)."""
    args = {
        "topic": topic,
        "group": body.group,
        "partition": body.partition,
        "limit": body.limit,
        "auto_offset_reset": body.auto_offset_reset,
    }
    return await driver.act(request, slug, "records-consume", args)
