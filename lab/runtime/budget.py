"""One frame budget per process: the share of a core its labs' frames may take, shared among them.

A lab's frame (its views built, its changed fragments drawn) costs its driver thread milliseconds.
Each lab claiming a fixed share of a core (2% each) let a worker's 15 busy labs spend 30% of a core on
frames; here the process has one share (``WORKER_FRAME_SHARE``) and the labs that made a frame lately
divide it equally: one lab alone keeps its ten frames a second, a class of busy labs gets fewer each
(never fewer than one a second) and the worker's frames cost the same however many labs it runs.
A lab that stopped changing (or whose page closed) drops out after ``ACTIVE_S`` and leaves its part to
the others.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

WORKER_FRAME_SHARE = 0.05  # of one core, for every frame of the process's labs
ACTIVE_S = 2.0  # a lab that made no frame for this long no longer shares the budget
SMOOTHING = 0.3  # the weight of a frame's cost in its lab's moving average


@dataclass(frozen=True, slots=True, kw_only=True)
class Charge:
    cost_s: float  # what the lab's last frames cost, a moving average (thread CPU seconds)
    at: float  # when the last was charged (wall seconds, the budget's clock)


class FrameBudget:
    """The process's frame share; labs ``charge`` what each frame cost and ask their ``interval``."""

    def __init__(
        self,
        share: float = WORKER_FRAME_SHARE,
        *,
        active_s: float = ACTIVE_S,
        wall: Callable[[], float] = time.monotonic,
    ) -> None:
        self.share = share
        self.active_s = active_s
        self._wall = wall
        self._lock = threading.Lock()  # every lab's driver thread charges and asks
        self._charges: dict[str, Charge] = {}

    def charge(self, lab: str, cost_s: float) -> None:
        """(a lab's driver thread) A frame of ``lab`` cost ``cost_s`` of its thread's CPU."""
        now = self._wall()
        with self._lock:
            last = self._charges.get(lab)
            if last is not None and now - last.at < self.active_s:
                cost_s = (1 - SMOOTHING) * last.cost_s + SMOOTHING * cost_s
            self._charges[lab] = Charge(cost_s=cost_s, at=now)

    def forget(self, lab: str) -> None:
        """``lab`` stopped: its part goes to the others at once."""
        with self._lock:
            self._charges.pop(lab, None)

    def active(self) -> int:
        """How many labs made a frame in the last ``active_s`` (at least one: the lab asking)."""
        now = self._wall()
        with self._lock:
            stale = [lab for lab, c in self._charges.items() if now - c.at >= self.active_s]
            for lab in stale:
                del self._charges[lab]
            return max(1, len(self._charges))

    def interval(self, lab: str, *, fastest_s: float, slowest_s: float) -> float:
        """The wall seconds between two frames of ``lab``: its frames at that pace cost its equal part
        of the share, between ``fastest_s`` (a cheap lab keeps its ten frames a second) and
        ``slowest_s`` (however loaded the process, a lab that changes gets a frame that often)."""
        n = self.active()
        with self._lock:
            last = self._charges.get(lab)
        if last is None:
            return fastest_s  # no frame yet, or none lately: the next one now
        return max(fastest_s, min(slowest_s, last.cost_s * n / self.share))


frame_budget = FrameBudget()  # the process's: a worker's labs, or every lab of a server without workers
