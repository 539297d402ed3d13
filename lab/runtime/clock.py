"""The lab's clock: virtual milliseconds at ``rate`` x wall time, paused at rate 0.

The driver asks ``target()`` each frame and runs the engine up to it. The clock is
re-anchored whenever the rate changes or the engine got ahead (a command that waited
on ZooKeeper) or fell behind (more work than a frame can hold), so a change of speed
never makes time jump.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from lab.runtime.spec import check_rate


class LabClock:
    def __init__(
        self, *, rate: float = 1.0, paused: bool = False, wall: Callable[[], float] = time.monotonic
    ):
        self._wall = wall
        self.rate = check_rate(rate)
        self.paused = paused
        self._anchor_wall = wall()
        self._anchor_virtual = 0

    @property
    def effective_rate(self) -> float:
        return 0.0 if self.paused else self.rate

    def anchor(self, virtual_ms: int) -> None:
        """From now on, virtual time runs on from ``virtual_ms``."""
        self._anchor_wall = self._wall()
        self._anchor_virtual = virtual_ms

    def target(self) -> int:
        """The virtual time the engine should have reached now."""
        if self.paused:
            return self._anchor_virtual
        return self._anchor_virtual + int((self._wall() - self._anchor_wall) * 1000 * self.rate)

    def set_rate(self, rate: float, virtual_ms: int) -> None:
        self.rate = check_rate(rate)
        self.anchor(virtual_ms)

    def pause(self, virtual_ms: int) -> None:
        self.paused = True
        self.anchor(virtual_ms)

    def resume(self, virtual_ms: int) -> None:
        self.paused = False
        self.anchor(virtual_ms)
