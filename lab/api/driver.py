"""Reaching a lab from an async view: who may, then work on its driver thread, awaited with a deadline.

A Cluster is not thread-safe: everything that reads or changes one runs on its lab's driver thread
(``live.submit``), and the view awaits the Future (``asyncio.wrap_future``). What needs engine time
answers through ``settle`` or ``actions.retrying``, so no call holds the driver; a lab that does not
answer in ``WAIT_S`` is a 504, never a hung request.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any, TypeVar

from asgiref.sync import sync_to_async
from django.http import HttpRequest

from lab import access
from lab.api.errors import LabTimeout, Refused
from lab.engine.errors import KafkaError
from lab.labs import asave_spec, live_of
from lab.models import Lab
from lab.runtime import actions
from lab.runtime.live import LiveLab

T = TypeVar("T")

WAIT_S = 30.0  # the most a request waits for its lab
SETTLE_S = 5.0  # how long an answer that needs engine time (leaders, acks) is waited for


def user_of(request: HttpRequest) -> Any:
    return request.auth  # type: ignore[attr-defined]


async def lab_for(request: HttpRequest, slug: str, *, act: bool = False) -> Lab:
    """The lab if the token's user may see it (404 otherwise); with ``act``, 403 unless they own it."""
    lab: Lab = await sync_to_async(access.lab_for)(user_of(request), slug, act=act)
    return lab


async def live(lab: Lab) -> LiveLab:
    return await asyncio.to_thread(live_of, lab)


async def run(live_lab: LiveLab, fn: Callable[[LiveLab], T], *, timeout_s: float = WAIT_S) -> T:
    """``fn(lab)`` on the lab's driver thread; its result, its KafkaError as ``Refused`` (the cluster's
    answer: 404 or 409, never 400), or LabTimeout (504)."""
    future = live_lab.submit(fn)
    try:
        result: T = await asyncio.wait_for(asyncio.wrap_future(future), timeout_s)
    except TimeoutError:
        future.cancel()
        raise LabTimeout(f"lab {live_lab.slug} did not answer within {timeout_s:g} s") from None
    except KafkaError as error:
        raise Refused(error) from error
    return result


async def act(request: HttpRequest, slug: str, fn: Callable[[LiveLab], T], *, save: bool = False) -> T:
    """A change to a lab its owner asked for: checked, run on the driver, and (``save``) remembered in its spec."""
    lab = await lab_for(request, slug, act=True)
    live_lab = await live(lab)
    result = await run(live_lab, fn)
    if save:
        await asave_spec(lab, live_lab.spec)
    return result


async def read(request: HttpRequest, slug: str, fn: Callable[[LiveLab], T]) -> T:
    """A read anyone who may see the lab may do (its owner, an instructor, a demo's viewers)."""
    lab = await lab_for(request, slug)
    return await run(await live(lab), fn)


def settle(
    ready: Callable[[], bool], result: Callable[[], Any], *, wait_s: float | None = None
) -> actions.Waiting:
    """An answer that needs engine time: the driver checks ``ready`` every tick, and answers
    ``result()`` when it holds or when ``wait_s`` (default ``SETTLE_S``) has passed (a paused clock
    never gets there)."""
    wait = SETTLE_S if wait_s is None else wait_s
    return actions.Waiting(ready=ready, result=result, on_timeout=result, deadline=time.monotonic() + wait)
