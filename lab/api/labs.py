"""Labs: create, list, get (with the cluster's snapshot), delete, reset."""

from __future__ import annotations

import asyncio
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib.auth import get_user_model
from django.http import Http404, HttpRequest
from ninja import Router, Status

from lab import access, listening
from lab.api import driver
from lab.api.errors import ERRORS
from lab.api.schemas import LabDetailOut, LabIn, LabOut, MessageOut
from lab.labs import create_lab, delete_lab_data, live_of, on_workers
from lab.models import Lab
from lab.runtime.live import LiveLab
from lab.runtime.manager import runtime

router = Router(tags=["labs"])


def lab_out(lab: Lab, user: Any, live: LiveLab | None = None) -> dict[str, Any]:
    live = live or runtime.get(lab.slug)
    if live is None and on_workers():  # a lab on a lab worker runs while a worker holds its lease
        from lab import remote

        leased = remote.ownership().cached().owner(lab.slug) is not None
        return {**_out(lab, user, None), "state": "running" if leased else "stopped", "store": "zookeeper"}
    return _out(lab, user, live)


def _out(lab: Lab, user: Any, live: Any) -> dict[str, Any]:
    return {
        "slug": lab.slug,
        "name": lab.name,
        "owner": lab.owner.get_username(),
        "brokers": lab.brokers,
        "url": lab.get_absolute_url(),
        "state": live.state if live is not None else "stopped",
        "store": live.store if live is not None else ("zookeeper" if settings.LAB_ZOOKEEPER else "memory"),
        "zookeeper_outage": (live.zookeeper_outage or None) if live is not None else None,
        "can_act": access.can_act(user, lab),
        "asleep": live.asleep if live is not None else False,
        "slept": (live.nap_text() or None) if live is not None else None,
    }


def _list(user: Any) -> list[dict[str, Any]]:
    return [lab_out(lab, user) for lab in access.visible_labs(user).select_related("owner")]


@router.get("/labs", response={200: list[LabOut], **ERRORS}, summary="The labs you may see")
async def list_labs(request: HttpRequest) -> Any:
    """Your labs; an instructor sees every lab, a student also the demos they joined."""
    return await sync_to_async(_list)(driver.user_of(request))


def _create(user: Any, body: LabIn) -> Lab:
    owner = user
    if body.owner is not None and body.owner != user.get_username():
        access.require_instructor(user)
        owner = get_user_model().objects.filter(username=body.owner).first()
        if owner is None:
            raise Http404(f"There is no user {body.owner!r}.")
    # Over the owner's or the server's limit: 409 POLICY_VIOLATION (lab.limits, in create_lab).
    return create_lab(
        owner, body.name, brokers=body.brokers, config=dict(body.config), listeners=body.listeners
    )


@router.post("/labs", response={201: LabOut, **ERRORS}, summary="Create a lab and start it")
async def create(request: HttpRequest, body: LabIn) -> Any:
    """A lab for you, or (an instructor) for the person ``owner`` names. Beyond the owner's limit
    (``LAB_MAX_LABS_PER_USER``, ``LAB_MAX_LABS_PER_INSTRUCTOR``) or the server's (``LAB_MAX_LIVE_LABS``)
    it is a 409 ``POLICY_VIOLATION`` that says which, and nothing is made."""
    user = driver.user_of(request)
    lab = await sync_to_async(_create)(user, body)
    live = await asyncio.to_thread(live_of, lab)
    return Status(201, await sync_to_async(lab_out)(lab, user, live))


@router.get(
    "/labs/{slug}", response={200: LabDetailOut, **ERRORS}, summary="A lab and its cluster's snapshot"
)
async def get_lab(request: HttpRequest, slug: str) -> Any:
    """The lab, where its brokers listen for Kafka clients (``bootstrap_servers``, each broker's
    listener: open while the broker runs), and its cluster's snapshot."""
    lab = await driver.lab_for(request, slug)
    live = await driver.live(lab)
    snapshot = await driver.run(live, "snapshot")
    # The lab's row (its owner with it) and its status are in hand: no database, no hop to a thread.
    out = _out(lab, driver.user_of(request), live)
    return {**out, **listeners_out(live), "snapshot": snapshot}


def listeners_out(live: LiveLab) -> dict[str, Any]:
    """``bootstrap_servers`` and each broker's listener, as the lab page shows them."""
    on_worker: dict[str, Any] | None = getattr(live, "listeners_json", None)
    if on_worker is not None:  # a lab on a lab worker: its owner said where its listeners are
        return on_worker
    return listening.listeners_json(live)


@router.delete("/labs/{slug}", response={204: None, **ERRORS}, summary="Delete a lab with its data")
async def delete_lab(request: HttpRequest, slug: str) -> Any:
    lab = await driver.lab_for(request, slug, act=True)
    await asyncio.to_thread(delete_lab_data, lab)
    await lab.adelete()
    return Status(204, None)


@router.post(
    "/labs/{slug}/reset", response={200: MessageOut, **ERRORS}, summary="A fresh cluster, fresh data"
)
async def reset(request: HttpRequest, slug: str) -> Any:
    """Throw the cluster away with its data and build it again from the lab's spec (its topics and clients)."""
    lab = await driver.lab_for(request, slug, act=True)
    live = await driver.live(lab)
    message = await driver.run(live, "clock-reset", by=driver.user_of(request).get_username())
    return {"message": str(message)}
