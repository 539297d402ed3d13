"""``python -m lab.bench idle --quick``: it runs end to end and reports every figure (not timing)."""

from __future__ import annotations

import json
import math
import subprocess
import sys

from tests.lab_server import REPO


def test_quick_run_prints_the_idle_figures_each_with_its_baseline() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "lab.bench", "idle", "--quick"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    figures = {f["bench"]: f for f in map(json.loads, filter(str.strip, done.stdout.splitlines()))}
    assert set(figures) == {"idle_watched", "idle_sleeping", "idle_threads"}
    for figure in figures.values():
        assert figure["labs"] == 2
        assert figure["brokers_per_lab"] == 3
        assert figure["baseline"]
    for name in ("idle_watched", "idle_sleeping"):
        for key in ("cpu_per_lab", "baseline_cpu"):
            value = figures[name][key]
            assert isinstance(value, int | float), (name, key)
            assert math.isfinite(value), (name, key)
            assert value >= 0, (name, key)
    assert figures["idle_watched"]["baseline"] == "thread_10hz"
    assert figures["idle_sleeping"]["baseline"] == "same_labs_awake"
    threads = figures["idle_threads"]
    assert threads["threads_per_lab_awake"] >= 1  # the driver, at least
    assert threads["threads_per_lab_asleep"] == threads["threads_per_lab_awake"]  # parked, not ended
