"""A read-only walk of a znode tree through any session, for dumps and the dashboard."""

from __future__ import annotations

from dataclasses import dataclass

from lab.engine.metadata.paths import check_path, join
from lab.engine.metadata.store import NoNode, Session, Stat
from lab.engine.tasks import Pending


@dataclass(frozen=True, slots=True, kw_only=True)
class ZnodeView:
    path: str
    data: bytes
    stat: Stat


async def read_tree(session: Session, root: str = "/") -> list[ZnodeView]:
    """Every znode under ``root`` (itself included), depth first, siblings by name.

    Uses only protocol reads, level by level with each level's reads in flight
    together; a node deleted during the walk is left out (the walk is not a
    snapshot: ZooKeeper has none). A missing ``root`` raises ``NoNode``.
    """
    check_path(root)
    out: list[ZnodeView] = []
    level = [root]
    while level:
        reads: list[tuple[str, Pending[tuple[bytes, Stat]], Pending[list[str]]]] = [
            (path, session.get(path), session.get_children(path)) for path in level
        ]
        level = []
        for path, data_pending, children_pending in reads:
            try:
                data, stat = await data_pending
                children = await children_pending
            except NoNode:
                if path == root:
                    raise
                continue
            out.append(ZnodeView(path=path, data=data, stat=stat))
            level.extend(join(path, name) for name in sorted(children))
    return _preorder(out)


def _preorder(views: list[ZnodeView]) -> list[ZnodeView]:
    # Sorting path components gives depth-first order with siblings by name.
    return sorted(views, key=lambda v: [] if v.path == "/" else v.path.split("/")[1:])
