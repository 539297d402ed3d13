"""The managed ZooKeeper: starts, answers, keeps short sessions, and never outlives us."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from lab import zookeeper_server
from lab.managed_server import free_port
from lab.zookeeper_server import (
    INSTALL_HINT,
    ManagedZooKeeper,
    ZooKeeperNotInstalled,
    ZooKeeperStartError,
    find_install,
    four_letter_word,
    split_hosts,
    zookeeper_hosts,
    zookeeper_status,
)
from tests.processes import alive, group_members, pids_mentioning, state, wait_until

pytestmark = pytest.mark.long(22)

REPO = Path(__file__).resolve().parent.parent


# -- helpers -------------------------------------------------------------------------------------


def _kazoo(hosts: str, timeout_s: float = 10.0) -> KazooClient:
    client = KazooClient(hosts=hosts, timeout=timeout_s)
    client.start(timeout=10)
    return client


class _CuttableProxy:
    """A loopback TCP proxy to ZooKeeper whose ``cut()`` drops every connection and refuses new ones."""

    def __init__(self, target: str) -> None:
        host, _, port = target.rpartition(":")
        self._target = (host, int(port))
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self._listener.getsockname()[1]}"
        self._sockets: list[socket.socket] = []
        self._cut = False
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                if self._cut:
                    client.close()
                    return
                upstream = socket.create_connection(self._target)
                self._sockets += [client, upstream]
            for src, dst in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(src, dst), daemon=True).start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass

    def cut(self) -> None:
        with self._lock:
            self._cut = True
            # close() alone does not wake a thread blocked in accept(); shutdown() does.
            with contextlib.suppress(OSError):
                self._listener.shutdown(socket.SHUT_RDWR)
            self._listener.close()
            for sock in self._sockets:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()


@pytest.fixture(scope="module")
def managed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ManagedZooKeeper]:
    """A server of our own, for tests about our configuration (the session one may be LAB_ZOOKEEPER)."""
    server = ManagedZooKeeper(tmp_path_factory.mktemp("managed-zookeeper"))
    server.start(timeout_s=60)
    yield server
    server.stop()


# -- starting and answering ----------------------------------------------------------------------


def test_session_fixture_server_answers_kazoo(zookeeper: str) -> None:
    client = _kazoo(zookeeper)
    try:
        path = f"/test-fixture-{uuid.uuid4().hex}"
        client.create(path, b"hello", ephemeral=True)
        data, stat = client.get(path)
        assert data == b"hello"
        assert stat.ephemeralOwner == client.client_id[0]
    finally:
        client.stop()
        client.close()


def test_starts_answers_and_stop_leaves_no_process(tmp_path: Path) -> None:
    server = ManagedZooKeeper(tmp_path)
    started = time.monotonic()
    hosts = server.start(timeout_s=60)
    client = _kazoo(hosts)
    elapsed = time.monotonic() - started
    client.stop()
    client.close()
    pid = server.pid
    assert pid is not None
    assert hosts == server.hosts
    assert re.fullmatch(r"127\.0\.0\.1:\d+", hosts)
    assert elapsed < 10, f"ZooKeeper took {elapsed:.1f} s to answer kazoo"
    assert os.getpgid(pid) == pid, "java should lead its own process group"
    assert server.running

    server.stop()

    assert not alive(pid)
    assert group_members(pid) == []
    assert not server.running
    assert server.pid is None
    server.stop()  # a second stop is harmless


def _negotiated_timeout_ms(hosts: str, client: KazooClient) -> int:
    """The session timeout the server granted ``client``, from the server's ``cons`` list."""
    session = f"sid=0x{client.client_id[0]:x},"
    for line in four_letter_word(hosts, "cons").splitlines():
        if session in line:
            found = re.search(r"\bto=(\d+)", line)
            assert found, line
            return int(found.group(1))
    raise AssertionError(f"session {session} not in cons")


def test_config_allows_lab_sized_sessions(managed: ManagedZooKeeper) -> None:
    conf = four_letter_word(managed.hosts, "conf")
    assert re.search(r"^tickTime=200$", conf, re.M)
    assert re.search(r"^minSessionTimeout=400$", conf, re.M)
    assert re.search(r"^maxSessionTimeout=60000$", conf, re.M)
    assert "clientPortAddress=127.0.0.1" in managed.config_path.read_text()


@pytest.mark.parametrize(
    ("requested_s", "negotiated_ms"),
    [(1.5, 1500), (6.0, 6000), (0.1, 400)],  # below the minimum, ZooKeeper raises it to minSessionTimeout
)
def test_negotiated_session_timeout(
    managed: ManagedZooKeeper, requested_s: float, negotiated_ms: int
) -> None:
    client = _kazoo(managed.hosts, timeout_s=requested_s)
    try:
        assert _negotiated_timeout_ms(managed.hosts, client) == negotiated_ms
    finally:
        client.stop()
        client.close()


def test_session_expires_on_the_server_when_its_connection_is_cut(managed: ManagedZooKeeper) -> None:
    proxy = _CuttableProxy(managed.hosts)
    broker = _kazoo(proxy.address, timeout_s=1.0)
    observer = _kazoo(managed.hosts)
    path = f"/brokers-test-{uuid.uuid4().hex}"
    try:
        assert _negotiated_timeout_ms(managed.hosts, broker) == 1000
        broker.create(path, b"1", ephemeral=True)
        deleted = threading.Event()

        def watch(event: object) -> None:
            deleted.set()

        assert observer.exists(path, watch=watch) is not None
        cut_at = time.monotonic()
        proxy.cut()
        assert deleted.wait(10), "the ephemeral node outlived its 1 s session by 10 s"
        elapsed = time.monotonic() - cut_at
        assert observer.exists(path) is None
        # The server waited for the session to time out; it did not drop it with the connection.
        assert 0.3 < elapsed < 5, f"session expired {elapsed:.2f} s after the cut"
    finally:
        broker.stop()
        broker.close()
        observer.stop()
        observer.close()


def test_files_live_under_base_dir_and_logs_go_to_a_file(managed: ManagedZooKeeper) -> None:
    base = managed.base_dir
    assert managed.config_path == base / "zoo.cfg"
    assert (managed.data_dir / "version-2").is_dir()
    assert "binding to port /127.0.0.1:" in managed.log_path.read_text()
    # Nothing on stdout/stderr (it would reach our terminal): no slf4j warnings, no log lines.
    assert (base / "zookeeper.out").read_text() == ""


def test_restart_keeps_data_and_fresh_start_clears_it(tmp_path: Path) -> None:
    with ManagedZooKeeper(tmp_path) as server:
        client = _kazoo(server.hosts)
        client.create("/kept", b"yes")
        client.stop()
        client.close()
    with ManagedZooKeeper(tmp_path) as server:
        client = _kazoo(server.hosts)
        assert client.get("/kept")[0] == b"yes"
        client.stop()
        client.close()
    with ManagedZooKeeper(tmp_path, fresh=True) as server:
        client = _kazoo(server.hosts)
        assert client.exists("/kept") is None
        client.stop()
        client.close()


# -- never an orphan -----------------------------------------------------------------------------

_HOLDER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from lab.zookeeper_server import ManagedZooKeeper
    server = ManagedZooKeeper(Path(sys.argv[1]))
    server.start(timeout_s=60)
    print(server.pid, flush=True)
    if sys.argv[2] == "exit":
        sys.exit(0)  # no stop(): atexit must do it
    time.sleep(600)
    """
)


def _run_holder(base_dir: Path, mode: str) -> tuple[subprocess.Popen[str], int]:
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(base_dir), mode],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None
    line = holder.stdout.readline()
    assert line.strip().isdigit(), f"holder did not start ZooKeeper: {line!r}"
    return holder, int(line)


@pytest.mark.parametrize("how", ["SIGKILL", "SIGTERM"])
def test_zookeeper_dies_with_the_process_that_started_it(tmp_path: Path, how: str) -> None:
    holder, java_pid = _run_holder(tmp_path, "sleep")
    try:
        assert alive(java_pid)
        holder.send_signal(getattr(signal, how))
        holder.wait(10)
        assert wait_until(lambda: not alive(java_pid), 15), f"java {java_pid} outlived its parent"
        assert pids_mentioning(str(tmp_path)) == []
    finally:
        holder.kill()
        holder.wait()
        for pid in pids_mentioning(str(tmp_path)):
            os.kill(pid, signal.SIGKILL)


def test_a_server_started_off_the_main_thread_outlives_that_thread(tmp_path: Path) -> None:
    server = ManagedZooKeeper(tmp_path)
    starter = threading.Thread(target=server.start)
    starter.start()
    starter.join(60)
    try:
        assert server.running
        # The death signal follows the thread that forked: armed from a worker, it would have
        # ended java when the worker exited (java stops within a second of SIGTERM).
        pid = server.pid
        assert pid is not None
        assert not wait_until(lambda: not alive(pid), 2.0), "ZooKeeper died with the thread that started it"
        assert "Mode: standalone" in four_letter_word(server.hosts, "srvr")
    finally:
        server.stop()


def test_normal_exit_without_stop_stops_zookeeper(tmp_path: Path) -> None:
    holder, java_pid = _run_holder(tmp_path, "exit")
    try:
        assert holder.wait(30) == 0
        # atexit stopped and reaped it before the holder exited: no waiting needed.
        assert not alive(java_pid)
        assert pids_mentioning(str(tmp_path)) == []
    finally:
        for pid in pids_mentioning(str(tmp_path)):
            os.kill(pid, signal.SIGKILL)


# -- a server that dies on its own ---------------------------------------------------------------


def test_a_killed_server_is_reaped_and_started_again_with_backoff(tmp_path: Path) -> None:
    said: list[str] = []
    server = ManagedZooKeeper(tmp_path, restart_backoff_s=(0.3, 5.0), report=said.append)
    hosts = server.start(timeout_s=60)
    # The session must outlast the restart: a JVM starting on a loaded machine can take longer than
    # 10 s before it answers, and the session is only kept if the client is back before it expires.
    client = _kazoo(hosts, timeout_s=40.0)
    try:
        client.create("/kept", b"yes")
        session = client.client_id[0]
        first = server.pid
        assert first is not None
        os.kill(first, signal.SIGKILL)
        # Its exit is collected at once: no zombie left behind, restarted or not.
        assert wait_until(lambda: state(first) is None, 10), f"pid {first} is {state(first)}"
        assert wait_until(lambda: len(server.restarts) == 1, 90)
        [restart] = server.restarts
        assert (restart.pid, restart.how, restart.error) == (first, "was killed by SIGKILL", "")
        assert restart.new_pid == server.pid != first
        assert restart.started_at is not None
        assert restart.started_at - restart.reaped_at >= restart.delay_s == 0.3
        assert server.running
        assert server.hosts == hosts, "it must come back where every client looks"
        assert f"ZooKeeper (pid {first}) was killed by SIGKILL; starting it again in 0.3 s" in said[0]
        # Its data came back, and the client's session with it (the server restarts session timers).
        assert wait_until(lambda: client.connected, 30)
        assert client.get("/kept")[0] == b"yes"
        assert client.client_id[0] == session

        # Dead again right after a start: the wait doubles.
        second = restart.new_pid
        assert second is not None
        os.kill(second, signal.SIGKILL)
        assert wait_until(lambda: len(server.restarts) == 2, 90)
        assert server.restarts[1].delay_s == 0.6
        assert state(second) is None
        assert server.running
    finally:
        client.stop()
        client.close()
        server.stop()
    assert pids_mentioning(str(tmp_path)) == []


def test_stop_during_the_backoff_starts_nothing(tmp_path: Path) -> None:
    said: list[str] = []
    server = ManagedZooKeeper(tmp_path, restart_backoff_s=(30.0, 30.0), report=said.append)
    server.start(timeout_s=60)
    pid = server.pid
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    assert wait_until(lambda: any("starting it again in 30 s" in line for line in said), 10)
    server.stop()  # wakes the supervisor out of its wait
    assert server.restarts == ()
    assert not server.running
    assert state(pid) is None
    assert pids_mentioning(str(tmp_path)) == []


def test_without_restart_a_dead_server_is_still_reaped(tmp_path: Path) -> None:
    said: list[str] = []
    server = ManagedZooKeeper(tmp_path, restart=False, report=said.append)
    server.start(timeout_s=60)
    pid = server.pid
    assert pid is not None
    try:
        os.kill(pid, signal.SIGKILL)
        assert wait_until(lambda: bool(said), 10)  # said once its exit is collected
        assert said == [f"ZooKeeper (pid {pid}) was killed by SIGKILL"]
        assert state(pid) is None
        assert not server.running
    finally:
        server.stop()


# -- clear errors --------------------------------------------------------------------------------


def test_missing_zookeeper_jars_say_what_to_install(tmp_path: Path) -> None:
    server = ManagedZooKeeper(tmp_path / "zk", java_dir=tmp_path / "no-java-here")
    with pytest.raises(ZooKeeperNotInstalled, match=re.escape(INSTALL_HINT)):
        server.start()
    assert not (tmp_path / "zk").exists(), "a failed start must leave nothing behind"
    assert not server.running


def test_missing_java_says_what_to_install(tmp_path: Path) -> None:
    with pytest.raises(ZooKeeperNotInstalled, match=r"Java is not installed.*apt-get install -y zookeeper"):
        find_install(java=str(tmp_path / "bin" / "java"))


def test_failed_start_reports_the_log_tail_and_leaves_nothing(tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        server = ManagedZooKeeper(tmp_path, port=port)
        with pytest.raises(ZooKeeperStartError) as failure:
            server.start(timeout_s=30)
    message = str(failure.value)
    assert f"127.0.0.1:{port}" in message
    assert "Address already in use" in message
    assert str(server.log_path) in message
    assert not server.running
    assert pids_mentioning(str(tmp_path)) == []


def test_session_timeout_bounds_are_checked(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="min_session_timeout_ms"):
        ManagedZooKeeper(tmp_path, min_session_timeout_ms=5000, max_session_timeout_ms=1000)


# -- status and hosts ----------------------------------------------------------------------------


def test_status_of_a_running_server(managed: ManagedZooKeeper) -> None:
    status = zookeeper_status(managed.hosts)
    assert status.answered
    assert status.address == managed.hosts
    assert status.version is not None
    assert status.version.startswith("3.8")
    assert status.mode == "standalone"
    assert status.latency_ms is not None
    assert status.latency_ms > 0
    assert int(status.stats["Node count"]) >= 1
    assert status.error is None


def test_status_when_nothing_listens() -> None:
    hosts = f"127.0.0.1:{free_port()}"
    status = zookeeper_status(hosts)
    assert not status.answered
    assert status.version is None
    assert status.error is not None
    assert hosts in status.error


def test_status_tries_every_server_of_an_ensemble(managed: ManagedZooKeeper) -> None:
    dead = f"127.0.0.1:{free_port()}"
    status = zookeeper_status(f"{dead},{managed.hosts}/lab-chroot")
    assert status.answered
    assert status.address == managed.hosts


def test_split_hosts() -> None:
    assert split_hosts("a:1, b:2/kafka") == (["a:1", "b:2"], "/kafka")
    assert split_hosts("zk1") == (["zk1:2181"], "")
    assert split_hosts("") == ([], "")


def test_lab_zookeeper_is_used_and_starts_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(zookeeper_server, "_process_server", None)
    monkeypatch.setenv("LAB_ZOOKEEPER", "zk1:2181,zk2:2181/lab")
    assert zookeeper_hosts() == "zk1:2181,zk2:2181/lab"
    assert zookeeper_server._process_server is None


def test_zookeeper_hosts_starts_one_server_per_process(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(zookeeper_server, "_process_server", None)
    monkeypatch.delenv("LAB_ZOOKEEPER", raising=False)
    try:
        first = zookeeper_hosts(tmp_path)
        assert zookeeper_hosts(tmp_path / "ignored") == first
        assert zookeeper_status(first).answered
    finally:
        server = zookeeper_server._process_server
        assert server is not None
        server.stop()
