"""The MetadataStore contract: the same tests on the memory store and on a real ZooKeeper.

What ZooKeeper does is the reference: where the memory store is checked here,
the same lines have passed against the real server.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from lab.engine.metadata.store import (
    BadArguments,
    BadVersion,
    CheckOp,
    ConnectionLoss,
    CreateOp,
    DeleteOp,
    LinkState,
    NoChildrenForEphemerals,
    NodeExists,
    NoNode,
    NotEmpty,
    SessionExpired,
    SessionState,
    SetDataOp,
    Stat,
    WatchEvent,
    WatchKind,
)
from lab.engine.tasks import Pending
from tests.engine.metadata.conftest import Harness

CONNECTED = SessionState.CONNECTED
SUSPENDED = SessionState.SUSPENDED
EXPIRED = SessionState.EXPIRED
CLOSED = SessionState.CLOSED


def event(kind: WatchKind, path: str) -> WatchEvent:
    return WatchEvent(kind=kind, path=path)


def test_create_get_set_delete_with_versions(harness: Harness) -> None:
    h = harness
    s = h.open("a").session

    assert h.wait(s.create("/n", b"one")) == "/n"
    data, stat = h.wait(s.get("/n"))
    assert data == b"one"
    assert (stat.version, stat.data_length, stat.num_children, stat.ephemeral_owner) == (0, 3, 0, 0)
    assert stat.czxid == stat.mzxid

    stat2 = h.wait(s.set("/n", b"two", version=0))
    assert stat2.version == 1
    assert stat2.czxid == stat.czxid
    assert stat2.mzxid > stat.mzxid

    with pytest.raises(BadVersion):
        h.wait(s.set("/n", b"three", version=0))
    assert h.wait(s.get("/n"))[0] == b"two"
    assert h.wait(s.set("/n", b"three")).version == 2  # -1: any version

    with pytest.raises(BadVersion):
        h.wait(s.delete("/n", version=1))
    assert h.wait(s.exists("/n")) is not None
    h.wait(s.delete("/n", version=2))
    assert h.wait(s.exists("/n")) is None


def test_errors_by_zookeeper_name(harness: Harness) -> None:
    h = harness
    s = h.open("a").session
    h.wait(s.create("/p", b""))
    h.wait(s.create("/p/c", b""))

    with pytest.raises(NodeExists) as exists:
        h.wait(s.create("/p", b""))
    assert exists.value.path == "/p"
    with pytest.raises(NoNode):
        h.wait(s.create("/missing/child", b""))
    with pytest.raises(NoNode) as missing:
        h.wait(s.get("/missing"))
    assert missing.value.path == "/missing"
    with pytest.raises(NoNode):
        h.wait(s.set("/missing", b"x"))
    with pytest.raises(NoNode):
        h.wait(s.delete("/missing"))
    with pytest.raises(NoNode):
        h.wait(s.get_children("/missing"))
    with pytest.raises(NotEmpty):
        h.wait(s.delete("/p"))
    for bad in ("p", "/p/", "/p//c", "/p/./c", "/p/../c", ""):
        with pytest.raises(BadArguments):
            h.wait(s.create(bad, b""))
    with pytest.raises(BadArguments):
        h.wait(s.delete("/"))
    with pytest.raises(BadArguments):
        h.wait(s.set("/p", "text"))  # type: ignore[arg-type]
    # Nothing above changed the tree.
    assert h.wait(s.get_children("/")) == ["p"]
    assert h.wait(s.get_children("/p")) == ["c"]


def test_stat_tracks_children_and_zxids(harness: Harness) -> None:
    h = harness
    s = h.open("a").session
    h.wait(s.create("/p", b"abc"))
    first = h.wait(s.exists("/p"))
    assert first is not None
    h.wait(s.create("/p/a", b""))
    h.wait(s.create("/p/b", b""))
    h.wait(s.delete("/p/a"))
    stat = h.wait(s.exists("/p"))
    assert stat is not None
    assert stat.num_children == 1
    assert stat.cversion == 3  # two creates and a delete under it
    assert stat.version == 0  # children do not change the parent's data version
    assert stat.mzxid == first.mzxid
    child = h.wait(s.exists("/p/b"))
    assert child is not None
    assert child.czxid > first.czxid


def test_sequential_names_count_the_children_ever_created(harness: Harness) -> None:
    # ZooKeeper stores cversion as the number of creates (the sequential counter)
    # and reports it as creates plus deletes.
    h = harness
    s = h.open("a").session
    h.wait(s.create("/q", b""))
    assert h.wait(s.create("/q/item-", b"", sequential=True)) == "/q/item-0000000000"
    h.wait(s.create("/q/x", b""))
    assert h.wait(s.create("/q/item-", b"", sequential=True)) == "/q/item-0000000002"
    h.wait(s.delete("/q/x"))
    stat = h.wait(s.exists("/q"))
    assert stat is not None
    assert stat.cversion == 4
    assert h.wait(s.create("/q/", b"", sequential=True)) == "/q/0000000003"
    h.wait(s.delete("/q/item-0000000000"))
    assert h.wait(s.create("/q/item-", b"", sequential=True)) == "/q/item-0000000004"
    assert h.wait(s.get_children("/q")) == ["0000000003", "item-0000000002", "item-0000000004"]
    stat = h.wait(s.exists("/q"))
    assert stat is not None
    assert (stat.cversion, stat.num_children) == (7, 3)


def test_make_parents_and_recursive_delete(harness: Harness) -> None:
    h = harness
    s = h.open("a").session
    assert h.wait(s.create("/a/b/c", b"leaf", make_parents=True)) == "/a/b/c"
    assert h.wait(s.get("/a/b"))[0] == b""
    assert h.wait(s.get("/a/b/c"))[0] == b"leaf"
    h.wait(s.create("/a/b2", b""))

    with pytest.raises(BadVersion):
        h.wait(s.delete("/a", version=4, recursive=True))
    assert h.wait(s.get_children("/a")) == ["b", "b2"]

    h.wait(s.delete("/a", recursive=True))
    assert h.wait(s.exists("/a")) is None
    with pytest.raises(NoNode):
        h.wait(s.delete("/a", recursive=True))


def test_ephemeral_nodes_belong_to_their_session_and_have_no_children(harness: Harness) -> None:
    h = harness
    a, b = h.open("a"), h.open("b")
    h.wait(a.session.create("/e", b"mine", ephemeral=True))
    stat = h.wait(b.session.exists("/e"))
    assert stat is not None
    assert stat.ephemeral_owner == a.session.session_id != 0
    with pytest.raises(NoChildrenForEphemerals):
        h.wait(a.session.create("/e/child", b""))
    with pytest.raises(NoChildrenForEphemerals):
        h.wait(b.session.create("/e/child", b"", make_parents=True))


def test_close_deletes_ephemerals_now(harness: Harness) -> None:
    h = harness
    a, b = h.open("a"), h.open("b")
    h.wait(a.session.create("/e", b"", ephemeral=True))
    h.wait(a.session.create("/kept", b""))
    h.until(lambda: a.states == [CONNECTED], 2000, "connected")

    a.session.close()
    assert a.session.state is CLOSED
    assert h.wait(b.session.exists("/e")) is None
    assert h.wait(b.session.exists("/kept")) is not None
    with pytest.raises(SessionExpired):
        h.wait(a.session.create("/after", b""))
    h.until(lambda: a.states == [CONNECTED, CLOSED], 2000, "told CLOSED")


def test_cut_link_expires_the_session_after_its_timeout(harness: Harness) -> None:
    h = harness
    a, b = h.open("a", timeout_ms=1500), h.open("b", timeout_ms=10_000)
    h.wait(a.session.create("/e", b"", ephemeral=True))
    fired: list[WatchEvent] = []
    h.wait(a.session.exists("/w", watch=fired.append))
    h.until(lambda: a.states == [CONNECTED], 2000, "connected")

    a.session.set_link(LinkState.CUT)
    assert a.session.state is SUSPENDED
    with pytest.raises(ConnectionLoss):
        h.wait(a.session.get("/e"))
    h.until(lambda: a.states == [CONNECTED, SUSPENDED], 1000, "told SUSPENDED")
    assert h.wait(b.session.exists("/e")) is not None  # the server has not given up yet

    h.eventually(lambda: b.session.exists("/e"), lambda stat: stat is None, within_ms=6000)
    assert a.session.state is SUSPENDED  # cut off, the client cannot know
    h.wait(b.session.create("/w", b""))  # the expired session's watch is gone with it

    a.session.set_link(LinkState.OPEN)
    h.until(lambda: a.states[-1] is EXPIRED, 5000, "told EXPIRED")
    assert a.states == [CONNECTED, SUSPENDED, EXPIRED]
    with pytest.raises(SessionExpired):
        h.wait(a.session.create("/after", b""))
    assert fired == []


def test_held_link_reopened_after_the_timeout_gives_expired(harness: Harness) -> None:
    h = harness
    a, b = h.open("a", timeout_ms=1500), h.open("b", timeout_ms=10_000)
    h.wait(a.session.create("/e", b"", ephemeral=True))
    h.until(lambda: a.states == [CONNECTED], 2000, "connected")

    a.session.set_link(LinkState.HELD)
    late = a.session.create("/late", b"")
    h.eventually(lambda: b.session.exists("/e"), lambda stat: stat is None, within_ms=6000)
    assert a.states == [CONNECTED]  # a paused process notices nothing
    assert not late.done()
    assert h.wait(b.session.exists("/late")) is None

    a.session.set_link(LinkState.OPEN)
    h.until(lambda: a.states[-1] is EXPIRED, 5000, "told EXPIRED")
    assert a.session.state is EXPIRED
    with pytest.raises(SessionExpired):
        h.wait(late)
    assert h.wait(b.session.exists("/late")) is None


def test_a_session_cut_as_it_opens_reports_its_states_in_order(harness: Harness) -> None:
    h = harness
    a = h.open("a", timeout_ms=5000)
    a.session.set_link(LinkState.CUT)
    h.until(lambda: len(a.states) == 2, 2000, "told twice")
    assert a.states == [CONNECTED, SUSPENDED]
    a.session.set_link(LinkState.OPEN)
    h.until(lambda: len(a.states) == 3, 3000, "told CONNECTED again")
    assert a.states == [CONNECTED, SUSPENDED, CONNECTED]
    assert h.wait(a.session.create("/x", b"")) == "/x"


def test_link_restored_before_the_timeout_keeps_the_session(harness: Harness) -> None:
    h = harness
    a, b = h.open("a", timeout_ms=1500), h.open("b", timeout_ms=10_000)
    h.wait(a.session.create("/e", b"", ephemeral=True))
    h.until(lambda: a.states == [CONNECTED], 2000, "connected")

    a.session.set_link(LinkState.CUT)
    h.run_for(300)
    a.session.set_link(LinkState.OPEN)
    h.until(lambda: a.states[-1] is CONNECTED, 3000, "told CONNECTED again")
    assert a.states == [CONNECTED, SUSPENDED, CONNECTED]

    h.run_for(2000)  # past the timeout: the session lives on
    stat = h.wait(b.session.exists("/e"))
    assert stat is not None
    assert stat.ephemeral_owner == a.session.session_id
    assert h.wait(a.session.set("/e", b"still mine")).version == 1
    assert a.session.state is CONNECTED


def test_held_ops_wait_and_then_proceed_in_order(harness: Harness) -> None:
    h = harness
    a, b = h.open("a", timeout_ms=5000), h.open("b")
    h.wait(a.session.create("/h", b"0"))

    a.session.set_link(LinkState.HELD)
    first = a.session.set("/h", b"1")
    second = a.session.get("/h")
    assert h.wait(b.session.get("/h"))[0] == b"0"  # nothing reached the server
    assert not first.done()
    assert not second.done()

    a.session.set_link(LinkState.OPEN)
    assert h.wait(second)[0] == b"1"
    assert first.done()
    assert first.result().version == 1
    assert a.session.state is CONNECTED


def test_ops_held_back_fail_if_the_link_is_then_cut(harness: Harness) -> None:
    h = harness
    a, b = h.open("a", timeout_ms=5000), h.open("b")
    h.wait(a.session.create("/h", b"0"))

    a.session.set_link(LinkState.HELD)
    queued = a.session.set("/h", b"1")
    a.session.set_link(LinkState.CUT)
    with pytest.raises(ConnectionLoss):
        h.wait(queued)
    assert a.session.state is SUSPENDED

    a.session.set_link(LinkState.OPEN)
    h.until(lambda: a.states[-1] is CONNECTED and a.session.state is CONNECTED, 3000, "reconnected")
    assert h.wait(b.session.get("/h"))[0] == b"0"  # never sent
    assert h.wait(a.session.get("/h"))[0] == b"0"


def test_abandoned_session_expires_later_and_tells_nobody(harness: Harness) -> None:
    h = harness
    a, b = h.open("a", timeout_ms=1500), h.open("b", timeout_ms=10_000)
    fired: list[WatchEvent] = []
    h.wait(a.session.create("/e", b"", ephemeral=True))
    h.wait(a.session.exists("/w", watch=fired.append))
    h.until(lambda: a.states == [CONNECTED], 2000, "connected")

    a.session.abandon()
    assert h.wait(b.session.exists("/e")) is not None  # ephemerals stay until the server expires it
    h.wait(b.session.create("/w", b""))
    h.eventually(lambda: b.session.exists("/e"), lambda stat: stat is None, within_ms=6000)
    assert fired == []
    assert a.states == [CONNECTED]


def test_a_session_the_server_stops_hearing_counts_down_to_its_expiry(harness: Harness) -> None:
    h = harness
    a, b = h.open("a", timeout_ms=1500), h.open("b", timeout_ms=10_000)
    h.wait(a.session.create("/e", b"", ephemeral=True))
    h.until(lambda: a.states == [CONNECTED], 2000, "connected")
    assert a.session.expires_in_ms is None  # heard: nothing counts down

    a.session.set_link(LinkState.HELD)  # a paused process: it sends no heartbeats
    first = a.session.expires_in_ms
    assert first is not None
    # The timeout, from when the server last heard the client (on ZooKeeper: its last ping, sent
    # every third of the timeout or so, or any request since).
    assert 800 < first <= 1500
    h.run_for(500)
    later = a.session.expires_in_ms
    assert later is not None
    assert later <= first - 400
    a.session.set_link(LinkState.OPEN)  # resumed in time: heard again
    assert a.session.expires_in_ms is None
    h.run_for(300)
    assert h.wait(b.session.exists("/e")) is not None

    a.session.abandon()  # killed: the countdown starts again, from the last time the server heard it
    left = a.session.expires_in_ms
    assert left is not None
    assert 800 < left <= 1500
    h.eventually(lambda: b.session.exists("/e"), lambda stat: stat is None, within_ms=6000)
    # Counted down (the server may expire it a little sooner: it last heard the client's last ping,
    # before the kill), or known to have ended.
    after = a.session.expires_in_ms
    assert after is None or after < left


def test_a_closed_session_does_not_count_down(harness: Harness) -> None:
    h = harness
    a = h.open("a", timeout_ms=1500)
    h.until(lambda: a.states == [CONNECTED], 2000, "connected")
    a.session.close()
    assert a.session.expires_in_ms is None


def test_data_watches_fire_once_with_the_right_kind(harness: Harness) -> None:
    h = harness
    a, b = h.open("a"), h.open("b")
    fired: list[WatchEvent] = []

    assert h.wait(a.session.exists("/w", watch=fired.append)) is None
    h.wait(b.session.create("/w", b"1"))
    h.until(lambda: len(fired) == 1, 2000, "created")

    h.wait(a.session.get("/w", watch=fired.append))
    h.wait(a.session.get("/w", watch=fired.append))  # the same watcher twice: one event
    h.wait(b.session.set("/w", b"2"))
    h.until(lambda: len(fired) == 2, 2000, "changed")
    h.wait(b.session.set("/w", b"3"))  # no watch left
    h.wait(a.session.get("/w"))  # a sees a watch event before any later read of the change

    h.wait(a.session.exists("/w", watch=fired.append))
    h.wait(b.session.delete("/w"))
    h.until(lambda: len(fired) == 3, 2000, "deleted")
    h.wait(a.session.exists("/w"))
    assert fired == [
        event(WatchKind.CREATED, "/w"),
        event(WatchKind.CHANGED, "/w"),
        event(WatchKind.DELETED, "/w"),
    ]


def test_child_watches_fire_once_and_on_the_watched_nodes_deletion(harness: Harness) -> None:
    h = harness
    a, b = h.open("a"), h.open("b")
    fired: list[WatchEvent] = []
    h.wait(b.session.create("/p", b""))

    assert h.wait(a.session.get_children("/p", watch=fired.append)) == []
    h.wait(b.session.create("/p/c", b""))
    h.until(lambda: len(fired) == 1, 2000, "child created")
    h.wait(b.session.set("/p", b"data"))  # not a child change, and a data watch is not set
    h.wait(b.session.create("/p/d", b""))  # the watch has fired already
    h.wait(a.session.get("/p"))

    assert h.wait(a.session.get_children("/p", watch=fired.append)) == ["c", "d"]
    h.wait(b.session.delete("/p/c"))
    h.until(lambda: len(fired) == 2, 2000, "child deleted")

    h.wait(b.session.delete("/p/d"))  # the watch has fired already
    h.wait(a.session.get_children("/p", watch=fired.append))
    h.wait(a.session.get("/p", watch=fired.append))  # same watcher on data: one DELETED
    h.wait(b.session.delete("/p"))
    h.until(lambda: len(fired) == 3, 2000, "parent deleted")
    h.wait(a.session.exists("/p"))
    assert fired == [
        event(WatchKind.CHILD, "/p"),
        event(WatchKind.CHILD, "/p"),
        event(WatchKind.DELETED, "/p"),
    ]


def test_watch_set_before_a_short_cut_still_fires(harness: Harness) -> None:
    h = harness
    a, b = h.open("a", timeout_ms=1500), h.open("b", timeout_ms=10_000)
    h.wait(b.session.create("/w", b"1"))
    changed: list[WatchEvent] = []
    children: list[WatchEvent] = []
    later: list[WatchEvent] = []
    h.wait(a.session.get("/w", watch=changed.append))
    h.wait(a.session.get_children("/", watch=children.append))
    h.wait(a.session.exists("/later", watch=later.append))

    a.session.set_link(LinkState.CUT)
    h.wait(b.session.set("/w", b"2"))
    h.wait(b.session.create("/x", b""))
    a.session.set_link(LinkState.OPEN)
    h.until(lambda: bool(changed and children), 3000, "missed events delivered")
    assert changed == [event(WatchKind.CHANGED, "/w")]
    assert children == [event(WatchKind.CHILD, "/")]

    h.until(lambda: a.states[-1] is CONNECTED, 3000, "told CONNECTED again")
    h.wait(a.session.get("/w"))
    assert later == []  # re-armed, not fired: /later did not change
    h.wait(b.session.create("/later", b""))
    h.until(lambda: bool(later), 2000, "re-armed watch fires")
    assert later == [event(WatchKind.CREATED, "/later")]


def test_multi_is_all_or_nothing(harness: Harness) -> None:
    h = harness
    s = h.open("a").session
    h.wait(s.create("/m", b"0"))

    with pytest.raises(BadVersion) as failed:
        h.wait(s.multi([CreateOp(path="/m/new"), SetDataOp(path="/m", data=b"1", version=7)]))
    assert failed.value.path == "/m"
    assert h.wait(s.exists("/m/new")) is None
    data, stat = h.wait(s.get("/m"))
    assert (data, stat.version, stat.cversion) == (b"0", 0, 0)

    with pytest.raises(NoNode):  # the first error is the one raised
        h.wait(s.multi([SetDataOp(path="/nope", data=b""), CheckOp(path="/m", version=9)]))

    results = h.wait(
        s.multi(
            [
                CreateOp(path="/m/new", data=b"x"),
                SetDataOp(path="/m", data=b"1", version=0),
                CheckOp(path="/m", version=1),
                CreateOp(path="/m/seq-", sequential=True),
                DeleteOp(path="/m/new"),
            ]
        )
    )
    assert results[0] == "/m/new"
    assert isinstance(results[1], Stat)
    assert results[1].version == 1
    assert results[2] is None
    assert results[4] is None
    assert results[3] == "/m/seq-0000000001"
    assert h.wait(s.get_children("/m")) == ["seq-0000000001"]
    assert h.wait(s.multi([])) == []


def test_multi_creates_ephemerals_for_its_session(harness: Harness) -> None:
    h = harness
    a, b = h.open("a"), h.open("b")
    h.wait(a.session.multi([CreateOp(path="/e1", ephemeral=True), CreateOp(path="/p1")]))
    e1 = h.wait(b.session.exists("/e1"))
    p1 = h.wait(b.session.exists("/p1"))
    assert e1 is not None
    assert p1 is not None
    assert e1.ephemeral_owner == a.session.session_id
    assert p1.ephemeral_owner == 0
    assert e1.czxid == p1.czxid  # one transaction
    a.session.close()
    assert h.wait(b.session.exists("/e1")) is None


def test_operations_complete_in_issue_order(harness: Harness) -> None:
    h = harness
    s = h.open("a").session
    order: list[int] = []
    pendings: list[Pending[Any]] = [
        s.create("/o", b"a"),
        s.set("/o", b"b"),
        s.get("not-a-path"),  # fails in the client library, still in its turn
        s.get("/o"),
        s.create("/o/deep/er", b"", make_parents=True),
        s.delete("/o", recursive=True),
        s.exists("/o"),
        s.get("/o"),
    ]

    def record(i: int) -> Callable[[Pending[Any]], None]:
        return lambda _pending: order.append(i)

    for i, pending in enumerate(pendings):
        pending.add_done_callback(record(i))
    h.until(lambda: all(p.done() for p in pendings), 5000, "all done")
    assert order == list(range(len(pendings)))
    assert isinstance(pendings[2].exception(), BadArguments)
    assert pendings[3].result()[0] == b"b"
    assert pendings[4].result() == "/o/deep/er"
    assert pendings[6].result() is None
    assert isinstance(pendings[7].exception(), NoNode)


def test_chroots_isolate_two_stores_on_one_server(harness: Harness) -> None:
    h = harness
    other = h.sibling()
    a, c = h.open("a"), h.open("c", store=other)
    h.wait(a.session.create("/only", b"mine"))
    assert h.wait(c.session.exists("/only")) is None
    h.wait(c.session.create("/only", b"theirs"))
    h.wait(c.session.create("/also", b""))
    assert h.wait(a.session.get("/only"))[0] == b"mine"
    assert h.wait(a.session.get_children("/")) == ["only"]
    assert h.wait(c.session.get_children("/")) == ["also", "only"]
