"""The ZooKeeper store: kazoo on a real server, every answer handled on the engine's thread.

This module is the engine's one door to threads and the wall clock. Each
session is its own ``KazooClient``, connected through its own loopback proxy
(``zookeeper_proxy.py``) so that a broker's link can be cut or held for real,
and the real server expires the session. kazoo's answers, watch events and
state changes are produced on kazoo's connection thread; a handler without
worker threads keeps them in wire order and they are posted to the store's
inbox, which ``drain()`` runs on the engine's thread. ``pace()`` is how the
engine waits: until a virtual deadline is due in wall time, or the inbox has
something.

The contract is the memory store's (see ``memory.py``); here is how each part
is kept on a real client:

* issue order: every operation has a sequence number and results are handed
  over in that order, including failures the client library decides alone;
  ``make_parents`` creates and recursive deletes run several requests and hold
  back later operations until they finish;
* a cut link: the session reports SUSPENDED and fails what is in flight at
  once, and a CONNECTED that kazoo reported before the cut is ignored;
* a held link (a paused process): nothing is sent, and what kazoo reports is
  kept back until the link opens again;
* watches survive a reconnection as the Java client's do: kazoo drops its
  watchers when a connection drops, so each armed watch is re-armed on
  reconnection and fires at once if its node changed meanwhile (compared by
  mzxid for data, pzxid for children);
* the server gone (killed, restarting): every session loses its connection and
  kazoo keeps trying; the store is then out (``outage()``) until one of them
  is connected again. What comes back is what ZooKeeper decides: a session the
  server still knows carries on (a restarted server starts its session timers
  afresh), an expired one is told so (kazoo's LOST), and its owner opens a new one.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from kazoo import exceptions as kx
from kazoo.client import KazooClient
from kazoo.handlers.threading import SequentialThreadingHandler
from kazoo.protocol.states import EventType, KazooState, WatchedEvent
from kazoo.retry import KazooRetry

from lab.engine.errors import IllegalArgument, IllegalState
from lab.engine.metadata.paths import ancestors, check_data, check_op, check_path, check_version, join
from lab.engine.metadata.store import (
    BadArguments,
    BadVersion,
    ConnectionLoss,
    CreateOp,
    DeleteOp,
    LinkState,
    MetadataError,
    NoChildrenForEphemerals,
    NodeExists,
    NoNode,
    NotEmpty,
    Op,
    OpResult,
    OutageListener,
    Session,
    SessionExpired,
    SessionListener,
    SessionState,
    SetDataOp,
    Stat,
    Watcher,
    WatchEvent,
    WatchKind,
)
from lab.engine.metadata.zookeeper_proxy import ZooKeeperProxy, parse_hosts
from lab.engine.tasks import Pending, Task

log = logging.getLogger(__name__)
kazoo_log = logging.getLogger(__name__ + ".kazoo")
# kazoo reports every cut link as a warning; the lab's journal already says what a cut does.
kazoo_log.setLevel(logging.ERROR)

T = TypeVar("T")
Done = Callable[[Any, MetadataError | None], None]

_DELETE_TREE_ATTEMPTS = 10


def _reconnect_retry() -> KazooRetry:
    # Forever, but never more than 250 ms apart: a restored link reconnects well within a second.
    return KazooRetry(max_tries=-1, delay=0.02, backoff=2, max_delay=0.25, max_jitter=0.2)


class _InboxHandler(SequentialThreadingHandler):  # type: ignore[misc]
    """kazoo's threading handler without its two worker threads.

    kazoo then runs completions and watch callbacks right where it produces them,
    on its connection thread, in the order they came off the wire; ours only
    post to the store's inbox, so nothing blocks that thread.
    """

    def start(self) -> None:
        return None

    def stop(self) -> None:
        return None

    def dispatch_callback(self, callback: Any) -> None:
        try:
            callback.func(*callback.args)
        except Exception:  # never let a callback kill kazoo's connection loop
            log.exception("ZooKeeper callback failed")


def _stat(z: Any) -> Stat:
    return Stat(
        czxid=z.czxid,
        mzxid=z.mzxid,
        version=z.version,
        cversion=z.cversion,
        ephemeral_owner=z.ephemeralOwner,
        num_children=z.numChildren,
        data_length=z.dataLength,
        ctime=z.ctime,
    )


_ERRORS: tuple[tuple[type[BaseException], type[MetadataError]], ...] = (
    (kx.NoNodeError, NoNode),
    (kx.NodeExistsError, NodeExists),
    (kx.BadVersionError, BadVersion),
    (kx.NotEmptyError, NotEmpty),
    (kx.NoChildrenForEphemeralsError, NoChildrenForEphemerals),
    (kx.BadArgumentsError, BadArguments),
    (kx.SessionExpiredError, SessionExpired),
    (kx.ConnectionClosedError, SessionExpired),  # the client was stopped: the session is over
    (kx.ConnectionLoss, ConnectionLoss),
    (kx.ConnectionDropped, ConnectionLoss),
    (kx.OperationTimeoutError, ConnectionLoss),
)


def map_error(exc: BaseException, path: str = "") -> MetadataError:
    """kazoo's exception as the store's error, by ZooKeeper's name."""
    if isinstance(exc, MetadataError):
        return exc
    for kazoo_type, ours in _ERRORS:
        if isinstance(exc, kazoo_type):
            return ours(path)
    return MetadataError(path, f"{type(exc).__name__}: {exc} {path}".strip())


class ZooKeeperStore:
    """Metadata in a real ZooKeeper, under this store's own chroot."""

    def __init__(
        self, hosts: str, *, chroot: str, proxy: bool = True, connect_timeout_s: float = 10.0
    ) -> None:
        self._upstream = parse_hosts(hosts)
        self.connect_timeout_s = connect_timeout_s
        self.hosts = hosts
        check_path(chroot)
        if chroot == "/":
            raise IllegalArgument("a ZooKeeper store needs its own chroot, not '/'")
        self.chroot = chroot
        self.proxy = proxy
        self._inbox: deque[Callable[[], None]] = deque()
        self._cond = threading.Condition()
        self._sessions: list[ZooKeeperSession] = []
        self._reapers: list[threading.Thread] = []
        self._anchor: tuple[float, int] | None = None
        self._closed = False
        self._reach_lock = threading.Lock()
        self._outage: str | None = None
        self._outage_listeners: list[OutageListener] = []
        self._arrival_listeners: list[Callable[[], None]] = []
        self._admin(lambda zk: zk.ensure_path(chroot))

    def __repr__(self) -> str:
        return f"<ZooKeeperStore {self.hosts}{self.chroot}>"

    # --- MetadataStore

    @property
    def kind(self) -> str:
        return "zookeeper"

    @property
    def realtime(self) -> bool:
        return True

    def open_session(self, *, name: str, timeout_ms: int, on_state: SessionListener) -> ZooKeeperSession:
        """Connect a new session (blocks until the server has accepted it)."""
        if self._closed:
            raise IllegalState("the metadata store is closed")
        if isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int) or timeout_ms <= 0:
            raise IllegalArgument(f"session timeout_ms must be a positive integer, got {timeout_ms!r}")
        return self._keep(ZooKeeperSession(self, name=name, timeout_ms=timeout_ms, on_state=on_state))

    def begin_session(self, *, name: str, timeout_ms: int, on_state: SessionListener) -> Pending[Session]:
        """Connect a new session on a thread of its own: a server that is gone, or slow to accept,
        holds that thread up to ``connect_timeout_s``, never the engine's."""
        if self._closed:
            raise IllegalState("the metadata store is closed")
        opened: Pending[Session] = Pending()

        def connect() -> None:
            try:
                session = ZooKeeperSession(self, name=name, timeout_ms=timeout_ms, on_state=on_state)
            except ConnectionLoss as lost:
                error = lost  # the name ``lost`` ends with the except clause
                self._post(lambda: opened.fail(error))
                return
            if self._closed:  # closed while it connected: nobody will drain it
                session._shutdown()
                return
            self._post(lambda: opened.resolve(self._keep(session)))

        self._reap(connect, f"connect-{name}")
        return opened

    def _keep(self, session: ZooKeeperSession) -> ZooKeeperSession:
        """A session just connected joins those the outage is read from (the engine's thread)."""
        self._sessions = [s for s in self._sessions if not s._over()]  # forget the ended ones
        self._sessions.append(session)
        self._recheck()
        return session

    def drain(self) -> int:
        ran = 0
        while self._inbox:  # unlocked peek: the engine drains after every event, and mostly finds nothing
            with self._cond:
                if not self._inbox:
                    return ran
                item = self._inbox.popleft()
            item()
            ran += 1
        return ran

    def begin_pacing(self, now_ms: int) -> None:
        self._anchor = (time.monotonic(), now_ms)

    def pace(self, until_ms: int) -> int:
        if self._anchor is None:
            raise IllegalState("call begin_pacing(now_ms) before pace()")
        wall0, virtual0 = self._anchor
        deadline = wall0 + (until_ms - virtual0) / 1000.0
        with self._cond:
            while not self._inbox:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._cond.wait(remaining)
        reached = virtual0 + int((time.monotonic() - wall0) * 1000)
        return min(reached, until_ms)

    def outage(self) -> str | None:
        with self._reach_lock:
            return self._outage

    def on_outage(self, listener: OutageListener) -> None:
        self._outage_listeners.append(listener)

    def on_arrival(self, listener: Callable[[], None]) -> None:
        """Call ``listener()`` (on kazoo's thread) whenever something waits for the next ``drain()``:
        a driver that sleeps between ticks wakes for it instead of finding it a tick later."""
        self._arrival_listeners.append(listener)

    def close(self) -> None:
        """Close every session cleanly, stop every thread, close every socket."""
        if self._closed:
            return
        self._closed = True
        for session in self._sessions:
            session._shutdown()
        for reaper in self._reapers:
            reaper.join(timeout=30)
        self._reapers.clear()
        with self._cond:
            self._inbox.clear()

    def delete_chroot(self) -> None:
        """Delete this store's chroot and everything under it (for tests and lab deletion)."""

        def delete(zk: KazooClient) -> None:
            with contextlib.suppress(kx.NoNodeError):
                zk.delete(self.chroot, recursive=True)

        self._admin(delete)

    # --- internals

    def _admin(self, body: Callable[[KazooClient], Any]) -> None:
        zk = KazooClient(
            hosts=self.hosts, timeout=10.0, connection_retry=_reconnect_retry(), logger=kazoo_log
        )
        try:
            zk.start(timeout=self.connect_timeout_s)
        except Exception as exc:
            zk.close()
            raise ConnectionLoss("", f"cannot reach ZooKeeper at {self.hosts}: {exc}") from exc
        try:
            body(zk)
        except kx.KazooException as exc:
            raise map_error(exc, self.chroot) from exc
        finally:
            zk.stop()
            zk.close()

    def _recheck(self) -> None:
        """From any thread, after a session's connection or link changed: is ZooKeeper out now?"""
        with self._reach_lock:
            usable = [s for s in list(self._sessions) if s._counts()]
            out = bool(usable) and not any(s._kazoo_connected() for s in usable)
            if out == (self._outage is not None):
                return
            self._outage = (
                f"ZooKeeper is not answering: the lab lost every connection to {self.hosts}" if out else None
            )
            outage = self._outage
            self._post(lambda: self._tell_outage(outage))  # under the lock: told in the order it changed

    def _tell_outage(self, outage: str | None) -> None:
        if self._closed:
            return
        for listener in list(self._outage_listeners):
            listener(outage)

    def _post(self, item: Callable[[], None]) -> None:
        """From any thread: run ``item`` on the engine's thread at the next drain."""
        with self._cond:
            self._inbox.append(item)
            self._cond.notify_all()
        for listener in list(self._arrival_listeners):
            listener()

    def _reap(self, body: Callable[[], None], name: str) -> None:
        """Run something slow (stopping a client behind a dead link) off the engine's thread."""
        thread = threading.Thread(target=body, name=f"zk-reaper-{name}", daemon=True)
        self._reapers.append(thread)
        thread.start()


@dataclass
class _Slot:
    """The engine's watchers on one path, and what the node was when they were armed."""

    known: int | None  # mzxid (data) or pzxid (children); None: the node did not exist
    watchers: list[Watcher] = field(default_factory=list)


class _KazooWatch:
    """The one watcher kazoo holds per (session, path, kind); equal ones are kept once."""

    __slots__ = ("children", "path", "session")

    def __init__(self, session: ZooKeeperSession, path: str, children: bool) -> None:
        self.session = session
        self.path = path
        self.children = children

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, _KazooWatch)
            and other.session is self.session
            and (other.path, other.children) == (self.path, self.children)
        )

    def __hash__(self) -> int:
        return hash((id(self.session), self.path, self.children))

    def __call__(self, event: WatchedEvent) -> None:
        # kazoo's thread. A NONE event is kazoo dropping its watchers on a lost
        # connection: the session re-arms them itself on reconnection.
        if event.type == EventType.NONE:
            return
        session, path, etype = self.session, self.path, event.type
        session._store._post(lambda: session._on_watch(path, etype))


_EVENT_KINDS = {
    EventType.CREATED: WatchKind.CREATED,
    EventType.DELETED: WatchKind.DELETED,
    EventType.CHANGED: WatchKind.CHANGED,
    EventType.CHILD: WatchKind.CHILD,
}


class ZooKeeperSession:
    """One session: a KazooClient behind its own proxy."""

    def __init__(
        self, store: ZooKeeperStore, *, name: str, timeout_ms: int, on_state: SessionListener
    ) -> None:
        self._store = store
        self.name = name
        self.timeout_ms = timeout_ms
        self._on_state: SessionListener | None = on_state
        self._state = SessionState.CONNECTED
        self._link = LinkState.OPEN
        self._link_epoch = 0  # bumped by each cut: a CONNECTED from before it is stale
        self._lock = threading.Lock()
        self._lost = False  # kazoo said LOST (or we stopped it): nothing more may be sent
        self._abandoned = False
        self._closing = False
        self._silent_since: float | None = None  # wall clock: the server has heard nothing since
        self._told_connected = False
        self._client_stopped = False
        # Issue order: results are handed over by sequence number.
        self._seq = 0
        self._next_done = 1
        self._inflight: dict[int, Pending[Any]] = {}
        self._ready: dict[int, tuple[Any, MetadataError | None]] = {}
        self._outbox: deque[tuple[int, Callable[[int], None]]] = deque()
        self._compound = False
        # A held link: what kazoo reports waits here, in order.
        self._held = False
        self._backlog: deque[tuple[Callable[[], None], Pending[Any] | None]] = deque()
        self._data_slots: dict[str, _Slot] = {}
        self._child_slots: dict[str, _Slot] = {}

        self._proxy = ZooKeeperProxy(store._upstream, name=name) if store.proxy else None
        hosts = self._proxy.address if self._proxy is not None else store.hosts
        self._client = KazooClient(
            hosts=hosts + store.chroot,
            timeout=timeout_ms / 1000.0,
            handler=_InboxHandler(),
            connection_retry=_reconnect_retry(),
            randomize_hosts=False,
            logger=kazoo_log,
        )
        self._client.add_listener(self._kazoo_state)
        try:
            self._client.start(timeout=store.connect_timeout_s)
        except Exception as exc:
            self._client.close()
            if self._proxy is not None:
                self._proxy.close()
            raise ConnectionLoss(
                "", f"session {name}: cannot reach ZooKeeper at {store.hosts}: {exc}"
            ) from exc
        client_id = self._client.client_id
        self._session_id: int = client_id[0] if client_id else 0
        store._post(lambda: self._deliver(self._tell_connected))

    def __repr__(self) -> str:
        state, link = self._state.value, self._link.value
        return f"<ZooKeeperSession {self.name} 0x{self._session_id:x} {state} link={link}>"

    def _over(self) -> bool:
        """Ended for good: nothing of it is left to stop."""
        return self._client_stopped and (
            self._abandoned or self._state in (SessionState.CLOSED, SessionState.EXPIRED)
        )

    def _counts(self) -> bool:
        """Whether this session's connection says anything about ZooKeeper: it is in use, and its
        link is open (a link the lab cut or holds is down on purpose)."""
        return (
            not (self._abandoned or self._lost or self._client_stopped)
            and self._link is LinkState.OPEN
            and self._state not in (SessionState.CLOSED, SessionState.EXPIRED)
        )

    def _kazoo_connected(self) -> bool:
        return bool(self._client.connected)

    # --- Session protocol

    @property
    def session_id(self) -> int:
        return self._session_id

    @property
    def state(self) -> SessionState:
        return self._state

    @property
    def link(self) -> LinkState:
        return self._link

    @property
    def proxy(self) -> ZooKeeperProxy | None:
        return self._proxy

    @property
    def expires_in_ms(self) -> int | None:
        # The server expires a session timeout_ms after it last heard from it (at its next tick).
        if self._silent_since is None or self._state is SessionState.EXPIRED:
            return None
        return max(0, self.timeout_ms - int((time.monotonic() - self._silent_since) * 1000))

    def _last_heard(self) -> float:
        """When the server last got anything from this client: the proxy knows; without one, now."""
        return time.monotonic() if self._proxy is None else min(time.monotonic(), self._proxy.last_forwarded)

    def create(
        self,
        path: str,
        data: bytes = b"",
        *,
        ephemeral: bool = False,
        sequential: bool = False,
        make_parents: bool = False,
    ) -> Pending[str]:
        def start(seq: int) -> None:
            check_path(path, sequential=sequential)
            check_data(path, data)
            if make_parents:
                self._compound_op(seq, self._create_with_parents(path, data, ephemeral, sequential))
            else:
                self._request(
                    lambda zk: zk.create_async(path, data, ephemeral=ephemeral, sequence=sequential),
                    str,
                    path,
                    self._result_for(seq),
                )

        return self._issue(start)

    def get(self, path: str, watch: Watcher | None = None) -> Pending[tuple[bytes, Stat]]:
        def convert(raw: Any) -> tuple[bytes, Stat]:
            data, zstat = raw
            if watch is not None:
                self._arm(self._data_slots, path, watch, zstat.mzxid, children=False)
            return data or b"", _stat(zstat)

        def start(seq: int) -> None:
            check_path(path)
            adapter = _KazooWatch(self, path, children=False) if watch is not None else None
            self._request(lambda zk: zk.get_async(path, watch=adapter), convert, path, self._result_for(seq))

        return self._issue(start)

    def exists(self, path: str, watch: Watcher | None = None) -> Pending[Stat | None]:
        def convert(raw: Any) -> Stat | None:
            if watch is not None:
                self._arm(self._data_slots, path, watch, None if raw is None else raw.mzxid, children=False)
            return None if raw is None else _stat(raw)

        def start(seq: int) -> None:
            check_path(path)
            adapter = _KazooWatch(self, path, children=False) if watch is not None else None
            self._request(
                lambda zk: zk.exists_async(path, watch=adapter), convert, path, self._result_for(seq)
            )

        return self._issue(start)

    def get_children(self, path: str, watch: Watcher | None = None) -> Pending[list[str]]:
        def convert(raw: Any) -> list[str]:
            children, zstat = raw
            if watch is not None:
                self._arm(self._child_slots, path, watch, zstat.pzxid, children=True)
            return sorted(children)

        def start(seq: int) -> None:
            check_path(path)
            adapter = _KazooWatch(self, path, children=True) if watch is not None else None
            self._request(
                lambda zk: zk.get_children_async(path, watch=adapter, include_data=True),
                convert,
                path,
                self._result_for(seq),
            )

        return self._issue(start)

    def set(self, path: str, data: bytes, version: int = -1) -> Pending[Stat]:
        def start(seq: int) -> None:
            check_path(path)
            check_data(path, data)
            check_version(path, version)
            self._request(lambda zk: zk.set_async(path, data, version), _stat, path, self._result_for(seq))

        return self._issue(start)

    def delete(self, path: str, version: int = -1, *, recursive: bool = False) -> Pending[None]:
        def start(seq: int) -> None:
            check_path(path)
            check_version(path, version)
            if path == "/":
                raise BadArguments(path, "the root znode cannot be deleted")
            if recursive:
                self._compound_op(seq, self._delete_tree(path, version))
            else:
                self._request(lambda zk: zk.delete_async(path, version), _none, path, self._result_for(seq))

        return self._issue(start)

    def multi(self, ops: Sequence[Op]) -> Pending[list[OpResult]]:
        op_list = list(ops)

        def start(seq: int) -> None:
            for op in op_list:
                check_op(op)
            self._multi_request(op_list, self._result_for(seq))

        return self._issue(start)

    def close(self) -> None:
        if self._abandoned or self._state in (SessionState.CLOSED, SessionState.EXPIRED):
            return
        self._closing = True
        self._state = SessionState.CLOSED
        # What was sent is answered (or fails as kazoo stops); what was not, fails now.
        self._fail_queued(lambda: SessionExpired("", f"session {self.name} is closed"), sent_too=False)
        if self._held:
            self._held = False
            self._store._post(lambda: self._flush_backlog(cut=False))
        self._data_slots.clear()
        self._child_slots.clear()
        # A clean close needs the link: then the server deletes the ephemerals before we return.
        self._stop_client(clean=self._link is LinkState.OPEN and self._client.connected)
        self._store._post(lambda: self._deliver(lambda: self._notify(SessionState.CLOSED)))
        self._store._recheck()

    def abandon(self) -> None:
        if self._abandoned:
            return
        if self._silent_since is None and self._state is not SessionState.CLOSED:
            self._silent_since = self._last_heard()
        self._abandoned = True
        self._on_state = None
        self._state = SessionState.CLOSED
        self._inflight.clear()
        self._ready.clear()
        self._outbox.clear()
        self._backlog.clear()
        self._data_slots.clear()
        self._child_slots.clear()
        # Cut first, so that no close request reaches the server: it expires the session itself.
        self._stop_client(clean=False)
        self._store._recheck()

    def set_link(self, link: LinkState) -> None:
        if not isinstance(link, LinkState):
            raise IllegalArgument(f"link must be a LinkState, got {link!r}")
        if self._proxy is None:
            raise IllegalState(f"session {self.name} has no proxy: open the store with proxy=True")
        old, self._link = self._link, link
        if old is link or self._abandoned:
            return
        if link is LinkState.OPEN:
            self._silent_since = None
        elif self._silent_since is None:
            self._silent_since = self._last_heard()
        with self._lock:
            if not self._lost:  # once lost, the proxy stays cut: kazoo must not start a new session
                self._proxy.set_mode(link)
        if link is LinkState.CUT:
            self._link_epoch += 1
            if old is LinkState.HELD:
                self._held = False
                self._store._post(lambda: self._flush_backlog(cut=True))
            if self._state is SessionState.CONNECTED:
                self._state = SessionState.SUSPENDED
                self._store._post(lambda: self._deliver(lambda: self._notify(SessionState.SUSPENDED)))
            self._fail_queued(lambda: ConnectionLoss("", f"session {self.name} was cut off"))
        elif link is LinkState.HELD:
            self._held = True
        else:
            if old is LinkState.HELD:
                self._held = False
                self._store._post(lambda: self._flush_backlog(cut=False))
            self._pump()
        self._store._recheck()

    # --- issuing, in order

    def _issue(self, start: Callable[[int], None]) -> Pending[T]:
        pending: Pending[T] = Pending()
        if self._abandoned:
            pending.fail(SessionExpired("", "the session's owner abandoned it"))
            return pending
        self._seq += 1
        seq = self._seq
        self._inflight[seq] = pending
        if self._state in (SessionState.CLOSED, SessionState.EXPIRED):
            self._fail_later(seq, SessionExpired("", f"session {self.name} is {self._state.value}"))
        elif self._link is LinkState.CUT:
            self._fail_later(seq, ConnectionLoss("", f"session {self.name} is cut off"))
        elif self._held or self._compound or self._outbox:
            self._outbox.append((seq, start))
        else:
            self._start(seq, start)
        return pending

    def _start(self, seq: int, start: Callable[[int], None]) -> None:
        try:
            start(seq)
        except MetadataError as exc:  # refused by the client library: bad arguments
            self._fail_later(seq, exc)

    def _pump(self) -> None:
        while self._outbox and not self._held and not self._compound:
            seq, start = self._outbox.popleft()
            if self._state in (SessionState.CLOSED, SessionState.EXPIRED):
                self._fail_later(seq, SessionExpired("", f"session {self.name} is {self._state.value}"))
            elif self._link is LinkState.CUT:
                self._fail_later(seq, ConnectionLoss("", f"session {self.name} is cut off"))
            else:
                self._start(seq, start)

    def _fail_later(self, seq: int, error: MetadataError) -> None:
        self._store._post(lambda: self._finish(seq, None, error))

    def _fail_queued(self, error: Callable[[], MetadataError], *, sent_too: bool = True) -> None:
        """Fail what waits to be sent, and what was sent and not yet answered if ``sent_too``."""
        unsent = {seq for seq, _ in self._outbox}
        self._outbox.clear()
        waiting = sorted(
            seq for seq in self._inflight if seq not in self._ready and (sent_too or seq in unsent)
        )

        def fail_all() -> None:
            for seq in waiting:
                self._finish(seq, None, error())

        if waiting:
            self._store._post(fail_all)

    def _result_for(self, seq: int) -> Done:
        return lambda value, error: self._finish(seq, value, error)

    def _finish(self, seq: int, value: Any, error: MetadataError | None) -> None:
        """An outcome for op ``seq`` (the first one counts); hand over all that are next in order."""
        if seq not in self._inflight or seq in self._ready:
            return
        self._ready[seq] = (value, error)
        while self._next_done in self._ready:
            done_seq = self._next_done
            self._next_done += 1
            value, error = self._ready.pop(done_seq)
            pending = self._inflight.pop(done_seq)
            self._deliver(_settler(pending, value, error), pending)

    def _deliver(self, fn: Callable[[], None], pending: Pending[Any] | None = None) -> None:
        """Run ``fn`` for the session's owner now, or when its held link opens."""
        if self._abandoned:
            return
        if self._held or self._backlog:
            self._backlog.append((fn, pending))
        else:
            fn()

    def _flush_backlog(self, *, cut: bool) -> None:
        while self._backlog and not self._held and not self._abandoned:
            fn, pending = self._backlog.popleft()
            if cut and pending is not None:  # a paused process cut off loses what it had not read
                pending.fail(ConnectionLoss("", f"session {self.name} was cut off"))
            else:
                fn()

    def _notify(self, state: SessionState) -> None:
        if self._on_state is not None:
            self._on_state(state)

    # --- kazoo requests

    def _request(
        self, call: Callable[[KazooClient], Any], convert: Callable[[Any], Any], path: str, done: Done
    ) -> None:
        with self._lock:
            lost = self._lost
            if not lost:
                async_result = call(self._client)
        if lost:
            error = SessionExpired(path, f"session {self.name} has ended")
            self._store._post(lambda: done(None, error))
            return

        def on_result(result: Any) -> None:  # kazoo's thread, or ours if it failed at once
            self._store._post(lambda: self._complete(result, convert, path, done))

        async_result.rawlink(on_result)

    def _complete(self, result: Any, convert: Callable[[Any], Any], path: str, done: Done) -> None:
        try:
            value = convert(result.get_nowait())
        except Exception as exc:
            done(None, map_error(exc, path))
        else:
            done(value, None)

    def _multi_request(self, ops: list[Op], done: Done) -> None:
        def call(zk: KazooClient) -> Any:
            txn = zk.transaction()
            for op in ops:
                if isinstance(op, CreateOp):
                    txn.create(op.path, op.data, ephemeral=op.ephemeral, sequence=op.sequential)
                elif isinstance(op, SetDataOp):
                    txn.set_data(op.path, op.data, op.version)
                elif isinstance(op, DeleteOp):
                    txn.delete(op.path, op.version)
                else:
                    txn.check(op.path, op.version)
            return txn.commit_async()

        def convert(raw: Any) -> list[OpResult]:
            for op, item in zip(ops, raw, strict=False):
                if isinstance(item, Exception) and not isinstance(
                    item, kx.RolledBackError | kx.RuntimeInconsistency
                ):
                    raise map_error(item, op.path)
            out: list[OpResult] = []
            for item in raw:
                if isinstance(item, str):
                    out.append(item)
                elif item is True:
                    out.append(None)
                else:
                    out.append(_stat(item))
            return out

        self._request(call, convert, ops[0].path if ops else "", done)

    def _raw(self, call: Callable[[KazooClient], Any], convert: Callable[[Any], T], path: str) -> Pending[T]:
        """A request inside a compound op: not in the issue order, but paused with the session."""
        pending: Pending[T] = Pending()

        def done(value: Any, error: MetadataError | None) -> None:
            self._deliver(_settler(pending, value, error))

        if self._link is LinkState.CUT:
            error = ConnectionLoss(path, f"session {self.name} is cut off")
            self._store._post(lambda: done(None, error))
        else:
            self._request(call, convert, path, done)
        return pending

    # --- compound ops: several requests, later ops wait

    def _compound_op(self, seq: int, coro: Any) -> None:
        self._compound = True
        task: Task[Any] = Task.start(coro, name=f"{self.name}:compound")

        def finished(outcome: Pending[Any]) -> None:
            self._compound = False
            err = outcome.failed_with()
            if err is None:
                self._finish(seq, outcome.result(), None)
            else:
                self._finish(seq, None, map_error(err))
            self._pump()

        task.outcome.add_done_callback(finished)

    async def _create_with_parents(self, path: str, data: bytes, ephemeral: bool, sequential: bool) -> str:
        def create(p: str, d: bytes, eph: bool, seq: bool) -> Pending[str]:
            return self._raw(lambda zk: zk.create_async(p, d, ephemeral=eph, sequence=seq), str, p)

        try:
            return await create(path, data, ephemeral, sequential)
        except NoNode:
            pass
        for ancestor in ancestors(path):
            with contextlib.suppress(NodeExists):
                await create(ancestor, b"", False, False)
        return await create(path, data, ephemeral, sequential)

    async def _delete_tree(self, path: str, version: int) -> None:
        # List the tree, then delete it in one multi (leaves first); if it changed meanwhile, again.
        for _ in range(_DELETE_TREE_ATTEMPTS):
            paths = [path]
            level = [path]
            while level:
                listings = [(p, self._raw(_children_call(p), _as_list, p)) for p in level]
                level = []
                for parent, listing in listings:
                    try:
                        children = await listing
                    except NoNode:
                        if parent == path:
                            raise
                        continue
                    level.extend(join(parent, name) for name in children)
                paths.extend(level)
            ops: list[Op] = [DeleteOp(path=p) for p in reversed(paths[1:])]
            ops.append(DeleteOp(path=path, version=version))
            try:
                await self._raw_multi(ops)
                return
            except (NotEmpty, NoNode):
                continue
        raise NotEmpty(path, f"NOTEMPTY {path}: its children kept changing while it was being deleted")

    def _raw_multi(self, ops: list[Op]) -> Pending[list[OpResult]]:
        outcome: Pending[list[OpResult]] = Pending()

        def done(value: Any, error: MetadataError | None) -> None:
            self._deliver(_settler(outcome, value, error))

        if self._link is LinkState.CUT:
            error = ConnectionLoss(ops[0].path, f"session {self.name} is cut off")
            self._store._post(lambda: done(None, error))
        else:
            self._multi_request(ops, done)
        return outcome

    # --- watches

    def _arm(
        self, slots: dict[str, _Slot], path: str, watcher: Watcher, known: int | None, *, children: bool
    ) -> None:
        slot = slots.get(path)
        if slot is not None and slot.known != known:
            # The node changed and this slot's event was lost with a connection: fire it now.
            del slots[path]
            self._fire(path, slot, known, children=children)
            slot = None
        if slot is None:
            slot = slots[path] = _Slot(known=known)
        if watcher not in slot.watchers:  # ZooKeeper's clients keep watchers in a set
            slot.watchers.append(watcher)

    def _fire(self, path: str, slot: _Slot, now: int | None, *, children: bool) -> None:
        if now is None:
            kind = WatchKind.DELETED
        elif children:
            kind = WatchKind.CHILD
        elif slot.known is None:
            kind = WatchKind.CREATED
        else:
            kind = WatchKind.CHANGED
        self._run_watchers(slot.watchers, WatchEvent(kind=kind, path=path))

    def _run_watchers(self, watchers: list[Watcher], event: WatchEvent) -> None:
        def run() -> None:
            if self._state in (SessionState.CLOSED, SessionState.EXPIRED):
                return
            for watcher in watchers:
                watcher(event)

        self._deliver(run)

    def _on_watch(self, path: str, etype: str) -> None:
        if self._abandoned:
            return
        kind = _EVENT_KINDS[etype]
        popped: list[_Slot | None] = []
        if kind is WatchKind.CHILD:
            popped.append(self._child_slots.pop(path, None))
        else:
            popped.append(self._data_slots.pop(path, None))
            if kind is WatchKind.DELETED:  # kazoo fires a node's child watchers on its deletion too
                popped.append(self._child_slots.pop(path, None))
        watchers: list[Watcher] = []
        for slot in popped:
            if slot is not None:
                watchers.extend(w for w in slot.watchers if w not in watchers)
        if watchers:
            self._run_watchers(watchers, WatchEvent(kind=kind, path=path))

    def _rearm(self) -> None:
        """After a reconnection: re-arm every watch kazoo dropped, firing those whose node changed."""
        for path, slot in list(self._data_slots.items()):
            adapter = _KazooWatch(self, path, children=False)
            self._request(
                _exists_call(path, adapter), _mzxid, path, self._rearm_done(path, slot, children=False)
            )
        for path, slot in list(self._child_slots.items()):
            adapter = _KazooWatch(self, path, children=True)
            self._request(
                _children_call(path, adapter), _pzxid, path, self._rearm_done(path, slot, children=True)
            )

    def _rearm_done(self, path: str, slot: _Slot, *, children: bool) -> Done:
        slots = self._child_slots if children else self._data_slots

        def done(now: int | None, error: MetadataError | None) -> None:
            self._rearmed(slots, path, slot, now, error, children)

        return done

    def _rearmed(
        self,
        slots: dict[str, _Slot],
        path: str,
        slot: _Slot,
        now: int | None,
        error: MetadataError | None,
        children: bool,
    ) -> None:
        if slots.get(path) is not slot:
            return  # fired or replaced meanwhile
        if isinstance(error, NoNode):
            now = None
        elif error is not None:
            return  # the connection went again: the next reconnection re-arms
        if now != slot.known:
            del slots[path]
            self._fire(path, slot, now, children=children)

    # --- kazoo's state, and stopping

    def _kazoo_state(self, state: str) -> None:
        # kazoo's connection thread.
        if state == KazooState.LOST:
            with self._lock:
                self._lost = True
                if self._proxy is not None and not self._client_stopped:
                    # Else kazoo would open a new session by itself; the engine opens new sessions.
                    self._proxy.set_mode(LinkState.CUT)
        epoch = self._link_epoch
        self._store._post(lambda: self._on_kazoo_state(state, epoch))
        self._store._recheck()

    def _on_kazoo_state(self, state: str, epoch: int) -> None:
        if self._abandoned:
            return
        if state == KazooState.CONNECTED:
            if epoch == self._link_epoch and self._link is not LinkState.CUT:
                self._deliver(self._connected)
        elif state == KazooState.SUSPENDED:
            self._deliver(self._suspended)
        else:
            self._deliver(self._ended)

    def _tell_connected(self) -> None:
        """The first CONNECTED, for the session being open."""
        if not self._told_connected:
            self._told_connected = True
            self._notify(SessionState.CONNECTED)

    def _connected(self) -> None:
        self._tell_connected()
        if self._state is SessionState.SUSPENDED:
            self._state = SessionState.CONNECTED
            self._notify(SessionState.CONNECTED)
            self._rearm()

    def _suspended(self) -> None:
        if self._state is SessionState.CONNECTED:
            self._state = SessionState.SUSPENDED
            self._notify(SessionState.SUSPENDED)

    def _ended(self) -> None:
        if self._closing or self._state in (SessionState.CLOSED, SessionState.EXPIRED):
            return
        self._state = SessionState.EXPIRED
        self._data_slots.clear()
        self._child_slots.clear()
        self._fail_queued(lambda: SessionExpired("", f"session {self.name} expired"))
        self._notify(SessionState.EXPIRED)
        self._stop_client(clean=False)
        self._store._recheck()

    def _stop_client(self, *, clean: bool) -> None:
        """Stop kazoo: cleanly here (a close request reaches the server), or cut off, in the background."""
        with self._lock:
            if self._client_stopped:
                return
            self._client_stopped = True
            self._lost = True
            if not clean and self._proxy is not None:
                self._proxy.set_mode(LinkState.CUT)
        client, proxy = self._client, self._proxy

        def stop() -> None:
            try:
                client.stop()
                client.close()
            except Exception:
                log.exception("stopping ZooKeeper session %s", self.name)
            if proxy is not None:
                proxy.close()

        if clean:
            stop()
        else:
            self._store._reap(stop, self.name)

    def _shutdown(self) -> None:
        """The store is closing: close a live session cleanly; make sure kazoo and the proxy stop."""
        if not self._abandoned and self._state not in (SessionState.CLOSED, SessionState.EXPIRED):
            self.close()
        self._on_state = None
        self._abandoned = True
        self._stop_client(clean=False)


def _settler(pending: Pending[Any], value: Any, error: MetadataError | None) -> Callable[[], None]:
    def settle() -> None:
        if error is not None:
            pending.fail(error)
        else:
            pending.resolve(value)

    return settle


def _none(_raw: Any) -> None:
    return None


def _as_list(raw: Any) -> list[str]:
    return list(raw)


def _mzxid(raw: Any) -> int | None:
    return None if raw is None else int(raw.mzxid)


def _pzxid(raw: Any) -> int:
    return int(raw[1].pzxid)


def _exists_call(path: str, watch: _KazooWatch) -> Callable[[KazooClient], Any]:
    return lambda zk: zk.exists_async(path, watch=watch)


def _children_call(path: str, watch: _KazooWatch | None = None) -> Callable[[KazooClient], Any]:
    if watch is None:
        return lambda zk: zk.get_children_async(path)
    return lambda zk: zk.get_children_async(path, watch=watch, include_data=True)
