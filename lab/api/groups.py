"""Consumer groups: list, describe (members, assignment, committed offsets, lag), reset offsets."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja import Path, Router

from lab.api import driver
from lab.api.errors import ERRORS
from lab.api.schemas import GroupOut, ResetIn, ResetOut
from lab.engine import limits
from lab.engine.errors import GroupIdNotFound
from lab.runtime import actions
from lab.runtime.live import LiveLab

router = Router(tags=["groups"])

GroupName = Path(..., min_length=limits.GROUP_ID.min_length, max_length=limits.GROUP_ID.max_length)


def _groups(lab: LiveLab) -> list[dict[str, Any]]:
    return [{"group": name, **g} for name, g in sorted(lab.cluster.groups().items())]


def _group(lab: LiveLab, name: str) -> dict[str, Any]:
    found = lab.cluster.groups().get(name)
    if found is None:
        raise GroupIdNotFound(f"there is no group {name!r} (it has no members and no committed offsets)")
    return {"group": name, **found}


@router.get("/labs/{slug}/groups", response={200: list[GroupOut], **ERRORS}, summary="Consumer groups")
async def list_groups(request: HttpRequest, slug: str) -> Any:
    return await driver.read(request, slug, _groups)


@router.get("/labs/{slug}/groups/{group}", response={200: GroupOut, **ERRORS}, summary="A consumer group")
async def get_group(request: HttpRequest, slug: str, group: str = GroupName) -> Any:
    """As its coordinator describes it: state, generation, assignor, members and what each owns,
    committed offsets and lag by "topic/partition"."""
    return await driver.read(request, slug, lambda lab: _group(lab, group))


def reset(lab: LiveLab, group: str, body: ResetIn) -> actions.Waiting:
    """The reset, on the driver thread: the commit is a request in flight, answered between the driver's
    ticks (retried while the group has no coordinator yet), so it holds up no other call on the lab."""
    to: str | int | dict[str, int] = (
        body.to
    )  # the schema pairs to=offset with offset, to=timestamp with timestamp
    if body.offset is not None:
        to = body.offset
    elif body.timestamp is not None:
        to = {"timestamp": body.timestamp}
    partitions = None if body.partitions is None else sorted(set(body.partitions))
    return actions.retrying(
        lambda: lab.cluster.begin_reset_group_offsets(group, body.topic, to, partitions=partitions),  # type: ignore[arg-type]
        then=lambda offsets: {"group": group, "offsets": offsets},
        retry=actions.group_retriable,
    )


@router.post(
    "/labs/{slug}/groups/{group}/reset-offsets", response={200: ResetOut, **ERRORS}, summary="Reset offsets"
)
async def reset_offsets(request: HttpRequest, slug: str, body: ResetIn, group: str = GroupName) -> Any:
    """``kafka-consumer-groups.sh --reset-offsets``: to the earliest or latest offset, an offset, or the first
    offset at or after a time. Only for an inactive group: NON_EMPTY_GROUP while it has members."""
    return await driver.act(request, slug, lambda lab: reset(lab, group, body))
