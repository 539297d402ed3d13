"""What only the ZooKeeper store has: wall-clock pacing, threads and sockets, chroots, kazoo's errors.

Its ZooKeeper semantics are in test_contract.py, shared with the memory store.
"""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TypeVar

import pytest
from kazoo import exceptions as kx
from kazoo.client import KazooClient

from lab.engine.errors import IllegalArgument, IllegalState
from lab.engine.metadata.store import (
    BadArguments,
    BadVersion,
    ConnectionLoss,
    LinkState,
    MetadataError,
    NoChildrenForEphemerals,
    NodeExists,
    NoNode,
    NotEmpty,
    SessionExpired,
    SessionState,
)
from lab.engine.metadata.zookeeper import ZooKeeperStore, map_error
from lab.engine.tasks import Pending
from lab.zookeeper_server import ManagedZooKeeper
from tests.processes import wait_until
from tests.zkoutage import HeldRestart, kill

T = TypeVar("T")


def unique_chroot() -> str:
    return f"/kafka-lab-test/zk-{uuid.uuid4().hex[:12]}"


def settle(store: ZooKeeperStore, pending: Pending[T], within_s: float = 5.0) -> T:
    """Drain until ``pending`` is done (pacing on a throwaway anchor)."""
    store.begin_pacing(0)
    deadline = time.monotonic() + within_s
    while not pending.done():
        assert time.monotonic() < deadline, f"{pending!r} not done in {within_s} s"
        store.pace(int((deadline - time.monotonic()) * 1000))
        store.drain()
    return pending.result()


@pytest.fixture
def store(zookeeper: str) -> Iterator[ZooKeeperStore]:
    s = ZooKeeperStore(zookeeper, chroot=unique_chroot())
    yield s
    s.close()
    s.delete_chroot()


def test_kazoo_errors_map_to_zookeepers_names() -> None:
    cases = [
        (kx.NoNodeError(), NoNode),
        (kx.NodeExistsError(), NodeExists),
        (kx.BadVersionError(), BadVersion),
        (kx.NotEmptyError(), NotEmpty),
        (kx.NoChildrenForEphemeralsError(), NoChildrenForEphemerals),
        (kx.BadArgumentsError(), BadArguments),
        (kx.SessionExpiredError(), SessionExpired),
        (kx.ConnectionClosedError(), SessionExpired),
        (kx.ConnectionLoss(), ConnectionLoss),
        (kx.ConnectionDropped(), ConnectionLoss),
    ]
    for exc, ours in cases:
        mapped = map_error(exc, "/p")
        assert type(mapped) is ours
        assert mapped.path == "/p"
    other = map_error(kx.InvalidACLError(), "/p")
    assert type(other) is MetadataError
    assert "InvalidACLError" in str(other)


def test_bad_arguments_are_refused_before_connecting() -> None:
    with pytest.raises(IllegalArgument):
        ZooKeeperStore("127.0.0.1:2181", chroot="/")
    with pytest.raises(BadArguments):
        ZooKeeperStore("127.0.0.1:2181", chroot="lab")
    with pytest.raises(IllegalArgument):
        ZooKeeperStore("127.0.0.1:2181/lab", chroot="/lab")


def test_an_unreachable_server_is_a_connection_loss() -> None:
    unused = socket.create_server(("127.0.0.1", 0))
    port = unused.getsockname()[1]
    unused.close()
    started = time.monotonic()
    with pytest.raises(ConnectionLoss, match="cannot reach ZooKeeper"):
        ZooKeeperStore(f"127.0.0.1:{port}", chroot="/lab", connect_timeout_s=0.5)
    assert time.monotonic() - started < 5


@pytest.mark.zookeeper
def test_store_basics(store: ZooKeeperStore) -> None:
    assert (store.kind, store.realtime) == ("zookeeper", True)
    with pytest.raises(IllegalArgument):
        store.open_session(name="x", timeout_ms=0, on_state=lambda _s: None)
    with pytest.raises(IllegalState):
        store.pace(100)  # not anchored yet


@pytest.mark.zookeeper
def test_pace_waits_in_wall_time_and_wakes_when_something_arrives(store: ZooKeeperStore) -> None:
    store.begin_pacing(1000)
    started = time.monotonic()
    assert store.pace(1200) == 1200
    assert time.monotonic() - started >= 0.19

    states: list[SessionState] = []
    session = store.open_session(name="a", timeout_ms=4000, on_state=states.append)
    pending = session.get("/")
    store.begin_pacing(0)
    started = time.monotonic()
    reached = store.pace(60_000)  # kazoo's answer (or the CONNECTED notice) ends the wait
    assert time.monotonic() - started < 2
    assert reached < 2000
    assert store.drain() >= 1
    settle(store, pending)
    assert states == [SessionState.CONNECTED]
    assert store.drain() == 0


@pytest.mark.zookeeper
def test_chroot_is_created_and_deleted(zookeeper: str) -> None:
    chroot = unique_chroot()
    store = ZooKeeperStore(zookeeper, chroot=chroot)
    session = store.open_session(name="a", timeout_ms=4000, on_state=lambda _s: None)
    settle(store, session.create("/brokers/ids/1", b"x", make_parents=True))
    admin = KazooClient(hosts=zookeeper)
    admin.start(timeout=10)
    try:
        assert admin.get(chroot + "/brokers/ids/1")[0] == b"x"
        store.close()
        store.delete_chroot()
        assert admin.exists(chroot) is None
        store.delete_chroot()  # already gone: fine
    finally:
        admin.stop()
        admin.close()


@pytest.mark.zookeeper
def test_without_the_proxy_sessions_work_but_links_cannot_be_faulted(zookeeper: str) -> None:
    store = ZooKeeperStore(zookeeper, chroot=unique_chroot(), proxy=False)
    try:
        session = store.open_session(name="a", timeout_ms=4000, on_state=lambda _s: None)
        assert session.proxy is None
        assert settle(store, session.create("/x", b"")) == "/x"
        with pytest.raises(IllegalState, match="no proxy"):
            session.set_link(LinkState.CUT)
    finally:
        store.close()
        store.delete_chroot()


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.zookeeper
def test_close_stops_every_thread_and_socket(zookeeper: str) -> None:
    threads_before = set(threading.enumerate())
    fds_before = _open_fds()
    chroot = unique_chroot()
    store = ZooKeeperStore(zookeeper, chroot=chroot)
    sessions = [store.open_session(name=f"s{i}", timeout_ms=4000, on_state=lambda _s: None) for i in range(4)]
    settle(store, sessions[0].create("/e", b"", ephemeral=True))
    sessions[1].set_link(LinkState.CUT)
    sessions[2].set_link(LinkState.HELD)
    sessions[3].abandon()
    assert len(set(threading.enumerate()) - threads_before) >= 4

    started = time.monotonic()
    store.close()
    assert time.monotonic() - started < 5
    assert set(threading.enumerate()) - threads_before == set()
    assert _open_fds() <= fds_before
    with pytest.raises(IllegalState):
        store.open_session(name="late", timeout_ms=4000, on_state=lambda _s: None)

    # The live session was closed cleanly: its ephemeral went at once.
    other = ZooKeeperStore(zookeeper, chroot=chroot)
    try:
        session = other.open_session(name="check", timeout_ms=4000, on_state=lambda _s: None)
        assert settle(other, session.exists("/e")) is None
    finally:
        other.close()
        other.delete_chroot()


# -- the server killed and back ------------------------------------------------------------------


def test_a_killed_server_is_an_outage_until_it_is_back_and_a_known_session_carries_on(
    tmp_path: Path,
) -> None:
    held = HeldRestart()
    server = ManagedZooKeeper(tmp_path / "zookeeper", restart_backoff_s=(0.2, 2.0), report=held)
    server.start(timeout_s=60)
    store = ZooKeeperStore(server.hosts, chroot=unique_chroot())
    told: list[str | None] = []
    store.on_outage(told.append)
    states: list[SessionState] = []
    try:
        survivor = store.open_session(name="broker-1", timeout_ms=6000, on_state=states.append)
        store.open_session(name="broker-2", timeout_ms=6000, on_state=lambda s: None)
        settle(store, survivor.create("/mine", b"kept", ephemeral=True))
        session_id = survivor.session_id
        assert store.outage() is None

        kill(server)  # its restart waits for held.release()
        assert wait_until(lambda: store.outage() is not None, 10)
        outage = store.outage()
        assert outage == f"ZooKeeper is not answering: the lab lost every connection to {server.hosts}"
        assert wait_until(lambda: bool(store.drain() + len(told)), 10)
        assert told == [outage]

        # A connection that reaches the restarted server while it still loads its data can hang for a
        # whole session timeout (ZooKeeper 3.8 fails to close it); ours waits until the server serves.
        survivor.set_link(LinkState.CUT)
        held.release()
        assert wait_until(lambda: len(server.restarts) == 1, 90)
        survivor.set_link(LinkState.OPEN)
        assert wait_until(lambda: store.drain() >= 0 and survivor.state is SessionState.CONNECTED, 10)
        assert states == [SessionState.CONNECTED, SessionState.SUSPENDED, SessionState.CONNECTED]
        assert survivor.session_id == session_id  # the restarted server still knew it
        data, stat = settle(store, survivor.get("/mine"))
        assert data == b"kept"
        assert stat.ephemeral_owner == session_id
        assert wait_until(lambda: store.drain() >= 0 and len(told) == 2, 10)
        assert told == [outage, None]
        assert store.outage() is None
    finally:
        store.close()
        server.stop()


def test_sessions_the_lab_cut_off_or_holds_do_not_make_an_outage(store: ZooKeeperStore) -> None:
    cut = store.open_session(name="broker-2", timeout_ms=1500, on_state=lambda s: None)
    held = store.open_session(name="broker-3", timeout_ms=1500, on_state=lambda s: None)
    cut.set_link(LinkState.CUT)
    held.set_link(LinkState.HELD)  # a paused broker: its pings go unanswered, kazoo drops the connection
    assert wait_until(lambda: not (cut._client.connected or held._client.connected), 10)  # type: ignore[attr-defined]
    assert store.outage() is None, "the lab cut these links itself: ZooKeeper still answers"
