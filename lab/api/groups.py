"""Consumer groups: list, describe (members, assignment, committed offsets, lag), reset offsets."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja import Path, Router

from lab.api import driver
from lab.api.errors import ERRORS
from lab.api.schemas import MAX_NAME, GroupOut, ResetIn, ResetOut
from lab.engine.errors import GroupIdNotFound, IllegalArgument
from lab.runtime import actions
from lab.runtime.live import LiveLab

router = Router(tags=["groups"])

GroupName = Path(..., min_length=1, max_length=MAX_NAME)


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


@router.post(
    "/labs/{slug}/groups/{group}/reset-offsets", response={200: ResetOut, **ERRORS}, summary="Reset offsets"
)
async def reset_offsets(request: HttpRequest, slug: str, body: ResetIn, group: str = GroupName) -> Any:
    """``kafka-consumer-groups.sh --reset-offsets``: to the earliest or latest offset, an offset, or the first
    offset at or after a time. Only for an inactive group: NON_EMPTY_GROUP while it has members."""
    to: str | int | dict[str, int]
    if body.to == "offset":
        if body.offset is None:
            raise IllegalArgument("to=offset needs offset")
        to = body.offset
    elif body.to == "timestamp":
        if body.timestamp is None:
            raise IllegalArgument("to=timestamp needs timestamp")
        to = {"timestamp": body.timestamp}
    else:
        to = body.to

    def run(lab: LiveLab) -> Any:
        partitions = None if body.partitions is None else sorted(set(body.partitions))
        return actions.retrying(
            lambda: lab.cluster.reset_group_offsets(group, body.topic, to, partitions=partitions, attempts=1),  # type: ignore[arg-type]
            then=lambda offsets: {"group": group, "offsets": offsets},
        )

    return await driver.act(request, slug, run)
