"""``python -m lab.bench classroom --quick``: a class end to end, every figure reported (not timing)."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest

from tests.lab_server import REPO

pytestmark = pytest.mark.long(105)

FIGURES = {
    "api_p50_ms",
    "api_p99_ms",
    "frame_p50_ms",
    "frame_p99_ms",
    "cpu_per_busy_lab",
    "cpu_per_idle_watched_lab",
    "cpu_per_sleeping_lab",
    "rss_per_lab_mb",
    "labs_per_core",
}


def test_quick_run_prints_a_line_per_workers_value_then_the_scaling() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "lab.bench", "classroom", "--quick"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    assert [line["bench"] for line in lines] == ["classroom", "classroom", "classroom_scaling"]
    for line, workers in zip(lines, (1, 2), strict=False):
        assert line["workers"] == workers
        assert line["labs"] == 3  # two students' labs and the demo
        # Each student opened their lab and the demo, and every page got its full state.
        assert line["handshakes"] == 4
        assert line["handshakes_ok"] == 4
        assert line["frames"] > 0  # the labs were live: frames reached the pages during the window
        assert line["api_requests"] > 0
        for key in FIGURES:
            value = line[key]
            assert isinstance(value, int | float), (key, value)
            assert math.isfinite(value), (key, value)
            assert value >= 0, (key, value)
        assert line["cpu_per_busy_lab"] > 0
    scaling = lines[-1]
    assert scaling["baseline"] == "workers_1"
    assert scaling["ratio"] == round(
        scaling["labs_per_core_workers_2"] / scaling["labs_per_core_workers_1"], 2
    )
