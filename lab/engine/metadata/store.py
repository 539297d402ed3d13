"""The MetadataStore protocol: what the engine needs from ZooKeeper.

Two stores keep it: ``zookeeper.py`` on a real server through kazoo, and
``memory.py`` in virtual time. Both follow ZooKeeper's semantics, so one
contract test suite runs against both:

* a session has a timeout; the server expires it when it has heard nothing for
  that long, and then deletes the session's ephemeral nodes;
* znodes have data and a version that each ``set`` bumps; ``set``, ``delete``
  and ``check`` with a version succeed only on that version (-1 means any);
* watches are one-shot, as in ZooKeeper: set by ``get``/``exists`` (data) and
  ``get_children`` (children), fired once on the next change, on the engine's
  thread, through the session's owner;
* ``multi`` applies every op or none;
* operations of one session complete in the order they were issued.

Every operation returns a ``Pending`` that the store resolves later (on the
memory store by a scheduled event, on the ZooKeeper store when kazoo's answer
is drained onto the engine thread). An operation on a session whose link is
down fails with ``ConnectionLoss``; on an expired or closed one, with
``SessionExpired``.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from lab.engine.tasks import Pending


class MetadataError(Exception):
    """A ZooKeeper error, by ZooKeeper's name."""

    code = "SYSTEMERROR"

    def __init__(self, path: str = "", message: str = "") -> None:
        self.path = path
        super().__init__(message or f"{self.code} {path}".strip())


class NoNode(MetadataError):
    code = "NONODE"


class NodeExists(MetadataError):
    code = "NODEEXISTS"


class BadVersion(MetadataError):
    code = "BADVERSION"


class NotEmpty(MetadataError):
    code = "NOTEMPTY"


class NoChildrenForEphemerals(MetadataError):
    code = "NOCHILDRENFOREPHEMERALS"


class BadArguments(MetadataError):
    code = "BADARGUMENTS"


class ConnectionLoss(MetadataError):
    code = "CONNECTIONLOSS"


class SessionExpired(MetadataError):
    code = "SESSIONEXPIRED"


class SessionState(enum.Enum):
    CONNECTED = "connected"
    SUSPENDED = "suspended"  # link down; the session may still be alive on the server
    EXPIRED = "expired"  # the server ended it: its ephemerals are gone
    CLOSED = "closed"  # closed by its owner


class LinkState(enum.Enum):
    """What a broker's loopback proxy to ZooKeeper does with its traffic."""

    OPEN = "open"
    CUT = "cut"  # connections dropped, new ones refused: isolation from ZooKeeper
    HELD = "held"  # connection kept, nothing forwarded: a paused process


class WatchKind(enum.Enum):
    CREATED = "created"
    DELETED = "deleted"
    CHANGED = "changed"
    CHILD = "child"


@dataclass(frozen=True, slots=True, kw_only=True)
class WatchEvent:
    kind: WatchKind
    path: str


Watcher = Callable[[WatchEvent], None]


@dataclass(frozen=True, slots=True, kw_only=True)
class Stat:
    """A znode's metadata, as ZooKeeper's Stat has it (times in the store's own ms)."""

    czxid: int  # zxid of the create: Kafka uses it as the broker epoch
    mzxid: int
    version: int
    cversion: int
    ephemeral_owner: int  # the owning session's id, 0 for a persistent node
    num_children: int
    data_length: int
    # When the znode was made, in wall-clock ms as ZooKeeper's ctime (the memory store: the cluster's
    # epoch plus virtual time): how Kafka tells a change notification old enough to purge.
    ctime: int = 0


# Ops for ``multi``.


@dataclass(frozen=True, slots=True, kw_only=True)
class CreateOp:
    path: str
    data: bytes = b""
    ephemeral: bool = False
    sequential: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class SetDataOp:
    path: str
    data: bytes
    version: int = -1


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteOp:
    path: str
    version: int = -1


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckOp:
    path: str
    version: int


Op = CreateOp | SetDataOp | DeleteOp | CheckOp
# What each op gives back in a multi: the created path, the new Stat, None, None.
OpResult = str | Stat | None


class Session(Protocol):
    """One client session, as one broker (or the lab's admin client) holds it."""

    @property
    def session_id(self) -> int: ...

    @property
    def state(self) -> SessionState: ...

    def create(
        self,
        path: str,
        data: bytes = b"",
        *,
        ephemeral: bool = False,
        sequential: bool = False,
        make_parents: bool = False,
    ) -> Pending[str]: ...

    def get(self, path: str, watch: Watcher | None = None) -> Pending[tuple[bytes, Stat]]: ...

    def exists(self, path: str, watch: Watcher | None = None) -> Pending[Stat | None]: ...

    def get_children(self, path: str, watch: Watcher | None = None) -> Pending[list[str]]: ...

    def set(self, path: str, data: bytes, version: int = -1) -> Pending[Stat]: ...

    def delete(self, path: str, version: int = -1, *, recursive: bool = False) -> Pending[None]: ...

    def multi(self, ops: Sequence[Op]) -> Pending[list[OpResult]]: ...

    def close(self) -> None:
        """End the session cleanly: the server drops its ephemerals now."""

    def abandon(self) -> None:
        """The owner died: nothing more is sent; the server expires the session on its own."""

    def set_link(self, link: LinkState) -> None:
        """Cut, hold or reopen the session's connection (its proxy)."""

    @property
    def link(self) -> LinkState: ...

    @property
    def expires_in_ms(self) -> int | None:
        """While the server hears nothing from this session's client (its owner killed or paused,
        or cut off), how long until the server expires the session if that goes on: by the store's
        clock (virtual ms on the memory store, wall ms on ZooKeeper), 0 once due. None while the
        client is heard, and once the store knows the session ended."""


SessionListener = Callable[[SessionState], None]
OutageListener = Callable[[str | None], None]


class MetadataStore(Protocol):
    """Where a cluster keeps its metadata; one chroot per cluster."""

    @property
    def kind(self) -> str:
        """ "memory" or "zookeeper", for pages that say which one runs."""

    @property
    def realtime(self) -> bool:
        """True when sessions expire in wall-clock time (the ZooKeeper store)."""

    def open_session(self, *, name: str, timeout_ms: int, on_state: SessionListener) -> Session: ...

    def begin_session(self, *, name: str, timeout_ms: int, on_state: SessionListener) -> Pending[Session]:
        """``open_session`` without waiting for the server to accept it: the ZooKeeper store connects on
        a thread of its own and resolves the Pending on the engine's thread (at a drain), or fails it
        with ``ConnectionLoss``; the memory store answers at once."""
        ...

    def drain(self) -> int:
        """Run, on the engine's thread, what arrived from other threads; how many ran."""

    def begin_pacing(self, now_ms: int) -> None:
        """Anchor ``pace``: virtual ``now_ms`` is this instant."""

    def pace(self, until_ms: int) -> int:
        """Wait until virtual ``until_ms`` is due or something arrives; the virtual time reached.

        The memory store returns ``until_ms`` at once; the ZooKeeper store blocks
        in wall time, since its sessions expire in wall time.
        """

    def outage(self) -> str | None:
        """Why ZooKeeper cannot be reached now, in words ("ZooKeeper is not answering ..."), or None.

        The ZooKeeper store reads it off its sessions: it is out while not one of the sessions it
        may use is connected (one whose link the lab cut or holds does not count). Never on the
        memory store. Any thread may ask.
        """

    def on_outage(self, listener: OutageListener) -> None:
        """Call ``listener(outage())`` on the engine's thread (at a drain) each time it changes."""

    def close(self) -> None: ...
