"""The journal: what happened, when (virtual ms), and why, in words a student reads.

Every decision the engine takes that a person would want explained is an
``Event``: a leader election with its reason, an ISR shrink with the lag that
caused it, a truncation with the offsets it dropped, records lost. The journal
is append-only with a cursor (``seq``), so pages and the API read "since".
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True, kw_only=True)
class Event:
    seq: int
    time_ms: int
    kind: str  # e.g. "leader_elected", "isr_shrink", "broker_killed", "records_lost"
    text: str
    topic: str | None = None
    partition: int | None = None
    broker: int | None = None
    group: str | None = None
    data: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "time_ms": self.time_ms,
            "kind": self.kind,
            "text": self.text,
            "topic": self.topic,
            "partition": self.partition,
            "broker": self.broker,
            "group": self.group,
            "data": dict(self.data),
        }


class Journal:
    """Append-only; keeps the newest ``limit`` events (the cursor keeps counting)."""

    def __init__(self, clock: Any, *, limit: int = 50_000) -> None:
        self._clock = clock  # anything with ``now_ms``
        self._events: list[Event] = []
        self._limit = limit
        self._seq = 0

    def record(
        self,
        kind: str,
        text: str,
        *,
        topic: str | None = None,
        partition: int | None = None,
        broker: int | None = None,
        group: str | None = None,
        **data: Any,
    ) -> Event:
        self._seq += 1
        event = Event(
            seq=self._seq,
            time_ms=int(self._clock.now_ms),
            kind=kind,
            text=text,
            topic=topic,
            partition=partition,
            broker=broker,
            group=group,
            data=data,
        )
        self._events.append(event)
        if len(self._events) > self._limit:
            del self._events[: len(self._events) - self._limit]
        return event

    @property
    def last_seq(self) -> int:
        return self._seq

    def since(self, seq: int) -> list[Event]:
        """Events after cursor ``seq`` (0: all kept)."""
        if not self._events or seq >= self._seq:
            return []
        first = self._events[0].seq
        start = max(0, seq + 1 - first)
        return self._events[start:]

    def of_kind(self, *kinds: str) -> list[Event]:
        return [e for e in self._events if e.kind in kinds]

    def __iter__(self) -> Iterator[Event]:
        return iter(list(self._events))

    def __len__(self) -> int:
        return len(self._events)
