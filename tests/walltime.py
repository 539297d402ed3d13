"""A live memory-store lab whose wall clock the test moves: its virtual time moves only when the test
says, so a test can tell "the lab kept running while a call waited" from "the call leapt the clock on"."""

from __future__ import annotations

from concurrent.futures import Future
from pathlib import Path
from typing import Any

from lab.engine.errors import KafkaTimeout
from lab.runtime.live import LiveLab
from tests.classroom.helpers import FakeWall, live_lab
from tests.processes import wait_until

__all__ = ["FakeWall", "advance", "now_ms", "still_lab", "until_done"]


def still_lab(tmp_path: Path, slug: str, **spec: Any) -> tuple[LiveLab, FakeWall]:
    """A running 3-broker lab on the memory store, driven by a wall clock the test moves."""
    wall = FakeWall()
    spec.setdefault("config", {"zookeeper.session.timeout.ms": "1500"})
    return live_lab(tmp_path, slug, wall=wall, **spec), wall


def now_ms(lab: LiveLab) -> int:
    return int(lab.submit(lambda lab: lab.cluster.now_ms).result(10))


def ticks_later(lab: LiveLab, n: int = 2) -> None:
    start = lab.ticks
    assert wait_until(lambda: lab.ticks >= start + n, 10)


def advance(lab: LiveLab, wall: FakeWall, seconds: float, *, step_s: float = 0.5) -> None:
    """Move the wall clock on by ``seconds``, a step at a time (a tick runs at most 2 s of the lab's time),
    and let the driver catch up with each step."""
    moved = 0.0
    while moved < seconds:
        step = min(step_s, seconds - moved)
        wall.now += step
        moved += step
        ticks_later(lab)


def until_done(lab: LiveLab, wall: FakeWall, future: Future[Any], *, seconds: float = 60.0) -> Any:
    """Move the lab's clock on until ``future`` is answered (at most ``seconds`` of its time); its result."""
    moved = 0.0
    while not future.done():
        if moved >= seconds:
            raise KafkaTimeout(f"no answer after {seconds:g} s of the lab's time")
        advance(lab, wall, 0.5)
        moved += 0.5
    return future.result(0)


def produce(lab: LiveLab, wall: FakeWall, topic: str, count: int) -> str:
    """``count`` records into ``topic`` with acks=all, the lab's clock moved on until they are acknowledged."""
    return str(
        until_done(lab, wall, lab.act("produce", {"topic": topic, "count": str(count), "acks": "all"}))
    )


def pause_coordinator(lab: LiveLab, group: str) -> int:
    """Pause the broker that coordinates ``group`` (it must have one): what reaches it waits."""

    def pause(lab: LiveLab) -> int:
        from lab.engine.groups import coordinator_of

        found = coordinator_of(lab.cluster.brokers, group)
        assert found is not None, f"group {group} has no coordinator"
        lab.cluster.pause_broker(found[0].id)
        return found[0].id

    return int(lab.submit(pause).result(10))


def pause_controller(lab: LiveLab) -> int:
    """Pause the controller: it reads no change notification, elects no leader, until it is resumed."""

    def pause(lab: LiveLab) -> int:
        controller = lab.cluster.controller_id()
        assert controller is not None, "the lab has no controller"
        lab.cluster.pause_broker(controller)
        return controller

    return int(lab.submit(pause).result(10))
