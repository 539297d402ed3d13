"""Live memory-store labs for the classroom's tests, with a wall clock the test moves."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from lab.runtime.live import LiveLab
from lab.runtime.spec import LabSpec

QUIET_TICK_S_UNDER_TEST = 0.05


class FakeWall:
    """A wall clock the test moves, so the lab's virtual time moves only when the test says."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def live_lab(tmp_path: Path, slug: str, *, wall: Any = None, **kw: Any) -> LiveLab:
    fields: dict[str, Any] = {
        "slug": slug,
        "name": slug,
        "data_dir": str(tmp_path / slug),
        "chroot": f"/kafka-lab/tests/{slug}-{time.time_ns()}",
        "brokers": 3,
    }
    fields.update(kw)
    options: dict[str, Any] = {"tree_interval_s": 3600}
    if wall is not None:
        # The test moves the lab's time (tests.walltime.advance waits for the driver's ticks at each
        # step): a quiet lab ticks every 50 ms instead of QUIET_TICK_S, which is all the test waits for.
        options["wall"] = wall
        options["quiet_tick_s"] = QUIET_TICK_S_UNDER_TEST
    live = LiveLab(LabSpec(**fields), zookeeper=None, **options).start()
    live.ready.result(30)
    assert live.state == "running", live.error
    return live


def on_driver(live: LiveLab, fn: Any, timeout_s: float = 30.0) -> Any:
    """Run ``fn(lab)`` on the lab's driver thread and return what it returns."""
    return live.submit(fn).result(timeout_s)
