"""``python -m lab.bench classroom --quick``: a class end to end, every figure reported (not timing)."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest

from lab.bench import classroom
from lab.bench.__main__ import main as bench_main
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


def test_a_smaller_class_is_asked_for_by_options_and_bad_ones_are_refused(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = classroom.options(
        ["--labs", "10", "--duration", "20", "--workers", "2", "--no-alone"], quick=False
    )
    assert (args.labs, args.duration, args.workers, args.no_alone) == (10, 20.0, (2,), True)
    quick = classroom.options([], quick=True)
    assert (quick.labs, quick.duration, quick.workers) == (
        classroom.QUICK_LABS,
        classroom.QUICK_DURATION_S,
        (1, 2),
    )
    for bad, said in (
        (["--labs", "0"], "--labs is at least 1"),
        (["--workers", "one"], "--workers is a comma-separated list of numbers"),
        (["--workers", "0"], "each value at least 1"),
    ):
        with pytest.raises(SystemExit):
            classroom.options(bad, quick=False)
        assert said in capsys.readouterr().err
    # A bench without options of its own says so, and runs nothing.
    with pytest.raises(SystemExit):
        bench_main(["storage", "--labs", "3"])
    assert "storage takes no options but --quick: --labs 3" in capsys.readouterr().err


def test_a_profile_is_summed_up_by_thread_and_function_waiting_left_out() -> None:
    collapsed = "\n".join(
        [
            "thread (1): lab-a;LiveLab._run (lab/runtime/live.py:1);render (x.py:2) 6",
            "thread (2): lab-b;LiveLab._run (lab/runtime/live.py:1);build (y.py:3) 2",
            "thread (3): worker-1-courier;run_forever (a.py:1);EpollSelector.select (selectors.py:468) 50",
            "thread (2): lab-b;LiveLab._run (lab/runtime/live.py:1);Condition.wait (threading.py:331) 90",
        ]
    )
    assert classroom.thread_shares(collapsed) == [("lab-*", 1.0)]
    top = {f: (mine, whole) for f, mine, whole in classroom.top_entries(collapsed)}
    assert top["LiveLab._run (lab/runtime/live.py:1)"] == (0.0, 1.0)
    assert top["render (x.py:2)"] == (0.75, 0.75)
    assert top["build (y.py:3)"] == (0.25, 0.25)
