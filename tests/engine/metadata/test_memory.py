"""The memory store's own promises: exact virtual timing and determinism.

Its ZooKeeper semantics are in test_contract.py, shared with the real server.
"""

from __future__ import annotations

from typing import Any

import pytest

from lab.engine.errors import IllegalArgument, IllegalState
from lab.engine.metadata.memory import MemorySession, MemoryStore
from lab.engine.metadata.store import (
    ConnectionLoss,
    CreateOp,
    LinkState,
    SessionExpired,
    SessionState,
    WatchEvent,
    WatchKind,
)
from lab.engine.scheduler import Scheduler
from lab.engine.tasks import Pending


class World:
    def __init__(self, latency_ms: int = 1) -> None:
        self.scheduler = Scheduler(seed=1)
        self.store = MemoryStore(self.scheduler, latency_ms=latency_ms)
        self.states: dict[str, list[SessionState]] = {}

    def open(self, name: str, timeout_ms: int = 1000) -> MemorySession:
        states = self.states.setdefault(name, [])
        return self.store.open_session(name=name, timeout_ms=timeout_ms, on_state=states.append)

    def at(self, time_ms: int) -> None:
        self.scheduler.run_until(time_ms)

    def done(self, pending: Pending[Any]) -> Any:
        while not pending.done():
            assert self.scheduler.step(), "nothing left to run"
        return pending.result()


def test_store_basics() -> None:
    w = World()
    assert (w.store.kind, w.store.realtime) == ("memory", False)
    assert w.store.drain() == 0
    w.store.begin_pacing(0)
    assert w.store.pace(1234) == 1234


def test_each_op_completes_latency_ms_after_it_is_issued() -> None:
    w = World(latency_ms=5)
    s = w.open("a")
    w.at(10)
    pending = s.create("/x", b"")
    w.at(14)
    assert not pending.done()
    w.at(15)
    assert pending.result() == "/x"
    assert w.states["a"] == [SessionState.CONNECTED]  # told at 0 ms, when opened


def test_watch_events_arrive_latency_ms_after_the_change() -> None:
    w = World(latency_ms=3)
    a, b = w.open("a"), w.open("b")
    fired: list[tuple[int, WatchEvent]] = []
    w.done(a.exists("/w", watch=lambda e: fired.append((w.scheduler.now_ms, e))))
    w.at(100)
    b.create("/w", b"")  # applied at once on the server
    w.at(102)
    assert fired == []
    w.at(103)
    assert fired == [(103, WatchEvent(kind=WatchKind.CREATED, path="/w"))]


def test_a_cut_session_expires_exactly_timeout_ms_after_the_cut() -> None:
    w = World()
    a, b = w.open("a", timeout_ms=1000), w.open("b", timeout_ms=60_000)
    w.done(a.create("/e", b"", ephemeral=True))
    gone: list[int] = []
    w.done(b.exists("/e", watch=lambda _e: gone.append(w.scheduler.now_ms)))
    w.at(500)
    a.set_link(LinkState.CUT)
    w.at(1499)
    still_there = b.exists("/e")  # read by the server at 1499
    zxid_before = w.store.last_zxid
    w.at(1500)
    assert w.store.last_zxid == zxid_before + 1  # the expiry, one transaction
    assert w.done(still_there) is not None
    assert w.done(b.exists("/e")) is None
    assert gone == [1501]  # deleted at 1500, told one latency later


def test_expiry_deletes_all_ephemerals_in_one_transaction() -> None:
    w = World()
    a, b = w.open("a", timeout_ms=100), w.open("b", timeout_ms=60_000)
    w.done(a.multi([CreateOp(path="/e1", ephemeral=True)]))
    w.done(a.create("/e2", b"", ephemeral=True))
    w.done(a.create("/kept", b""))
    zxid = w.store.last_zxid
    a.set_link(LinkState.HELD)
    w.at(w.scheduler.now_ms + 100)
    assert w.store.last_zxid == zxid + 1
    assert w.done(b.get_children("/")) == ["kept"]


def test_ops_in_flight_fail_at_the_cut_and_new_ones_fail_at_once() -> None:
    w = World(latency_ms=10)
    a = w.open("a")
    w.at(20)
    in_flight = a.create("/x", b"")
    a.set_link(LinkState.CUT)
    after = a.get("/x")
    w.at(20)
    assert isinstance(in_flight.exception(), ConnectionLoss)
    assert isinstance(after.exception(), ConnectionLoss)
    assert a.state is SessionState.SUSPENDED
    assert w.states["a"] == [SessionState.CONNECTED, SessionState.SUSPENDED]
    # The request had reached the server: ConnectionLoss means "outcome unknown".
    a.set_link(LinkState.OPEN)
    assert w.done(a.exists("/x")) is not None


def test_pausing_then_cutting_loses_what_the_paused_process_had_not_read() -> None:
    w = World(latency_ms=10)
    a = w.open("a", timeout_ms=5000)
    w.at(20)
    answered = a.create("/x", b"")
    a.set_link(LinkState.HELD)
    queued = a.create("/y", b"")
    w.at(100)
    assert not answered.done()
    assert not queued.done()
    a.set_link(LinkState.CUT)
    w.at(100)
    assert isinstance(answered.exception(), ConnectionLoss)
    assert isinstance(queued.exception(), ConnectionLoss)
    a.set_link(LinkState.OPEN)
    assert w.done(a.exists("/y")) is None  # never sent


def test_close_while_cut_off_leaves_expiry_to_the_server() -> None:
    w = World()
    a, b = w.open("a", timeout_ms=1000), w.open("b", timeout_ms=60_000)
    w.done(a.create("/e", b"", ephemeral=True))
    a.set_link(LinkState.CUT)
    cut_at = w.scheduler.now_ms
    a.close()
    assert a.state is SessionState.CLOSED
    w.at(cut_at + 999)
    assert w.done(b.exists("/e")) is not None
    w.at(cut_at + 1000)
    assert w.done(b.exists("/e")) is None
    assert w.states["a"] == [SessionState.CONNECTED, SessionState.SUSPENDED, SessionState.CLOSED]


def test_an_abandoned_session_answers_nothing() -> None:
    w = World(latency_ms=10)
    a = w.open("a", timeout_ms=1000)
    w.at(20)
    in_flight = a.create("/x", b"")
    a.abandon()
    w.at(1000)
    assert not in_flight.done()  # its owner is gone: nobody is told
    assert isinstance(a.get("/x").exception(), SessionExpired)
    assert a.state is SessionState.CLOSED
    a.set_link(LinkState.CUT)  # harmless
    a.close()


def test_runs_are_deterministic() -> None:
    def run() -> list[object]:
        w = World()
        a, b = w.open("a", timeout_ms=300), w.open("b")
        out: list[object] = [a.session_id, b.session_id]
        out.append(w.done(a.create("/s/", b"", sequential=True, make_parents=True)))
        out.append(w.done(a.create("/e", b"", ephemeral=True)))
        a.set_link(LinkState.CUT)
        w.at(1000)
        out.append(w.done(b.exists("/s")))
        out.append(w.store.last_zxid)
        return out

    assert run() == run()


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(IllegalArgument):
        MemoryStore(Scheduler(), latency_ms=-1)
    w = World()
    with pytest.raises(IllegalArgument):
        w.store.open_session(name="x", timeout_ms=0, on_state=lambda _s: None)
    with pytest.raises(IllegalArgument):
        w.open("a").set_link("cut")  # type: ignore[arg-type]


def test_a_closed_store_tells_nobody_and_opens_nothing() -> None:
    w = World()
    a = w.open("a")
    pending = a.create("/x", b"")
    w.store.close()
    w.at(100)
    assert not pending.done()
    assert w.states["a"] == []
    with pytest.raises(IllegalState):
        w.open("b")
