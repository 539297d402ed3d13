"""The lab clock: rate x wall time, paused at rate 0, re-anchored on every change."""

from __future__ import annotations

import pytest

from lab.engine.errors import IllegalArgument
from lab.runtime.clock import LabClock


class Wall:
    def __init__(self) -> None:
        self.t = 50.0

    def __call__(self) -> float:
        return self.t


def test_virtual_time_runs_at_the_rate() -> None:
    wall = Wall()
    clock = LabClock(rate=1.0, wall=wall)
    clock.anchor(1000)
    wall.t += 2
    assert clock.target() == 3000
    clock.set_rate(0.1, clock.target())
    wall.t += 10
    assert clock.target() == 4000  # slow motion: 10 wall seconds are 1 virtual second
    clock.set_rate(10, 4000)
    wall.t += 0.5
    assert clock.target() == 9000


def test_pause_freezes_and_resume_carries_on_from_there() -> None:
    wall = Wall()
    clock = LabClock(wall=wall)
    clock.anchor(0)
    wall.t += 1
    clock.pause(clock.target())
    wall.t += 100
    assert clock.target() == 1000
    assert clock.effective_rate == 0
    clock.resume(1000)
    wall.t += 1
    assert clock.target() == 2000
    assert clock.effective_rate == 1


def test_a_rate_out_of_range_is_refused_and_the_rate_stays() -> None:
    clock = LabClock(rate=2)
    with pytest.raises(IllegalArgument, match="not 11x"):
        clock.set_rate(11, 0)
    assert clock.rate == 2
