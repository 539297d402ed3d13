"""The timeline: the journal, newest first, each event with its reason, filterable.

Rows carry their topic, broker and group so the page filters them where they are;
the filter choices are the values the shown events have.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from lab.engine.events import Event

SHOWN = 150

# Kind -> tone: "bad" (something broke or was lost), "warn" (a step towards it), "good" (recovery),
# "info" (everything else). The tone is also a glyph, so it is never told by colour alone.
TONES: Mapping[str, str] = {
    "broker_killed": "bad",
    "broker_gone": "bad",
    "records_lost": "bad",
    "partition_offline": "bad",
    "produce_failed": "bad",
    "controller_error": "bad",
    "broker_error": "bad",
    "zookeeper_unreachable": "bad",
    "broker_refused": "bad",
    "truncated": "warn",
    "isr_shrink": "warn",
    "isr_update_failed": "warn",
    "zk_session_expired": "warn",
    "zk_disconnected": "warn",
    "broker_paused": "warn",
    "broker_isolated": "warn",
    "broker_slow": "warn",
    "broker_waiting": "warn",
    "fetch_error": "warn",
    "produce_retry": "warn",
    "member_removed": "warn",
    "member_left": "warn",
    "member_fenced": "warn",
    "coordinator_unknown": "warn",
    "rebalance_started": "warn",
    "isr_expand": "good",
    "zookeeper_reachable": "good",
    "zk_reconnected": "good",
    "broker_joined": "good",
    "broker_registered": "good",
    "broker_restarted": "good",
    "broker_resumed": "good",
    "broker_healed": "good",
    "log_recovered": "good",
    "reassignment_done": "good",
}
GLYPHS: Mapping[str, str] = {"bad": "✕", "warn": "!", "good": "✓", "info": "•"}


@dataclass(frozen=True, slots=True, kw_only=True)
class TimelineEvent:
    seq: int
    time_ms: int
    kind: str
    kind_label: str
    text: str
    topic: str | None
    partition: int | None
    broker: int | None
    group: str | None
    tone: str
    glyph: str

    @property
    def time_label(self) -> str:
        return f"{self.time_ms / 1000:.3f} s"


@dataclass(frozen=True, slots=True, kw_only=True)
class Timeline:
    events: tuple[TimelineEvent, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class TimelineFilters:
    topics: tuple[str, ...]
    brokers: tuple[int, ...]
    groups: tuple[str, ...]


def _event(e: Event) -> TimelineEvent:
    tone = TONES.get(e.kind, "info")
    if e.kind == "leader_election" and e.data.get("unclean"):
        tone = "bad"
    return TimelineEvent(
        seq=e.seq,
        time_ms=e.time_ms,
        kind=e.kind,
        kind_label=e.kind.replace("_", " "),
        text=e.text,
        topic=e.topic,
        partition=e.partition,
        broker=e.broker,
        group=e.group,
        tone=tone,
        glyph=GLYPHS[tone],
    )


def timeline(events: Sequence[Event], *, shown: int = SHOWN) -> Timeline:
    """The newest ``shown`` events, newest first."""
    newest = sorted(events, key=lambda e: e.seq, reverse=True)[:shown]
    return Timeline(events=tuple(_event(e) for e in newest))


def timeline_filters(events: Sequence[Event]) -> TimelineFilters:
    """The topics, brokers and groups the kept events mention."""
    return TimelineFilters(
        topics=tuple(sorted({e.topic for e in events if e.topic})),
        brokers=tuple(sorted({e.broker for e in events if e.broker is not None})),
        groups=tuple(sorted({e.group for e in events if e.group})),
    )
