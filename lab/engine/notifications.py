"""Kafka's change notifications, as its ZkNodeChangeNotificationListener keeps them.

A change to ACLs or configs is announced by a sequential znode under a root (``/kafka-acl-changes``,
``/kafka-acl-extended-changes``, ``/config/changes``) that every broker watches. Nobody deletes one
when it has been read: each broker that processes a root's notifications then purges those made more
than ``CHANGE_EXPIRATION_MS`` ago (by the znode's ctime), so they do not pile up for ever, and a
broker down for longer than that reloads everything anyway when it starts.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from typing import Protocol

from lab.engine.metadata.store import NoNode, Stat
from lab.engine.tasks import Pending

CHANGE_EXPIRATION_MS = 15 * 60 * 1000  # Kafka's changeExpirationMs: 15 minutes


class NotificationSession(Protocol):
    def get(self, path: str) -> Pending[tuple[bytes, Stat]]: ...
    def delete(self, path: str, version: int = -1) -> Pending[None]: ...


async def purge_obsolete(zk: NotificationSession, root: str, names: Iterable[str], now_ms: int) -> list[str]:
    """Delete the notifications under ``root`` made more than 15 minutes before ``now_ms`` (wall-clock
    ms, as a znode's ctime); the names purged. Another broker purging the same ones first is fine."""
    purged: list[str] = []
    for name in sorted(names):
        path = f"{root}/{name}"
        try:
            _, stat = await zk.get(path)
        except NoNode:
            continue
        if now_ms - stat.ctime <= CHANGE_EXPIRATION_MS:
            break  # sequential: every later one is younger
        with contextlib.suppress(NoNode):
            await zk.delete(path)
        purged.append(name)
    return purged
