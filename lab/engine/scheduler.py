"""Virtual time: the engine's one clock.

Timers are data: a heap of ``(time_ms, sequence, timer)``. The sequence breaks
ties in the order events were scheduled, so a seed plus the same commands gives
the same run. Nothing here reads the wall clock; whoever drives the engine
decides how fast virtual milliseconds pass.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass, field
from random import Random
from typing import Any

_FIRST_SWEEP = 1024


def _nothing(*_args: Any) -> None:
    """A cancelled timer's callback (it never runs)."""


@dataclass(slots=True, eq=False)
class Timer:
    """A scheduled call; cancel it with ``Scheduler.cancel`` (or ``timer.cancel()``)."""

    time_ms: int
    seq: int
    callback: Callable[..., Any]
    args: tuple[Any, ...]
    label: str = ""
    cancelled: bool = False

    def cancel(self) -> None:
        # What it would have called, and with what, go at once: a cancelled timer waits in the heap
        # until it comes up or a sweep, and must not keep alive a request, its answer or its batch.
        self.cancelled = True
        self.callback = _nothing
        self.args = ()


@dataclass(slots=True)
class Scheduler:
    """An event heap ordered by (time, sequence), plus the run's seeded random generator."""

    seed: int = 0
    now_ms: int = 0
    rng: Random = field(init=False)
    _heap: list[tuple[int, int, Timer]] = field(default_factory=list, init=False)
    _seq: int = field(default=0, init=False)
    events_run: int = field(default=0, init=False)
    # Cancelled timers stay in the heap until they come up (every request's timeout does, answered
    # or not): when the heap has doubled since it was last swept, it is swept.
    _sweep_at: int = field(default=_FIRST_SWEEP, init=False)

    def __post_init__(self) -> None:
        self.rng = Random(self.seed)

    def call_at(self, time_ms: int, callback: Callable[..., Any], *args: Any, label: str = "") -> Timer:
        if time_ms < self.now_ms:
            time_ms = self.now_ms
        self._seq += 1
        timer = Timer(time_ms, self._seq, callback, args, label)
        heap = self._heap
        heapq.heappush(heap, (time_ms, self._seq, timer))
        if len(heap) > self._sweep_at:
            self._sweep()
        return timer

    def _sweep(self) -> None:
        """Drop cancelled timers: (time, sequence) keys are unique, so the order stays the same."""
        heap = [entry for entry in self._heap if not entry[2].cancelled]
        heapq.heapify(heap)
        self._heap = heap
        self._sweep_at = max(_FIRST_SWEEP, 2 * len(heap))

    def call_later(self, delay_ms: int, callback: Callable[..., Any], *args: Any, label: str = "") -> Timer:
        return self.call_at(self.now_ms + max(0, delay_ms), callback, *args, label=label)

    def call_soon(self, callback: Callable[..., Any], *args: Any, label: str = "") -> Timer:
        return self.call_at(self.now_ms, callback, *args, label=label)

    @staticmethod
    def cancel(timer: Timer | None) -> None:
        if timer is not None:
            timer.cancel()

    def _drop_cancelled(self) -> None:
        heap = self._heap
        while heap and heap[0][2].cancelled:
            heapq.heappop(heap)

    def next_time(self) -> int | None:
        """When the next live event is due, or None when nothing is scheduled."""
        self._drop_cancelled()
        return self._heap[0][0] if self._heap else None

    def pending(self) -> list[Timer]:
        """Live timers in the order they will run (for views and debugging)."""
        return [t for _, _, t in sorted(self._heap) if not t.cancelled]

    def step(self) -> bool:
        """Run the next event, moving the clock to its time. False when there is none."""
        self._drop_cancelled()
        if not self._heap:
            return False
        time_ms, _, timer = heapq.heappop(self._heap)
        self.now_ms = max(self.now_ms, time_ms)
        self.events_run += 1
        timer.callback(*timer.args)
        return True

    def run_until(self, time_ms: int, after_step: Callable[[], None] | None = None) -> None:
        """Run every event due at or before ``time_ms``, then set the clock to it.

        ``step`` written out: a lab runs this loop for every event of a busy second."""
        pop = heapq.heappop
        while True:
            heap = self._heap  # a sweep may replace it
            while heap and heap[0][2].cancelled:
                pop(heap)
            if not heap or heap[0][0] > time_ms:
                break
            due, _, timer = pop(heap)
            if due > self.now_ms:
                self.now_ms = due
            self.events_run += 1
            timer.callback(*timer.args)
            if after_step is not None:
                after_step()
        if time_ms > self.now_ms:
            self.now_ms = time_ms

    def advance_to(self, time_ms: int) -> None:
        """Move the clock forward without running anything (the caller ran what was due)."""
        self.now_ms = max(self.now_ms, time_ms)
