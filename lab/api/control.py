"""Faults (kill, restart, pause, resume, slow, isolate, heal, controlled shutdown), the clock, and the journal.

Faults and the clock are the dashboard's own controls (``lab.runtime.actions``), so a script and a
click do the same thing and answer the same sentence; killing with ``lose_unflushed`` is the API's extra.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja import Path, Query, Router

from lab.api import driver
from lab.api.errors import ERRORS, NotFound
from lab.api.schemas import (
    ClockOut,
    EventsOut,
    IsolateIn,
    KillIn,
    MessageOut,
    SlowIn,
    SpeedIn,
    StepIn,
)
from lab.engine import limits

router = Router(tags=["faults, clock and events"])

BrokerId = Path(..., ge=limits.BROKER_ID.low, le=limits.BROKER_ID.high)


async def _fault(request: HttpRequest, slug: str, broker: int, name: str, **args: Any) -> Any:
    """A fault to one broker: the dashboard's control ``name``, answered as the dashboard says it."""
    lab = await driver.lab_for(request, slug, act=True)
    if broker > lab.brokers:  # brokers are numbered 1..n
        raise NotFound(
            f"there is no broker {broker} (brokers: {', '.join(map(str, range(1, lab.brokers + 1)))})"
        )
    live = await driver.live(lab)
    said = await driver.run(live, name, {"broker": broker, **args}, by=driver.user_of(request).get_username())
    return {"message": str(said)}


@router.post(
    "/labs/{slug}/brokers/{broker}/kill", response={200: MessageOut, **ERRORS}, summary="Kill a broker"
)
async def kill(request: HttpRequest, slug: str, body: KillIn | None = None, broker: int = BrokerId) -> Any:
    """A hard stop: no goodbye to ZooKeeper, which expires its session; ``lose_unflushed`` also loses the log
    tail not yet flushed to disk (what a power cut does). The body is optional."""
    lose = body is not None and body.lose_unflushed
    return await _fault(request, slug, broker, "kill", lose_unflushed=lose)


@router.post("/labs/{slug}/brokers/{broker}/restart", response={200: MessageOut, **ERRORS}, summary="Restart")
async def restart(request: HttpRequest, slug: str, broker: int = BrokerId) -> Any:
    return await _fault(request, slug, broker, "restart")


@router.post("/labs/{slug}/brokers/{broker}/pause", response={200: MessageOut, **ERRORS}, summary="Pause")
async def pause(request: HttpRequest, slug: str, broker: int = BrokerId) -> Any:
    """Like a long GC pause: the broker holds everything it receives and sends no ZooKeeper heartbeats."""
    return await _fault(request, slug, broker, "pause")


@router.post("/labs/{slug}/brokers/{broker}/resume", response={200: MessageOut, **ERRORS}, summary="Resume")
async def resume(request: HttpRequest, slug: str, broker: int = BrokerId) -> Any:
    return await _fault(request, slug, broker, "resume")


@router.post("/labs/{slug}/brokers/{broker}/slow", response={200: MessageOut, **ERRORS}, summary="Slow")
async def slow(request: HttpRequest, slug: str, body: SlowIn, broker: int = BrokerId) -> Any:
    """Add ``delay_ms`` to every message to and from the broker (heal undoes it)."""
    return await _fault(request, slug, broker, "slow", ms=body.delay_ms)


@router.post("/labs/{slug}/brokers/{broker}/isolate", response={200: MessageOut, **ERRORS}, summary="Isolate")
async def isolate(request: HttpRequest, slug: str, body: IsolateIn, broker: int = BrokerId) -> Any:
    """Cut the broker off from ZooKeeper (its session expires) or from the other brokers."""
    return await _fault(request, slug, broker, "isolate", **{"from": body.from_})


@router.post("/labs/{slug}/brokers/{broker}/heal", response={200: MessageOut, **ERRORS}, summary="Heal")
async def heal(request: HttpRequest, slug: str, broker: int = BrokerId) -> Any:
    """Undo isolation and slowness (not a kill or a pause)."""
    return await _fault(request, slug, broker, "heal")


@router.post(
    "/labs/{slug}/brokers/{broker}/shutdown",
    response={200: MessageOut, **ERRORS},
    summary="Controlled shutdown",
)
async def shutdown(request: HttpRequest, slug: str, broker: int = BrokerId) -> Any:
    """The broker asks the controller to move its leaderships away first, then stops."""
    return await _fault(request, slug, broker, "shutdown")


# ----------------------------------------------------------------------------- the clock


@router.get("/labs/{slug}/clock", response={200: ClockOut, **ERRORS}, summary="The lab's clock")
async def clock(request: HttpRequest, slug: str) -> Any:
    """Virtual time (ms), its rate against the wall clock, and whether it is paused."""
    return await driver.read(request, slug, "clock")


async def _clock_act(
    request: HttpRequest, slug: str, name: str, args: dict[str, Any], save: bool = False
) -> Any:
    said = await driver.act(request, slug, name, args, save=save)
    return {"message": str(said), **await driver.read(request, slug, "clock")}


class ClockMessageOut(ClockOut):
    message: str


@router.post("/labs/{slug}/clock/pause", response={200: ClockMessageOut, **ERRORS}, summary="Pause the clock")
async def clock_pause(request: HttpRequest, slug: str) -> Any:
    return await _clock_act(request, slug, "clock-pause", {})


@router.post(
    "/labs/{slug}/clock/resume", response={200: ClockMessageOut, **ERRORS}, summary="Resume the clock"
)
async def clock_resume(request: HttpRequest, slug: str) -> Any:
    return await _clock_act(request, slug, "clock-resume", {})


@router.post("/labs/{slug}/clock/step", response={200: ClockMessageOut, **ERRORS}, summary="Step the clock")
async def clock_step(request: HttpRequest, slug: str, body: StepIn) -> Any:
    """With the clock paused: run the next ``events`` events, or ``ms`` of virtual time (one of the two)."""
    args = {k: v for k, v in (("events", body.events), ("ms", body.ms)) if v is not None}
    return await _clock_act(request, slug, "clock-step", args)


@router.post("/labs/{slug}/clock/speed", response={200: ClockMessageOut, **ERRORS}, summary="Clock speed")
async def clock_speed(request: HttpRequest, slug: str, body: SpeedIn) -> Any:
    """Virtual time runs at ``rate`` times the wall clock: 0.1 (slow motion) to 10."""
    return await _clock_act(request, slug, "clock-speed", {"rate": body.rate}, save=True)


# ----------------------------------------------------------------------------- the journal


@router.get("/labs/{slug}/events", response={200: EventsOut, **ERRORS}, summary="The journal")
async def events(
    request: HttpRequest,
    slug: str,
    since: int = Query(
        0,
        ge=limits.SINCE.low,
        le=limits.SINCE.high,
        description="the cursor: events after this seq (0: from the oldest kept)",
    ),
    limit: int = Query(100, ge=limits.EVENTS.low, le=limits.EVENTS.high),
) -> Any:
    """What happened, oldest first, each with its reason in words; page with ``next`` until ``more`` is false."""

    return await driver.read(request, slug, "events", {"since": since, "limit": limit})
