"""Each broker's ZooKeeper session as ZooKeeper sees it, not as the broker believes.

A paused broker still thinks its session is connected while ZooKeeper, hearing nothing,
expires it and deletes /brokers/ids/<id>. So the line under each broker is read from the
server's side: the broker's registration znode in the tree the lab last read (present, and
owned by which session), and how long until the server expires a session it no longer hears
(a kill, a pause, a cut). From a kill, that is zookeeper.session.timeout.ms, counted down
live; on the ZooKeeper store the real server expires the session, and the line turns when
the tree shows the znode gone (the tree is read about once a second).

Kept apart from the cluster map's controls: the countdown changes every frame.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lab.visuals.glossary import governed_by

DOWN = ("killed", "stopped")

# State -> glyph: told by a shape as well as a colour.
GLYPHS: Mapping[str, str] = {
    "connected": "●",
    "unheard": "◔",
    "expiring": "◔",
    "waiting": "◔",
    "expired": "✕",
    "closed": "■",
    "registering": "◌",
    "unknown": "?",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionLine:
    broker: int
    state: str  # connected | unheard | expiring | waiting | expired | closed | registering | unknown
    label: str  # what the broker's column says
    title: str  # why, with the config that governs it
    expires_in_ms: int | None  # the countdown, in tenths of a second, while the server hears nothing
    znode: bool | None  # /brokers/ids/<id> in the tree (None: the tree is not read yet)

    @property
    def glyph(self) -> str:
        return GLYPHS.get(self.state, "?")


@dataclass(frozen=True, slots=True, kw_only=True)
class Sessions:
    lines: tuple[SessionLine, ...]

    @property
    def by_id(self) -> dict[int, SessionLine]:
        return {line.broker: line for line in self.lines}


def _seconds(ms: int) -> str:
    return f"{ms / 1000:.1f} s"


def _tenths(ms: int | None) -> int | None:
    """Rounded up to 100 ms: a frame a tenth of a second, and 0 only once due."""
    return None if ms is None else -(-int(ms) // 100) * 100


def session_line(
    broker: Mapping[str, Any], znodes: Mapping[str, Mapping[str, Any]] | None, config: Mapping[str, str]
) -> SessionLine:
    """One broker's line, from its snapshot entry and the tree's znodes by path (None: not read yet)."""
    bid = int(broker["id"])
    path = f"/brokers/ids/{bid}"
    state = str(broker.get("state"))
    timeout = broker.get("session_timeout_ms")
    rule = governed_by("zookeeper.session.timeout.ms", config)
    own = broker.get("session_id")
    left = _tenths(broker.get("session_expires_in_ms"))
    client = str(broker.get("session") or "closed")
    node = None if znodes is None else znodes.get(path)
    znode = None if znodes is None else node is not None
    why_silent = {
        "killed": f"broker {bid} was killed: no goodbye",
        "paused": f"broker {bid} is paused: it sends no heartbeats (and does not know yet)",
        "isolated": f"broker {bid} is cut off from ZooKeeper",
    }.get(state, f"ZooKeeper hears nothing from broker {bid}")

    def line(kind: str, label: str, title: str, expires: int | None = None) -> SessionLine:
        return SessionLine(
            broker=bid, state=kind, label=label, title=f"{title} ({rule})", expires_in_ms=expires, znode=znode
        )

    def countdown(ms: int, whose: str) -> SessionLine:
        if ms > 0:
            return line(
                "unheard",
                f"session expires in {_seconds(ms)}",
                f"{why_silent}. ZooKeeper expires {whose} session zookeeper.session.timeout.ms ({timeout} ms) "
                f"after it last heard from it, then deletes {path}; the controller then moves its leaderships",
                ms,
            )
        return line(
            "expiring",
            "session expiring…",
            f"{why_silent}. {whose.capitalize()} session's zookeeper.session.timeout.ms has run out: ZooKeeper "
            f"expires it at its next tick and deletes {path}",
            0,
        )

    if znodes is None:  # the tree is not read yet: only the broker's side is known
        if left is not None:
            return countdown(left, "its")
        return line(
            "unknown", f"session {client}", f"Broker {bid}'s own view of its session; {path} not read yet"
        )
    if node is not None and own is not None and node.get("ephemeral_owner") == own:
        if left is not None:
            return countdown(left, "its")
        return line(
            "connected",
            "session connected",
            f"ZooKeeper hears from broker {bid}'s session, which owns the ephemeral znode {path}",
        )
    if node is not None:  # held by another session: a restarted broker's previous run
        owner = node.get("ephemeral_owner")
        old_left = _tenths(broker.get("previous_session_expires_in_ms"))
        if broker.get("previous_session_id") == owner and old_left is not None and old_left > 0:
            return line(
                "waiting",
                f"old session expires in {_seconds(old_left)}",
                f"{path} still belongs to the session of broker {bid}'s killed run; ZooKeeper expires it "
                f"zookeeper.session.timeout.ms ({timeout} ms) after the kill, and only then can broker {bid} "
                "register again",
                old_left,
            )
        return line(
            "waiting",
            "old session expiring…",
            f"{path} still belongs to an earlier session of broker {bid}, which ZooKeeper has not expired yet; "
            f"broker {bid} registers once it has",
        )
    # No /brokers/ids/<id>.
    if state == "stopped" and left is None:
        return line(
            "closed",
            f"no session: {path} gone",
            f"Broker {bid} stopped cleanly: it closed its session, and ZooKeeper deleted {path} at once",
        )
    if state in DOWN or state == "paused" or left is not None or client in ("expired", "suspended"):
        unaware = (
            " (the paused broker does not know yet)" if state == "paused" and client == "connected" else ""
        )
        return line(
            "expired",
            f"session expired: {path} gone",
            f"ZooKeeper expired broker {bid}'s session and deleted {path}{unaware}; the controller took its "
            "partitions' leaderships away",
        )
    return line(
        "registering",
        f"registering: {path} not there yet",
        f"Broker {bid} has a session and is writing {path}; the next read of the tree shows it",
    )


def sessions_view(
    snapshot: Mapping[str, Any], tree: Sequence[Mapping[str, Any]] | None, config: Mapping[str, str]
) -> Sessions:
    """Every broker's line, from the snapshot and the ZooKeeper tree the lab last read."""
    znodes = None if tree is None else {str(n["path"]): n for n in tree}
    return Sessions(lines=tuple(session_line(b, znodes, config) for b in snapshot.get("brokers", ())))
