"""The managed Redis: starts on loopback, keeps nothing on disk, is reaped and started again, and
never outlives the process that started it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import redis as redis_client

from lab.redis_server import INSTALL_HINT, ManagedRedis, RedisNotInstalled, ping, redis_url
from tests.processes import alive, pids_mentioning, state, wait_until

REPO = Path(__file__).resolve().parent.parent


def test_session_fixture_server_answers(redis: str) -> None:
    client = redis_client.Redis.from_url(redis)
    try:
        assert client.ping()
        client.set("kafka-lab-test", "yes")
        assert client.get("kafka-lab-test") == b"yes"
    finally:
        client.close()


def test_starts_on_loopback_keeps_nothing_and_stop_leaves_no_process(tmp_path: Path) -> None:
    server = ManagedRedis(tmp_path)
    url = server.start()
    pid = server.pid
    assert pid is not None
    try:
        assert url.startswith("redis://127.0.0.1:")
        client = redis_client.Redis.from_url(url)
        assert client.config_get("bind")["bind"] == "127.0.0.1"
        assert client.config_get("save")["save"] == ""  # no RDB snapshots
        assert client.config_get("appendonly")["appendonly"] == "no"
        client.set("k", "v")
        client.close()
        assert server.log_path.is_file()
        assert server.config_path.parent == tmp_path
    finally:
        server.stop()
    assert not alive(pid)
    assert not ping(url.removeprefix("redis://").removesuffix("/0"))
    assert not (tmp_path / "dump.rdb").exists(), "a stopped server must leave no snapshot behind"
    assert pids_mentioning(str(tmp_path)) == []


def test_a_killed_server_is_reaped_and_started_again_on_its_port(tmp_path: Path) -> None:
    said: list[str] = []
    server = ManagedRedis(tmp_path, restart_backoff_s=(0.2, 5.0), report=said.append)
    url = server.start()
    try:
        first = server.pid
        assert first is not None
        os.kill(first, signal.SIGKILL)
        assert wait_until(lambda: state(first) is None, 10), f"pid {first} is {state(first)}"
        assert wait_until(lambda: len(server.restarts) == 1, 30)
        [restart] = server.restarts
        assert (restart.pid, restart.how, restart.error) == (first, "was killed by SIGKILL", "")
        assert restart.new_pid == server.pid != first
        assert server.url == url, "it must come back where every process looks"
        assert redis_client.Redis.from_url(url).ping()
        assert f"Redis (pid {first}) was killed by SIGKILL; starting it again in 0.2 s" in said[0]
        second = restart.new_pid
        assert second is not None
        os.kill(second, signal.SIGKILL)
        assert wait_until(lambda: len(server.restarts) == 2, 30)
        assert server.restarts[1].delay_s == 0.4  # dead again soon after a start: the wait doubles
    finally:
        server.stop()
    assert pids_mentioning(str(tmp_path)) == []


_HOLDER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from lab.redis_server import ManagedRedis
    server = ManagedRedis(Path(sys.argv[1]))
    server.start()
    print(server.pid, flush=True)
    time.sleep(600)
    """
)


def test_redis_dies_with_the_process_that_started_it(tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(tmp_path)], cwd=REPO, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None
        pid = int(holder.stdout.readline())
        assert alive(pid)
        holder.send_signal(signal.SIGKILL)
        holder.wait(10)
        assert wait_until(lambda: not alive(pid), 15), f"redis-server {pid} outlived its parent"
    finally:
        holder.kill()
        holder.wait()
        for pid in pids_mentioning(str(tmp_path)):
            os.kill(pid, signal.SIGKILL)


def test_missing_redis_says_what_to_install(tmp_path: Path) -> None:
    with pytest.raises(RedisNotInstalled, match=INSTALL_HINT):
        ManagedRedis(tmp_path, binary=str(tmp_path / "no-redis-server")).start()


def test_redis_url_takes_an_address_or_a_url() -> None:
    assert redis_url("127.0.0.1:6380") == "redis://127.0.0.1:6380/0"
    assert redis_url("redis://cache:6379/2") == "redis://cache:6379/2"
