"""Consumer groups: list, describe (members, assignment, committed offsets, lag), reset offsets."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja import Router

from lab.api import driver
from lab.api.errors import ERRORS
from lab.api.schemas import GroupOut, ResetIn, ResetOut, path
from lab.engine import limits

router = Router(tags=["groups"])

GroupName = path(limits.GROUP_ID)  # as a body's group: a blank one is not a group id


@router.get("/labs/{slug}/groups", response={200: list[GroupOut], **ERRORS}, summary="Consumer groups")
async def list_groups(request: HttpRequest, slug: str) -> Any:
    return await driver.read(request, slug, "groups")


@router.get("/labs/{slug}/groups/{group}", response={200: GroupOut, **ERRORS}, summary="A consumer group")
async def get_group(request: HttpRequest, slug: str, group: str = GroupName) -> Any:
    """As its coordinator describes it: state, generation, assignor, members and what each owns,
    committed offsets and lag by "topic/partition"."""
    return await driver.read(request, slug, "group", {"group": group})


@router.post(
    "/labs/{slug}/groups/{group}/reset-offsets", response={200: ResetOut, **ERRORS}, summary="Reset offsets"
)
async def reset_offsets(request: HttpRequest, slug: str, body: ResetIn, group: str = GroupName) -> Any:
    """``kafka-consumer-groups.sh --reset-offsets``: to the earliest or latest offset, an offset, or the first
    offset at or after a time. Only for an inactive group: NON_EMPTY_GROUP while it has members."""
    args = {
        "group": group,
        "topic": body.topic,
        "to": body.to,
        "offset": body.offset,
        "timestamp": body.timestamp,
        "partitions": body.partitions,
    }
    return await driver.act(request, slug, "group-reset", args)
