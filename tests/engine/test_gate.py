"""A broker's gate: a paused broker holds what reaches it, a dead one drops it, a running one runs it."""

from __future__ import annotations

from typing import Any

import pytest

from lab.engine.errors import RequestTimedOut
from lab.engine.gate import Gate, GatedSession, GateState
from lab.engine.metadata.memory import MemoryStore
from lab.engine.metadata.store import (
    CreateOp,
    LinkState,
    NodeExists,
    NoNode,
    SessionState,
    SetDataOp,
    WatchEvent,
    WatchKind,
)
from lab.engine.scheduler import Scheduler
from lab.engine.tasks import Pending

# Gate


def test_an_open_gate_runs_a_call_at_once() -> None:
    gate = Gate()
    ran: list[tuple[int, str]] = []
    gate(lambda a, b: ran.append((a, b)), 1, "x")
    assert ran == [(1, "x")]
    assert gate.state is GateState.OPEN


def test_a_held_gate_keeps_calls_and_runs_them_in_order_on_release() -> None:
    gate = Gate()
    ran: list[int] = []
    gate.hold()
    for i in range(4):
        gate(ran.append, i)
    assert ran == []
    assert gate.backlog == 4
    gate.release()
    assert ran == [0, 1, 2, 3]
    assert gate.backlog == 0
    assert gate.state is GateState.OPEN
    gate(ran.append, 4)
    assert ran == [0, 1, 2, 3, 4]


def test_a_call_that_holds_the_gate_again_during_release_keeps_the_rest_waiting() -> None:
    gate = Gate()
    ran: list[str] = []
    gate.hold()

    def pause_again() -> None:
        ran.append("a")
        gate.hold()

    gate(pause_again)
    gate(ran.append, "b")
    gate.release()
    assert ran == ["a"]  # paused again: "b" waits for the next release
    assert gate.backlog == 1
    gate.release()
    assert ran == ["a", "b"]


def test_a_closed_gate_drops_calls_and_what_it_held() -> None:
    gate = Gate()
    ran: list[int] = []
    gate.hold()
    gate(ran.append, 1)
    gate.close()
    assert gate.backlog == 0
    gate(ran.append, 2)
    gate.release()  # a dead broker does not come back by release
    gate.hold()
    assert ran == []
    assert gate.state is GateState.CLOSED


def test_release_on_an_open_gate_changes_nothing() -> None:
    gate = Gate()
    gate.release()
    assert gate.state is GateState.OPEN


def test_through_delivers_a_result_when_the_gate_lets_it() -> None:
    gate = Gate()
    source: Pending[int] = Pending()
    out = gate.through(source)
    gate.hold()
    source.resolve(9)
    assert not out.done()  # arrived, but the paused broker has not read it
    gate.release()
    assert out.result() == 9


def test_through_delivers_failures_too() -> None:
    gate = Gate()
    source: Pending[int] = Pending()
    out = gate.through(source)
    source.fail(RequestTimedOut("late"))
    with pytest.raises(RequestTimedOut):
        out.result()


def test_through_a_closed_gate_nothing_arrives() -> None:
    gate = Gate()
    gate.close()
    out = gate.through(Pending.resolved(1))
    assert not out.done()


# GatedSession on the memory store


def _session(gate: Gate) -> tuple[Scheduler, GatedSession, list[SessionState]]:
    s, _, session, states = _store_and_session(gate)
    return s, session, states


def _store_and_session(gate: Gate) -> tuple[Scheduler, MemoryStore, GatedSession, list[SessionState]]:
    s = Scheduler()
    store = MemoryStore(s, latency_ms=1)
    states: list[SessionState] = []
    raw = store.open_session(name="broker-1", timeout_ms=6000, on_state=states.append)
    s.run_until(10)
    return s, store, GatedSession(raw, gate), states


def _wait(s: Scheduler, pending: Pending[Any]) -> Any:
    while not pending.done() and s.step():
        pass
    return pending.result()


def test_a_gated_session_reads_and_writes_like_the_raw_session() -> None:
    gate = Gate()
    s, session, _ = _session(gate)
    assert session.state is SessionState.CONNECTED
    assert session.link is LinkState.OPEN
    assert session.session_id == session.raw.session_id
    assert _wait(s, session.create("/brokers/ids/1", b"one", ephemeral=True, make_parents=True)) == (
        "/brokers/ids/1"
    )
    data, stat = _wait(s, session.get("/brokers/ids/1"))
    assert data == b"one"
    assert stat.ephemeral_owner == session.session_id
    assert _wait(s, session.get_children("/brokers/ids")) == ["1"]
    assert _wait(s, session.set("/brokers/ids/1", b"uno", version=0)).version == 1
    assert _wait(s, session.exists("/brokers/ids/1")) is not None
    results = _wait(
        s,
        session.multi(
            [CreateOp(path="/brokers/ids/2", data=b"two"), SetDataOp(path="/brokers/ids/1", data=b"1")]
        ),
    )
    assert results[0] == "/brokers/ids/2"
    assert _wait(s, session.delete("/brokers/ids/2")) is None
    assert _wait(s, session.exists("/brokers/ids/2")) is None


def test_errors_come_through_the_gate_as_the_stores_errors() -> None:
    gate = Gate()
    s, session, _ = _session(gate)
    missing = session.get("/nowhere")
    with pytest.raises(NoNode):
        _wait(s, missing)
    _wait(s, session.create("/x"))
    with pytest.raises(NodeExists):
        _wait(s, session.create("/x"))


def test_a_held_gate_keeps_the_answer_until_release() -> None:
    gate = Gate()
    s, session, _ = _session(gate)
    _wait(s, session.create("/controller", b"1"))
    gate.hold()
    answer = session.get("/controller")
    s.run_until(s.now_ms + 1000)
    assert not answer.done()  # ZooKeeper answered; the paused broker has not read it
    assert gate.backlog == 1
    gate.release()
    assert answer.result()[0] == b"1"


def test_a_watch_fires_through_the_gate() -> None:
    gate = Gate()
    s, store, session, _ = _store_and_session(gate)
    _wait(s, session.create("/controller", b"1"))
    events: list[WatchEvent] = []
    _wait(s, session.exists("/controller", watch=events.append))
    _wait(s, session.get_children("/", watch=events.append))
    other = store.open_session(name="broker-2", timeout_ms=6000, on_state=lambda state: None)
    gate.hold()
    _wait(s, other.delete("/controller"))  # another broker's write fires our watches
    s.run_until(s.now_ms + 100)
    assert events == []
    gate.release()
    assert {(e.kind, e.path) for e in events} == {(WatchKind.DELETED, "/controller"), (WatchKind.CHILD, "/")}


def test_a_closed_gate_drops_answers_and_watches() -> None:
    gate = Gate()
    s, session, _ = _session(gate)
    _wait(s, session.create("/a"))
    events: list[WatchEvent] = []
    _wait(s, session.get("/a", watch=events.append))
    gate.close()
    answer = session.set("/a", b"new")
    s.run_until(s.now_ms + 1000)
    assert not answer.done()
    assert events == []
    assert session.raw.state is SessionState.CONNECTED  # the session itself is not the gate's business


def test_close_and_link_go_to_the_raw_session() -> None:
    gate = Gate()
    s, session, states = _session(gate)
    session.set_link(LinkState.CUT)
    assert session.link is LinkState.CUT
    session.set_link(LinkState.OPEN)
    session.close()
    s.run_until(s.now_ms + 100)
    assert session.state is SessionState.CLOSED
    assert states[-1] is SessionState.CLOSED
