"""make run WORKERS=N's workers: started, registered, reaped and started again under their names when
they die, and all stopped (none left behind) when the pool stops."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from lab.runtime.ownership import Ownership
from lab.worker_pool import WorkerPool
from tests.processes import alive, wait_until

pytestmark = pytest.mark.long(21)


def test_workers_register_come_back_after_a_kill_and_stop_with_the_pool(
    tmp_path: Path, zookeeper: str, redis: str
) -> None:
    (tmp_path / "instance-id").write_text("pooltest\n")
    env = {
        **os.environ,
        "LAB_DATA_DIR": str(tmp_path),
        "LAB_ZOOKEEPER": zookeeper,
        "LAB_REDIS": redis,
        "DJANGO_SETTINGS_MODULE": "lab.settings",
    }
    said: list[str] = []
    pool = WorkerPool(2, tmp_path / "workers", report=said.append, backoff_s=(0.2, 2.0), env=env)
    zk = Ownership(zookeeper, "pooltest")
    pool.start()
    try:
        assert wait_until(lambda: [w.name for w in zk.workers()] == ["1", "2"], 60), pool.log_dir
        pids = pool.pids()
        assert {w.name: w.pid for w in zk.workers()} == pids
        os.kill(pids["1"], signal.SIGKILL)
        assert wait_until(lambda: pool.pids().get("1") not in (None, pids["1"]), 30)
        assert pool.restarts == [("1", -signal.SIGKILL)]
        assert said == [f"Worker 1 (pid {pids['1']}) was killed by SIGKILL; starting it again in 0.2 s"]
        # The new one registers under the same name once the dead one's session has expired.
        assert wait_until(lambda: {w.name: w.pid for w in zk.workers()} == pool.pids(), 60)
        assert "worker 1: ready" in (tmp_path / "workers" / "1.log").read_text()
    finally:
        last = pool.pids()
        pool.stop()
        zk.close()
    assert not any(alive(pid) for pid in last.values())
    assert "worker 2: stopped" in (tmp_path / "workers" / "2.log").read_text()
