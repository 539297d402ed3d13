"""Reaching a lab from an async view: who may, then a named command to its lab, awaited with a deadline.

Everything the API asks of a lab is a command with JSON arguments (``LiveLab.act``, registered in
``lab.runtime.actions``): it can travel to the process that runs the lab, and the lab's journal keeps
what changed it. The view awaits the Future (``asyncio.wrap_future``). What needs engine time answers
through a request in flight, so no call holds the driver; a lab that does not answer in ``WAIT_S`` is
a 504, never a hung request.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from asgiref.sync import sync_to_async
from django.http import HttpRequest

from lab import access
from lab.api.errors import LabTimeout, Refused
from lab.engine.errors import KafkaError
from lab.labs import asave_live_spec, live_of, on_workers
from lab.models import Lab
from lab.runtime.live import LiveLab

WAIT_S = 30.0  # the most a request waits for its lab


def user_of(request: HttpRequest) -> Any:
    return request.auth  # type: ignore[attr-defined]


async def lab_for(request: HttpRequest, slug: str, *, act: bool = False) -> Lab:
    """The lab if the token's user may see it (404 otherwise); with ``act``, 403 unless they own it.
    Its owner is read in the same hop to a thread: answers name it, and the loop reads no database."""
    lab: Lab = await sync_to_async(_lab_for)(user_of(request), slug, act)
    return lab


def _lab_for(user: Any, slug: str, act: bool) -> Lab:
    lab = access.lab_for(user, slug, act=act)
    lab.owner  # noqa: B018 - read now, kept on the row
    return lab


async def live(lab: Lab) -> LiveLab:
    """The lab to ``run`` a command on. A lab on a worker is not asked anything yet: the command's
    answer brings its status (one round trip to its owner, not a wake and then the command; the
    command wakes a sleeping lab, and a lab nobody runs is claimed by the worker it reaches)."""
    if on_workers():
        from lab import remote

        return remote.RemoteLab(lab.slug, None)  # type: ignore[return-value]
    return await asyncio.to_thread(live_of, lab)


async def run(
    live_lab: LiveLab,
    name: str,
    args: Mapping[str, Any] | None = None,
    *,
    by: str = "",
    timeout_s: float = WAIT_S,
) -> Any:
    """Command ``name`` with ``args`` on the lab; its answer, its KafkaError as ``Refused`` (the cluster's
    answer: 404 or 409, never 400), or LabTimeout (504)."""
    if isinstance(live_lab, LiveLab) or _owner_known(live_lab.slug):
        future = live_lab.act(name, dict(args or {}), by=by)
    else:  # finding a worker's channel reads ZooKeeper (lab.runtime.ownership.Owners): off the loop
        future = await asyncio.to_thread(live_lab.act, name, dict(args or {}), by=by)
    if future.done() and isinstance(future.exception(), KafkaError):
        raise future.exception()  # type: ignore[misc]  # refused where it arrived: bad input, a 400
    try:
        result = await asyncio.wait_for(asyncio.wrap_future(future), timeout_s)
    except TimeoutError as error:
        future.cancel()
        # The lab's worker's own deadline (LAB_WORKER_TIMEOUT_S) says so; this one's says nothing.
        said = str(error) or f"lab {live_lab.slug} did not answer within {timeout_s:g} s"
        raise LabTimeout(said) from None
    except KafkaError as error:
        raise Refused(error) from error
    return result


def _owner_known(slug: str) -> bool:
    """This process knows the lab's worker without asking ZooKeeper (a hop to a thread saved)."""
    if not on_workers():
        return False
    from lab import remote

    return remote.owner_known(slug)


async def act(
    request: HttpRequest, slug: str, name: str, args: Mapping[str, Any] | None = None, *, save: bool = False
) -> Any:
    """A change to a lab its owner asked for: checked, run by the lab, and (``save``) remembered in its spec."""
    lab = await lab_for(request, slug, act=True)
    live_lab = await live(lab)
    result = await run(live_lab, name, args, by=user_of(request).get_username())
    if save:
        await asave_live_spec(lab, live_lab)
    return result


async def read(request: HttpRequest, slug: str, name: str, args: Mapping[str, Any] | None = None) -> Any:
    """A read anyone who may see the lab may do (its owner, an instructor, a demo's viewers)."""
    lab = await lab_for(request, slug)
    return await run(await live(lab), name, args)
