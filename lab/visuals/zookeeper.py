"""The ZooKeeper tree of a lab's chroot: znodes as they are, ephemeral ones marked.

Built from two polls, the last and the one before, so a node that just appeared is
flagged ``new`` and one that just vanished stays one poll longer as ``gone``: a
student sees /brokers/ids/2 disappear when broker 2's session expires.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lab.visuals.glossary import tip

SUMMARY_CHARS = 72


@dataclass(frozen=True, slots=True, kw_only=True)
class Znode:
    path: str
    name: str
    depth: int
    data: str
    summary: str  # the data on one short line
    pretty: str | None  # indented JSON, when the data is a JSON object
    ephemeral: bool
    version: int
    children: int
    new: bool
    gone: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class ZooKeeperTree:
    chroot: str
    store: str  # zookeeper | memory
    nodes: tuple[Znode, ...]
    error: str | None
    ephemeral_tip: str

    @property
    def count(self) -> int:
        return sum(not n.gone for n in self.nodes)

    @property
    def ephemerals(self) -> int:
        return sum(n.ephemeral and not n.gone for n in self.nodes)


def _pretty(data: str) -> str | None:
    text = data.strip()
    if not text.startswith("{"):
        return None
    try:
        return json.dumps(json.loads(text), indent=2, sort_keys=True)
    except ValueError:
        return None


def _summary(data: str) -> str:
    one = " ".join(data.split())
    return one if len(one) <= SUMMARY_CHARS else one[: SUMMARY_CHARS - 1] + "…"


def _znode(node: Mapping[str, Any], *, new: bool, gone: bool) -> Znode:
    path = str(node["path"])
    data = str(node.get("data") or "")
    return Znode(
        path=path,
        name="/" if path == "/" else path.rsplit("/", 1)[1],
        depth=0 if path == "/" else path.count("/"),
        data=data,
        summary=_summary(data),
        pretty=_pretty(data),
        ephemeral=bool(node.get("ephemeral")),
        version=int(node.get("version") or 0),
        children=int(node.get("children") or 0),
        new=new,
        gone=gone,
    )


def _order(path: str) -> list[str]:
    return [] if path == "/" else path.split("/")[1:]


def zookeeper_tree(
    nodes: Sequence[Mapping[str, Any]] | None,
    previous: Sequence[Mapping[str, Any]] | None,
    *,
    chroot: str,
    store: str,
    config: Mapping[str, str],
    error: str | None = None,
) -> ZooKeeperTree:
    """The tree from the latest poll (``nodes``) and the one before (``previous``, None at first)."""
    current = {str(n["path"]): n for n in nodes or ()}
    before = {str(n["path"]): n for n in previous or ()}
    out = [_znode(n, new=previous is not None and p not in before, gone=False) for p, n in current.items()]
    out += [_znode(n, new=False, gone=True) for p, n in before.items() if p not in current]
    out.sort(key=lambda z: _order(z.path))
    return ZooKeeperTree(
        chroot=chroot,
        store=store,
        nodes=tuple(out),
        error=error,
        ephemeral_tip=tip("ephemeral", config),
    )
