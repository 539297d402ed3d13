"""Each broker's ZooKeeper session as ZooKeeper sees it: the registration znode and the countdown."""

from __future__ import annotations

from typing import Any

from lab.visuals.sessions import sessions_view
from tests.visuals.snapshots import broker, three_brokers

SESSIONS = {1: 0x101, 2: 0x102, 3: 0x103}


def _broker(bid: int, state: str = "alive", **kw: Any) -> dict[str, Any]:
    entry = broker(bid, state, controller=bid == 1, session=kw.pop("session", "connected"))
    entry.update(
        session_id=SESSIONS[bid],
        session_timeout_ms=3000,
        session_expires_in_ms=None,
        previous_session_id=None,
        previous_session_expires_in_ms=None,
    )
    entry.update(kw)
    return entry


def _tree(*registered: int, owners: dict[int, int] | None = None) -> list[dict[str, Any]]:
    owners = {**SESSIONS, **(owners or {})}
    nodes: list[dict[str, Any]] = [
        {"path": "/brokers", "ephemeral_owner": 0},
        {"path": "/brokers/ids", "ephemeral_owner": 0},
    ]
    nodes += [
        {"path": f"/brokers/ids/{b}", "ephemeral_owner": owners[b], "ephemeral": True} for b in registered
    ]
    return nodes


def _lines(brokers: list[dict[str, Any]], tree: list[dict[str, Any]] | None) -> dict[int, Any]:
    view = sessions_view(three_brokers(brokers=brokers), tree, {"zookeeper.session.timeout.ms": "3000"})
    return view.by_id


def test_a_registered_broker_that_zookeeper_hears_is_connected() -> None:
    lines = _lines([_broker(1), _broker(2), _broker(3)], _tree(1, 2, 3))
    assert {b: (line.state, line.label, line.znode) for b, line in lines.items()} == dict.fromkeys(
        (1, 2, 3), ("connected", "session connected", True)
    )
    assert "zookeeper.session.timeout.ms: lab 3000, Kafka 18000" in lines[1].title


def test_a_paused_broker_whose_znode_is_gone_is_expired_whatever_it_believes() -> None:
    # The paused broker still thinks "connected"; ZooKeeper expired it and deleted its znode.
    lines = _lines([_broker(1), _broker(2, "paused", session="connected"), _broker(3)], _tree(1, 3))
    two = lines[2]
    assert (two.state, two.label, two.znode) == ("expired", "session expired: /brokers/ids/2 gone", False)
    assert "the paused broker does not know yet" in two.title
    assert two.glyph == "✕"


def test_after_a_kill_the_session_counts_down_to_its_expiry() -> None:
    killed = _broker(2, "killed", session="closed", session_expires_in_ms=2345)
    two = _lines([_broker(1), killed, _broker(3)], _tree(1, 2, 3))[2]
    assert (two.state, two.label, two.expires_in_ms) == ("unheard", "session expires in 2.4 s", 2400)
    assert "broker 2 was killed" in two.title
    assert "zookeeper.session.timeout.ms (3000 ms)" in two.title
    # Due, but the tree still shows the znode: ZooKeeper expires it at its next tick.
    due = _lines([_broker(1), {**killed, "session_expires_in_ms": 0}, _broker(3)], _tree(1, 2, 3))[2]
    assert (due.state, due.label, due.expires_in_ms) == ("expiring", "session expiring…", 0)
    # Then the znode is gone.
    gone = _lines([_broker(1), {**killed, "session_expires_in_ms": None}, _broker(3)], _tree(1, 3))[2]
    assert (gone.state, gone.label) == ("expired", "session expired: /brokers/ids/2 gone")


def test_a_paused_broker_counts_down_too() -> None:
    paused = _broker(3, "paused", session_expires_in_ms=999)
    three = _lines([_broker(1), _broker(2), paused], _tree(1, 2, 3))[3]
    assert (three.state, three.label) == ("unheard", "session expires in 1.0 s")
    assert "sends no heartbeats" in three.title


def test_a_restarted_broker_waits_out_its_killed_runs_session() -> None:
    restarted = _broker(
        2, "starting", session_id=0x202, previous_session_id=0x102, previous_session_expires_in_ms=1200
    )
    two = _lines([_broker(1), restarted, _broker(3)], _tree(1, 2, 3))[2]
    assert (two.state, two.label, two.expires_in_ms) == ("waiting", "old session expires in 1.2 s", 1200)
    assert "only then can broker 2 register again" in two.title
    registered = _lines(
        [_broker(1), {**restarted, "state": "alive"}, _broker(3)], _tree(1, 2, 3, owners={2: 0x202})
    )
    assert registered[2].state == "connected"


def test_a_cleanly_stopped_broker_has_no_session_and_no_znode() -> None:
    stopped = _broker(3, "stopped", session="closed")
    three = _lines([_broker(1), _broker(2), stopped], _tree(1, 2))[3]
    assert (three.state, three.label) == ("closed", "no session: /brokers/ids/3 gone")


def test_before_the_tree_is_read_only_the_brokers_side_is_known() -> None:
    lines = _lines(
        [_broker(1), _broker(2, "killed", session="closed", session_expires_in_ms=500), _broker(3)], None
    )
    assert (lines[1].state, lines[1].label, lines[1].znode) == ("unknown", "session connected", None)
    assert lines[2].label == "session expires in 0.5 s"
