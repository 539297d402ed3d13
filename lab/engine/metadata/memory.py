"""ZooKeeper's semantics in virtual time: the deterministic metadata store.

One ``MemoryStore`` plays the server; each ``MemorySession`` plays a client
library and its connection. The server applies an operation the moment it is
issued (the wire is modelled on the way back only), and everything the server
sends a session (results, watch events, state changes) travels one FIFO
channel that arrives ``latency_ms`` later: so a session's operations complete
in issue order and it sees a watch event before any later read that shows the
change, as ZooKeeper guarantees.

Link faults model the broker's loopback proxy: CUT (the client sees SUSPENDED,
its pending operations fail with ConnectionLoss), HELD (a paused process: it
notices nothing, its new operations wait) and OPEN again. While the link is
not OPEN the server hears nothing and expires the session ``timeout_ms`` after
the last contact, deleting its ephemerals in one transaction; the client
learns EXPIRED only when its link opens again. Watch events that fire while a
live session is cut off reach it when the link is restored, as the Java
client's watch re-registration gives.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from lab.engine.errors import IllegalArgument, IllegalState
from lab.engine.metadata.paths import (
    ancestors,
    check_data,
    check_op,
    check_path,
    check_version,
    name_of,
    parent_of,
    sequence_suffix,
)
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
from lab.engine.scheduler import Scheduler, Timer
from lab.engine.tasks import Pending

T = TypeVar("T")

# ZooKeeper's zxid is (epoch << 32 | counter); a fresh server runs epoch 1.
_FIRST_ZXID = 1 << 32
# Session ids carry the server id in the top byte, as ZooKeeper's do.
_SESSION_ID_BASE = 1 << 56


@dataclass(slots=True)
class _Znode:
    data: bytes
    czxid: int
    mzxid: int
    pzxid: int
    version: int
    creates: int  # children ever created: ZooKeeper's stored cversion, and the sequential counter
    ephemeral_owner: int
    children: set[str]
    ctime: int = 0  # wall-clock ms when made (the store's epoch plus virtual time)

    def copy(self) -> _Znode:
        return replace(self, children=set(self.children))

    def stat(self) -> Stat:
        return Stat(
            czxid=self.czxid,
            mzxid=self.mzxid,
            version=self.version,
            # As ZooKeeper's DataNode reports it: creates plus deletes.
            cversion=self.creates * 2 - len(self.children),
            ephemeral_owner=self.ephemeral_owner,
            num_children=len(self.children),
            data_length=len(self.data),
            ctime=self.ctime,
        )


class _Txn:
    """One ZooKeeper transaction: copy-on-write over the tree, applied whole or not at all."""

    def __init__(self, nodes: dict[str, _Znode], zxid: int, now_ms: int = 0) -> None:
        self._base = nodes
        self.now_ms = now_ms
        self._over: dict[str, _Znode | None] = {}
        self.zxid = zxid
        self.events: list[tuple[WatchKind, str]] = []

    @property
    def wrote(self) -> bool:
        return bool(self._over)

    def get(self, path: str) -> _Znode | None:
        if path in self._over:
            return self._over[path]
        return self._base.get(path)

    def _writable(self, path: str) -> _Znode:
        node = self._over.get(path)
        if node is None:
            base = self._base[path]
            node = self._over[path] = base.copy()
        return node

    def _need(self, path: str) -> _Znode:
        node = self.get(path)
        if node is None:
            raise NoNode(path)
        return node

    def create(self, path: str, data: bytes, *, owner: int, sequential: bool) -> str:
        parent_path = parent_of(path)
        parent = self.get(parent_path)
        if parent is None:
            raise NoNode(path, f"NONODE {path}: its parent {parent_path} does not exist")
        if sequential:
            path = path + sequence_suffix(parent.creates)
        if self.get(path) is not None:
            raise NodeExists(path)
        if parent.ephemeral_owner:
            raise NoChildrenForEphemerals(path, f"NOCHILDRENFOREPHEMERALS {path}: {parent_path} is ephemeral")
        writable = self._writable(parent_path)
        writable.children.add(name_of(path))
        writable.creates += 1
        writable.pzxid = self.zxid
        self._over[path] = _Znode(
            data=data,
            czxid=self.zxid,
            mzxid=self.zxid,
            pzxid=self.zxid,
            version=0,
            creates=0,
            ephemeral_owner=owner,
            children=set(),
            ctime=self.now_ms,
        )
        self.events.append((WatchKind.CREATED, path))
        self.events.append((WatchKind.CHILD, parent_path))
        return path

    def set(self, path: str, data: bytes, version: int) -> Stat:
        node = self._need(path)
        if version != -1 and node.version != version:
            raise BadVersion(path, f"BADVERSION {path}: expected version {version}, it is {node.version}")
        writable = self._writable(path)
        writable.data = data
        writable.version += 1
        writable.mzxid = self.zxid
        self.events.append((WatchKind.CHANGED, path))
        return writable.stat()

    def check(self, path: str, version: int) -> None:
        node = self._need(path)
        if version != -1 and node.version != version:
            raise BadVersion(path, f"BADVERSION {path}: expected version {version}, it is {node.version}")

    def delete(self, path: str, version: int) -> None:
        if path == "/":
            raise BadArguments(path, "the root znode cannot be deleted")
        node = self._need(path)
        if version != -1 and node.version != version:
            raise BadVersion(path, f"BADVERSION {path}: expected version {version}, it is {node.version}")
        if node.children:
            raise NotEmpty(path, f"NOTEMPTY {path}: it has {len(node.children)} children")
        parent_path = parent_of(path)
        parent = self._writable(parent_path)
        parent.children.discard(name_of(path))
        parent.pzxid = self.zxid
        self._over[path] = None
        self.events.append((WatchKind.DELETED, path))
        self.events.append((WatchKind.CHILD, parent_path))

    def subtree(self, path: str) -> list[str]:
        """``path`` and everything under it, parents before children."""
        out = [path]
        i = 0
        while i < len(out):
            node = self._need(out[i])
            out.extend(_child_path(out[i], name) for name in sorted(node.children))
            i += 1
        return out

    def commit(self) -> None:
        for path, node in self._over.items():
            if node is None:
                self._base.pop(path, None)
            else:
                self._base[path] = node


def _child_path(parent: str, name: str) -> str:
    return f"/{name}" if parent == "/" else f"{parent}/{name}"


@dataclass(slots=True)
class _Delivery:
    """Something the server sends a session: an op's result, a watch event or a state change."""

    kind: str  # "result" | "event" | "state", or "local" for what the client library itself says
    run: Callable[[], None]
    pending: Pending[Any] | None = None


_WatchTable = dict[str, dict[int, list[Watcher]]]


class MemoryStore:
    """A ZooKeeper server and its clients, in the engine's virtual time."""

    def __init__(self, scheduler: Scheduler, *, latency_ms: int = 1, epoch_ms: int = 0) -> None:
        if isinstance(latency_ms, bool) or not isinstance(latency_ms, int) or latency_ms < 0:
            raise IllegalArgument(f"latency_ms must be a non-negative integer, got {latency_ms!r}")
        self.scheduler = scheduler
        self.latency_ms = latency_ms
        self.epoch_ms = epoch_ms  # wall-clock ms at virtual zero: what a znode's ctime counts from
        self._nodes: dict[str, _Znode] = {
            "/": _Znode(
                data=b"", czxid=0, mzxid=0, pzxid=0, version=0, creates=0, ephemeral_owner=0, children=set()
            )
        }
        self._zxid = _FIRST_ZXID - 1  # the last zxid used
        self._sessions: dict[int, MemorySession] = {}
        self._session_seq = 0
        self._data_watches: _WatchTable = {}
        self._child_watches: _WatchTable = {}
        self._closed = False

    # --- MetadataStore

    @property
    def kind(self) -> str:
        return "memory"

    @property
    def realtime(self) -> bool:
        return False

    def open_session(self, *, name: str, timeout_ms: int, on_state: SessionListener) -> MemorySession:
        if self._closed:
            raise IllegalState("the metadata store is closed")
        if isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int) or timeout_ms <= 0:
            raise IllegalArgument(f"session timeout_ms must be a positive integer, got {timeout_ms!r}")
        self._session_seq += 1
        session_id = _SESSION_ID_BASE + self._session_seq
        self._zxid += 1  # createSession is a transaction
        session = MemorySession(self, session_id, name=name, timeout_ms=timeout_ms, on_state=on_state)
        self._sessions[session_id] = session
        session._send(_Delivery("state", lambda: session._notify(SessionState.CONNECTED)), 0)
        return session

    def begin_session(self, *, name: str, timeout_ms: int, on_state: SessionListener) -> Pending[Session]:
        return Pending.resolved(self.open_session(name=name, timeout_ms=timeout_ms, on_state=on_state))

    def drain(self) -> int:
        return 0

    def begin_pacing(self, now_ms: int) -> None:
        return None

    def pace(self, until_ms: int) -> int:
        return until_ms

    def outage(self) -> str | None:
        return None  # the memory store is its own server: it always answers

    def on_outage(self, listener: OutageListener) -> None:
        return None

    def close(self) -> None:
        """Stop every session's callbacks; the tree stays readable for dumps."""
        for session in list(self._sessions.values()):
            session._drop_client()
            session._cancel_expiry()
        self._closed = True

    # --- the server

    @property
    def last_zxid(self) -> int:
        return self._zxid

    def _read(self, path: str) -> _Znode | None:
        return self._nodes.get(path)

    def _transact(self, body: Callable[[_Txn], T]) -> T:
        txn = _Txn(self._nodes, self._zxid + 1, self.epoch_ms + self.scheduler.now_ms)
        result = body(txn)  # raises: nothing changed
        if txn.wrote:
            self._zxid = txn.zxid
            txn.commit()
            self._fire(txn.events)
        return result

    def _watch(self, table: _WatchTable, path: str, session_id: int, watcher: Watcher) -> None:
        watchers = table.setdefault(path, {}).setdefault(session_id, [])
        if watcher not in watchers:  # ZooKeeper's clients keep watchers in a set
            watchers.append(watcher)

    def _fire(self, events: list[tuple[WatchKind, str]]) -> None:
        for kind, path in events:
            if kind is WatchKind.CHILD:
                targets = self._child_watches.pop(path, {})
            elif kind is WatchKind.DELETED:
                targets = self._data_watches.pop(path, {})
                for sid, watchers in self._child_watches.pop(path, {}).items():
                    merged = targets.setdefault(sid, [])
                    merged.extend(w for w in watchers if w not in merged)
            else:
                targets = self._data_watches.pop(path, {})
            event = WatchEvent(kind=kind, path=path)
            for sid, watchers in targets.items():
                session = self._sessions.get(sid)
                if session is not None:
                    session._send_event(event, watchers)

    def _forget_watches(self, session_id: int) -> None:
        for table in (self._data_watches, self._child_watches):
            for path in list(table):
                table[path].pop(session_id, None)
                if not table[path]:
                    del table[path]

    def _end_session(self, session: MemorySession) -> None:
        """closeSession, or the server's expiry: ephemerals go in one transaction."""
        if not session._server_alive:
            return
        session._server_alive = False
        session._cancel_expiry()
        self._forget_watches(session.session_id)
        owned = sorted(p for p, n in self._nodes.items() if n.ephemeral_owner == session.session_id)

        def body(txn: _Txn) -> None:
            for path in owned:
                txn.delete(path, -1)

        self._transact(body)
        if not owned:
            self._zxid += 1  # closeSession is a transaction even with nothing to delete


class MemorySession:
    """A client session on the memory store (see the module docstring for its faults)."""

    def __init__(
        self, store: MemoryStore, session_id: int, *, name: str, timeout_ms: int, on_state: SessionListener
    ) -> None:
        self._store = store
        self._scheduler = store.scheduler
        self._session_id = session_id
        self.name = name
        self.timeout_ms = timeout_ms
        self._on_state: SessionListener | None = on_state
        self._state = SessionState.CONNECTED
        self._link = LinkState.OPEN
        self._server_alive = True
        self._abandoned = False
        self._expiry: Timer | None = None
        self._last_arrival = 0
        self._connection = 0  # bumped by each cut: what was on the old connection is lost
        self._inflight: dict[int, Pending[Any]] = {}  # results on the wire, by id
        self._held: list[_Delivery] = []  # arrived while the process was paused
        self._parked: list[_Delivery] = []  # watch events that fired while cut off
        self._outbox: list[tuple[Pending[Any], Callable[[], Any]]] = []  # issued while paused

    def __repr__(self) -> str:
        state, link = self._state.value, self._link.value
        return f"<MemorySession {self.name} 0x{self._session_id:x} {state} link={link}>"

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
    def expires_in_ms(self) -> int | None:
        if self._expiry is None:  # heard, or already ended
            return None
        return max(0, self._expiry.time_ms - self._scheduler.now_ms)

    def create(
        self,
        path: str,
        data: bytes = b"",
        *,
        ephemeral: bool = False,
        sequential: bool = False,
        make_parents: bool = False,
    ) -> Pending[str]:
        owner = self._session_id if ephemeral else 0

        def apply() -> str:
            check_path(path, sequential=sequential)
            check_data(path, data)

            def body(txn: _Txn) -> str:
                if make_parents:
                    for ancestor in ancestors(path):
                        if txn.get(ancestor) is None:
                            txn.create(ancestor, b"", owner=0, sequential=False)
                return txn.create(path, data, owner=owner, sequential=sequential)

            return self._store._transact(body)

        return self._op(apply)

    def get(self, path: str, watch: Watcher | None = None) -> Pending[tuple[bytes, Stat]]:
        def apply() -> tuple[bytes, Stat]:
            check_path(path)
            node = self._store._read(path)
            if node is None:
                raise NoNode(path)
            if watch is not None:
                self._store._watch(self._store._data_watches, path, self._session_id, watch)
            return node.data, node.stat()

        return self._op(apply)

    def exists(self, path: str, watch: Watcher | None = None) -> Pending[Stat | None]:
        def apply() -> Stat | None:
            check_path(path)
            node = self._store._read(path)
            if watch is not None:  # set even when absent: it fires on creation
                self._store._watch(self._store._data_watches, path, self._session_id, watch)
            return None if node is None else node.stat()

        return self._op(apply)

    def get_children(self, path: str, watch: Watcher | None = None) -> Pending[list[str]]:
        def apply() -> list[str]:
            check_path(path)
            node = self._store._read(path)
            if node is None:
                raise NoNode(path)
            if watch is not None:
                self._store._watch(self._store._child_watches, path, self._session_id, watch)
            return sorted(node.children)

        return self._op(apply)

    def set(self, path: str, data: bytes, version: int = -1) -> Pending[Stat]:
        def apply() -> Stat:
            check_path(path)
            check_data(path, data)
            check_version(path, version)
            return self._store._transact(lambda txn: txn.set(path, data, version))

        return self._op(apply)

    def delete(self, path: str, version: int = -1, *, recursive: bool = False) -> Pending[None]:
        def apply() -> None:
            check_path(path)
            check_version(path, version)

            def body(txn: _Txn) -> None:
                if not recursive:
                    txn.delete(path, version)
                    return
                if path == "/":
                    raise BadArguments(path, "the root znode cannot be deleted")
                txn.check(path, version)
                for sub in reversed(txn.subtree(path)):
                    txn.delete(sub, -1)

            self._store._transact(body)

        return self._op(apply)

    def multi(self, ops: Sequence[Op]) -> Pending[list[OpResult]]:
        op_list = list(ops)

        def apply() -> list[OpResult]:
            for op in op_list:
                check_op(op)

            def body(txn: _Txn) -> list[OpResult]:
                results: list[OpResult] = []
                for op in op_list:
                    if isinstance(op, CreateOp):
                        owner = self._session_id if op.ephemeral else 0
                        results.append(txn.create(op.path, op.data, owner=owner, sequential=op.sequential))
                    elif isinstance(op, SetDataOp):
                        results.append(txn.set(op.path, op.data, op.version))
                    elif isinstance(op, DeleteOp):
                        txn.delete(op.path, op.version)
                        results.append(None)
                    else:
                        txn.check(op.path, op.version)
                        results.append(None)
                return results

            return self._store._transact(body)

        return self._op(apply)

    def close(self) -> None:
        if self._abandoned or self._state in (SessionState.CLOSED, SessionState.EXPIRED):
            return
        self._state = SessionState.CLOSED
        self._fail_outbox(SessionExpired)
        held, self._held = self._held, []
        for d in held:  # the owner is running (it is closing): it reads what had arrived
            self._send(d, 0)
        if self._link is LinkState.OPEN:
            self._store._end_session(self)
        # else the close request cannot reach the server: it expires the session later.
        self._send(_Delivery("state", lambda: self._notify(SessionState.CLOSED)), 0)

    def abandon(self) -> None:
        if self._abandoned:
            return
        self._drop_client()
        self._store._forget_watches(self._session_id)
        if self._server_alive:
            self._start_expiry()

    def set_link(self, link: LinkState) -> None:
        if not isinstance(link, LinkState):
            raise IllegalArgument(f"link must be a LinkState, got {link!r}")
        old, self._link = self._link, link
        if old is link or self._abandoned:
            return
        if link is not LinkState.OPEN:
            self._start_expiry()  # the server hears nothing from now on (no-op if already started)
        if link is LinkState.CUT:
            self._on_cut(from_held=old is LinkState.HELD)
        elif link is LinkState.OPEN:
            self._on_open()
        # HELD: nothing for the client to notice; arrivals wait in _held, new ops in _outbox.

    # --- the client side

    def _op(self, apply: Callable[[], T]) -> Pending[T]:
        pending: Pending[T] = Pending()
        if self._abandoned:
            pending.fail(SessionExpired("", "the session's owner abandoned it"))
        elif self._state in (SessionState.CLOSED, SessionState.EXPIRED):
            self._reply(pending, None, SessionExpired("", f"session {self.name} is {self._state.value}"), 0)
        elif self._link is LinkState.CUT:
            self._reply(pending, None, ConnectionLoss("", f"session {self.name} is cut off"), 0)
        elif self._link is LinkState.HELD:
            self._outbox.append((pending, apply))
        else:
            self._execute(pending, apply)
        return pending

    def _execute(self, pending: Pending[T], apply: Callable[[], T]) -> None:
        try:
            value = apply()
        except MetadataError as exc:
            self._reply(pending, None, exc, self._store.latency_ms)
        else:
            self._reply(pending, value, None, self._store.latency_ms)

    def _reply(self, pending: Pending[T], value: T | None, error: MetadataError | None, delay: int) -> None:
        """An op's outcome; ``delay`` 0 is the client library failing it locally."""

        def run() -> None:
            if error is not None:
                pending.fail(error)
            else:
                pending.resolve(value)  # type: ignore[arg-type]

        if delay:
            self._inflight[id(pending)] = pending
            self._send(_Delivery("result", run, pending), delay)
        else:
            self._send(_Delivery("local", run), 0)

    def _send(self, delivery: _Delivery, delay: int) -> None:
        """One FIFO channel from the server to this client."""
        at = max(self._scheduler.now_ms + delay, self._last_arrival)
        self._last_arrival = at
        self._scheduler.call_at(
            at, self._arrive, delivery, self._connection, label=f"zk:{self.name}:{delivery.kind}"
        )

    def _send_event(self, event: WatchEvent, watchers: list[Watcher]) -> None:
        def run() -> None:
            for watcher in watchers:
                watcher(event)

        self._send(_Delivery("event", run), self._store.latency_ms)

    def _arrive(self, d: _Delivery, connection: int) -> None:
        if self._abandoned:
            return
        if d.pending is not None:
            self._inflight.pop(id(d.pending), None)
        lost = connection != self._connection or self._link is LinkState.CUT
        if lost and d.kind == "result":
            if d.pending is not None:  # failed at the cut already, unless it was cut while in flight
                d.pending.fail(ConnectionLoss("", f"session {self.name} was cut off"))
            return
        if lost and d.kind == "event":
            if self._state not in (SessionState.CLOSED, SessionState.EXPIRED):
                self._parked.append(d)  # re-registered watches fire once the link is back
            return
        if self._link is LinkState.HELD and self._state is not SessionState.CLOSED:
            self._held.append(d)  # a paused process reads nothing
            return
        if d.kind == "event" and self._state in (SessionState.CLOSED, SessionState.EXPIRED):
            return
        d.run()

    def _notify(self, state: SessionState) -> None:
        if self._on_state is not None:
            self._on_state(state)

    def _set_state(self, state: SessionState) -> None:
        if self._state is not state:
            self._state = state
            self._send(_Delivery("state", lambda: self._notify(state)), 0)

    def _on_cut(self, *, from_held: bool) -> None:
        self._connection += 1
        self._last_arrival = self._scheduler.now_ms  # what was on the wire is gone; the client learns now
        if from_held:
            # The process runs again, cut off: what it had not read is lost with the connection.
            held, self._held = self._held, []
            for d in held:
                if d.kind == "result" and d.pending is not None:
                    self._inflight[id(d.pending)] = d.pending
                elif d.kind == "event":
                    self._parked.append(d)
                else:
                    self._send(d, 0)
            self._fail_outbox(ConnectionLoss)
        if self._state is SessionState.CONNECTED:
            self._set_state(SessionState.SUSPENDED)
        inflight, self._inflight = list(self._inflight.values()), {}
        if inflight:

            def fail_all() -> None:
                for pending in inflight:
                    pending.fail(ConnectionLoss("", f"session {self.name} was cut off"))

            self._send(_Delivery("state", fail_all), 0)

    def _on_open(self) -> None:
        held, self._held = self._held, []
        for d in held:  # the process resumes and reads what arrived meanwhile, in order
            self._send(d, 0)
        parked, self._parked = self._parked, []
        outbox, self._outbox = self._outbox, []
        if self._state in (SessionState.CLOSED, SessionState.EXPIRED):
            return
        if self._server_alive:
            self._cancel_expiry()
            self._set_state(SessionState.CONNECTED)
            for d in parked:
                self._send(d, 0)
            for pending, apply in outbox:
                self._execute(pending, apply)
        else:
            self._set_state(SessionState.EXPIRED)
            for pending, _ in outbox:
                self._reply(pending, None, SessionExpired("", f"session {self.name} expired"), 0)

    def _fail_outbox(self, error: type[MetadataError]) -> None:
        outbox, self._outbox = self._outbox, []
        for pending, _ in outbox:
            self._reply(pending, None, error("", f"session {self.name} is {self._state.value}"), 0)

    def _drop_client(self) -> None:
        """The owner is gone: nothing reaches it any more."""
        self._abandoned = True
        self._on_state = None
        self._state = SessionState.CLOSED
        self._inflight.clear()
        self._held.clear()
        self._parked.clear()
        self._outbox.clear()

    # --- the server side of this session

    def _start_expiry(self) -> None:
        if self._server_alive and self._expiry is None:
            self._expiry = self._scheduler.call_later(
                self.timeout_ms, self._expire, label=f"zk:{self.name}:session-expiry"
            )

    def _cancel_expiry(self) -> None:
        Scheduler.cancel(self._expiry)
        self._expiry = None

    def _expire(self) -> None:
        self._expiry = None
        self._store._end_session(self)
