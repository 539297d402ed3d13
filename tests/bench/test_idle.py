"""``python -m lab.bench idle --quick``: it runs end to end and reports every figure (not timing)."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest

from tests.lab_server import REPO

pytestmark = pytest.mark.long(45)


def test_quick_run_prints_the_idle_figures_of_both_stores_each_with_its_baseline() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "lab.bench", "idle", "--quick"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    figures = {(f["bench"], f["store"]): f for f in lines}
    assert len(figures) == len(lines) == 6
    # ZooKeeper first (what `make run` labs run on), then the memory store, in the same run.
    assert [f["store"] for f in lines] == ["zookeeper"] * 3 + ["memory"] * 3
    assert {bench for bench, _ in figures} == {"idle_watched", "idle_sleeping", "idle_threads"}
    for figure in figures.values():
        assert figure["labs"] == 2
        assert figure["brokers_per_lab"] == 3
        assert figure["baseline"]
    for store in ("zookeeper", "memory"):
        watched, sleeping = figures[("idle_watched", store)], figures[("idle_sleeping", store)]
        for figure in (watched, sleeping):
            for key in ("cpu_per_lab", "baseline_cpu"):
                value = figure[key]
                assert isinstance(value, int | float), (store, key)
                assert math.isfinite(value), (store, key)
                assert value >= 0, (store, key)
            split = figure["by_thread"]  # Linux: who spent the CPU
            assert set(split) == {"driver", "zookeeper_clients", "zookeeper_proxies", "listeners", "other"}
            assert all(v >= 0 for v in split.values())
        assert watched["baseline"] == "thread_10hz"
        assert watched["ticks_per_s_per_lab"] > 0
        assert sleeping["baseline"] == "same_labs_awake"
        assert sleeping["by_thread"]["driver"] < watched["by_thread"]["driver"]  # parked: no ticks
        threads = figures[("idle_threads", store)]
        assert threads["threads_per_lab_awake"] >= 1  # the driver, at least
        # The driver is parked, not ended; on ZooKeeper the lab's own client (kazoo and its proxy) closed.
        closed = 2 if store == "zookeeper" else 0
        assert threads["threads_per_lab_asleep"] == threads["threads_per_lab_awake"] - closed
    # On ZooKeeper each broker's session has its own kazoo client and proxy; the memory store has none.
    assert figures[("idle_watched", "zookeeper")]["by_thread"]["zookeeper_clients"] > 0
    assert figures[("idle_watched", "memory")]["by_thread"]["zookeeper_clients"] == 0
    assert (
        figures[("idle_watched", "zookeeper")]["baseline_cpu"]
        == figures[("idle_watched", "memory")]["baseline_cpu"]
    )
