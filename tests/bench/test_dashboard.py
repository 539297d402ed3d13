"""``python -m lab.bench dashboard --quick``: it runs end to end and reports every figure (not timing)."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest

from tests.lab_server import REPO

pytestmark = pytest.mark.long(30)

FIGURES = {
    "p50_ms",
    "p99_ms",
    "event_p50_ms",
    "event_p99_ms",
    "frames_per_s",
    "baseline_p50_ms",
    "baseline_p99_ms",
    "baseline_frames_per_s",
    "ratio",
    "frame_bytes_avg",
}


def test_quick_run_prints_the_fanout_figures_as_one_json_line() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "lab.bench", "dashboard", "--quick"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    assert len(lines) == 1, done.stdout
    figure = json.loads(lines[0])
    assert figure["bench"] == "dashboard_fanout"
    assert figure["baseline"] == "fixed_2kb_fanout"
    assert figure["clients"] == 10
    for key in FIGURES:
        assert isinstance(figure[key], int | float), key
        assert math.isfinite(figure[key]), key
        assert figure[key] > 0, key
    assert figure["p50_ms"] <= figure["p99_ms"]
    assert figure["baseline_p50_ms"] <= figure["baseline_p99_ms"]
    assert figure["frame_bytes_avg"] > 2048  # real frames, not the baseline's fixed message
