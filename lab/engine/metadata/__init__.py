"""Where a cluster keeps its metadata: ZooKeeper's model, in Kafka's layout.

``store.py`` is the protocol; ``memory.py`` keeps it in virtual time;
``zookeeper.py`` keeps it on a real server (import it from there: it is the
one module that brings in kazoo and threads); ``paths.py`` is Kafka's znode
layout and JSON; ``tree.py`` walks a tree for dumps and views.
"""

from lab.engine.metadata.memory import MemorySession, MemoryStore
from lab.engine.metadata.store import (
    BadArguments,
    BadVersion,
    CheckOp,
    ConnectionLoss,
    CreateOp,
    DeleteOp,
    LinkState,
    MetadataError,
    MetadataStore,
    NoChildrenForEphemerals,
    NodeExists,
    NoNode,
    NotEmpty,
    Op,
    OpResult,
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
from lab.engine.metadata.tree import ZnodeView, read_tree

__all__ = [
    "BadArguments",
    "BadVersion",
    "CheckOp",
    "ConnectionLoss",
    "CreateOp",
    "DeleteOp",
    "LinkState",
    "MemorySession",
    "MemoryStore",
    "MetadataError",
    "MetadataStore",
    "NoChildrenForEphemerals",
    "NoNode",
    "NodeExists",
    "NotEmpty",
    "Op",
    "OpResult",
    "Session",
    "SessionExpired",
    "SessionListener",
    "SessionState",
    "SetDataOp",
    "Stat",
    "WatchEvent",
    "WatchKind",
    "Watcher",
    "ZnodeView",
    "read_tree",
]
