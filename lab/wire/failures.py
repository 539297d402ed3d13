"""Failed TLS handshakes and SASL logins in the lab's timeline, with their reasons, summed up.

The first failure of a kind from one host on one broker's listener is told in full ("TLS handshake from
127.0.0.1:54321 to broker 1's SSL listener failed: not TLS"); the ones after it in the next 5 s (virtual
time, as every summary of the lab's) are counted and told as one line when the window ends ("12 more
... in 5 s"), so a flood of garbage (a port scanner, a client retrying a wrong password) cannot flood
the timeline. The client itself is told only what Kafka tells it (``lab.wire.sasl``); the timeline,
which the lab's owner reads, says what was really wrong.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lab.engine.cluster import Cluster
    from lab.engine.scheduler import Timer

WINDOW_MS = 5_000
TLS = "tls_handshake_failed"
SASL = "client_authentication_failed"
WHAT = {TLS: "failed TLS handshake", SASL: "failed SASL authentication"}
Key = tuple[str, int, str, str]  # (kind, broker, listener, host)


@dataclass(slots=True)
class _Window:
    latest: str  # the reason of the newest failure
    more: int = 0  # failures since the line that was written
    timer: Timer | None = field(default=None, repr=False)


class FailureLog:
    """One lab's failed handshakes and logins (every broker's listeners), summed up for the timeline."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.open: dict[Key, _Window] = {}
        self.total = 0

    def tls_failed(self, *, broker: int, listener: str, peer: str, reason: str) -> None:
        self._failed(
            (TLS, broker, listener, _host(peer)),
            f"TLS handshake from {peer} to broker {broker}'s {listener} listener failed: {reason}",
            reason,
        )

    def sasl_failed(
        self, *, broker: int, listener: str, peer: str, client: str, mechanism: str, user: str, reason: str
    ) -> None:
        who = f"User:{user}" if user else "an unnamed user"
        self._failed(
            (SASL, broker, listener, _host(peer)),
            f"SASL/{mechanism} authentication of {who} ({client}) on broker {broker}'s {listener} listener "
            f"failed: {reason}",
            f"{who}, {reason}",
        )

    def _failed(self, key: Key, text: str, reason: str) -> None:
        self.total += 1
        window = self.open.get(key)
        if window is not None:
            window.more += 1
            window.latest = reason
            return
        window = self.open[key] = _Window(reason)
        self._record(key, text, count=1, reason=reason)
        window.timer = self._later(key)

    def _later(self, key: Key) -> Timer:
        return self.cluster.scheduler.call_later(WINDOW_MS, self._close, key, label="wire: failures' summary")

    def _close(self, key: Key) -> None:
        """A window's end: "N more" if failures went on (and another window opens), else forget it."""
        window = self.open.get(key)
        if window is None:
            return
        if not window.more:
            del self.open[key]
            return
        kind, broker, listener, host = key
        n = window.more
        text = (
            f"{n} more {WHAT[kind]}{'s' if n != 1 else ''} from {host} on broker {broker}'s {listener} "
            f"listener in {WINDOW_MS // 1000} s; the latest: {window.latest}"
        )
        self._record(key, text, count=n, reason=window.latest)
        window.more = 0
        window.timer = self._later(key)

    def _record(self, key: Key, text: str, *, count: int, reason: str) -> None:
        kind, broker, listener, host = key
        self.cluster.journal.record(
            kind, text, broker=broker, listener=listener, host=host, count=count, reason=reason
        )


def _host(peer: str) -> str:
    """The host of ``host:port`` (an IPv6 address keeps its colons)."""
    host, sep, port = peer.rpartition(":")
    return host if sep and port.isdigit() else peer
