"""What real clients do, counted: per connection for the Clients view, per client for the timeline.

A connection counts its requests (a rate over the last few seconds, on a clock the lab gives:
wall time in a live lab, since clients send in wall time; virtual time in tests), what is in
flight, and its last error with the API that got it. The timeline never gets a line per request:
each client's records and errors are summed and journalled once per ``SUMMARY_MS`` of virtual
time, and only when it produced, fetched or failed (an idle group member's heartbeats say nothing).
"""

from __future__ import annotations

from collections import Counter, deque
from dataclasses import dataclass, field

RATE_WINDOW_S = 5  # requests/s is averaged over this many seconds
SUMMARY_MS = 5_000  # one timeline line per client at most this often (virtual time)

# Errors a client answers by backing off and retrying: the timeline names them.
BACK_OFF = frozenset(
    {
        "NOT_LEADER_OR_FOLLOWER",
        "LEADER_NOT_AVAILABLE",
        "COORDINATOR_NOT_AVAILABLE",
        "NOT_COORDINATOR",
        "COORDINATOR_LOAD_IN_PROGRESS",
        "REQUEST_TIMED_OUT",
        "NOT_ENOUGH_REPLICAS",
        "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
        "FENCED_LEADER_EPOCH",
        "UNKNOWN_LEADER_EPOCH",
        "NOT_CONTROLLER",
    }
)


@dataclass(slots=True)
class RequestRate:
    """Requests per second over the last ``RATE_WINDOW_S`` seconds, in one bucket per second."""

    buckets: deque[list[int]] = field(default_factory=deque)  # [second, count], oldest first

    def add(self, now_s: float) -> None:
        second = int(now_s)
        if self.buckets and self.buckets[-1][0] == second:
            self.buckets[-1][1] += 1
        else:
            self.buckets.append([second, 1])
        self._trim(second)

    def per_second(self, now_s: float, since_s: float) -> float:
        """The mean over the window, or over the connection's life if it is younger."""
        second = int(now_s)
        self._trim(second)
        count = sum(c for s, c in self.buckets if s > second - RATE_WINDOW_S)
        span = min(float(RATE_WINDOW_S), max(1.0, now_s - since_s))
        return count / span

    def _trim(self, second: int) -> None:
        while self.buckets and self.buckets[0][0] <= second - RATE_WINDOW_S:
            self.buckets.popleft()


@dataclass(slots=True)
class ConnectionStats:
    requests: int = 0
    errors: int = 0
    last_error: str = ""  # Kafka's error name, or why the connection was dropped
    last_error_api: str = ""  # the API that got it ("" for a drop)
    last_error_ms: int | None = None
    records_produced: int = 0
    records_fetched: int = 0
    by_api: dict[str, int] = field(default_factory=dict)
    rate: RequestRate = field(default_factory=RequestRate)


@dataclass(slots=True)
class Activity:
    """What one client did since its last summary."""

    produced: Counter[str] = field(default_factory=Counter)  # records, by topic
    fetched: Counter[str] = field(default_factory=Counter)
    errors: Counter[tuple[str, str]] = field(default_factory=Counter)  # (error, API)
    since_ms: int = 0

    def __bool__(self) -> bool:
        return bool(self.produced or self.fetched or self.errors)


def client_label(software: tuple[str, str], client_id: str | None) -> str:
    """``kafka-python 2.3.3 (client.id billing-1)``; an older client says no software."""
    name = " ".join(s for s in software if s) or "a client"
    return f"{name} (client.id {client_id})" if client_id else name


def _records(counts: Counter[str], verb: str, preposition: str) -> str:
    total = sum(counts.values())
    topics = ", ".join(sorted(counts))
    return f"{verb} {total:,} record{'s' if total != 1 else ''} {preposition} {topics}"


def summary(label: str, activity: Activity, now_ms: int) -> str:
    """One line for the timeline: records by topic, errors by name and API."""
    parts = []
    if activity.produced:
        parts.append(_records(activity.produced, "produced", "to"))
    if activity.fetched:
        parts.append(_records(activity.fetched, "fetched", "from"))
    if activity.errors:
        total = sum(activity.errors.values())
        named = ", ".join(
            f"{error} in {api}" + (f" ({n} times)" if n > 1 else "")
            for (error, api), n in sorted(activity.errors.items(), key=lambda item: (-item[1], item[0]))
        )
        parts.append(f"{total:,} error{'s' if total != 1 else ''} {named}")
    seconds = max(0, now_ms - activity.since_ms) / 1000
    return f"{label} {', '.join(parts)} (last {seconds:.1f} s)"


def backs_off(activity: Activity) -> bool:
    return any(error in BACK_OFF for error, _ in activity.errors)
