"""The timeline: the journal, newest first, each event with its reason, filterable.

Rows carry their topic, the brokers they are about and their group, so the page filters
them where they are; the filter choices are the values the shown events have.

"All" is what a student follows: brokers, leaders, ISRs, records, groups. The lab's
housekeeping (log compaction, and everything about the internal topics such as
__consumer_offsets, whose partitions are elected and compacted like any other) sits
behind its own "Housekeeping" filter, and is kept apart in the newest rows too, so a
flood of it never pushes what a student did out of the list. A topic's own filter shows
every event of that topic, its housekeeping included.

An event is about every broker it names: the one that recorded it, a partition's new and
old leader, and the brokers that joined or left an ISR. So "broker 2" keeps the
elections of the partitions broker 2 led or now leads.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lab.engine.events import Event
from lab.visuals.clock import clock_label

SHOWN = 150  # the newest events a student follows
HOUSEKEEPING_SHOWN = 50  # and, apart, the newest housekeeping ones
HOUSEKEEPING_KINDS = frozenset({"compaction"})
# What real Kafka clients did (lab.wire), and what they made the lab do: the "Real clients" filter.
CLIENT_KINDS = frozenset(
    {
        "client_connected",
        "client_closed",
        "client_gave_up",
        "client_disconnected",
        "client_activity",
        "client_errors",
        "client_authenticated",
        "client_authentication_failed",
        "tls_handshake_failed",
        "topic_auto_created",
    }
)
INTERNAL_PREFIX = "__"

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
    "client_disconnected": "warn",  # the lab dropped a real client: a broker died, a bad frame...
    "client_gave_up": "warn",  # a real client gave up on a broker that did not answer
    "client_errors": "warn",  # a real client got errors that make it back off
    "authorization_denied": "warn",  # the authorizer refused a request (the reason is in the text)
    "client_authentication_failed": "warn",  # a real client's SASL login was refused
    "tls_handshake_failed": "warn",  # a connection to a TLS listener never got through its handshake
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
    brokers: tuple[int, ...]  # every broker it is about (the broker filter keeps it for each)
    group: str | None
    housekeeping: bool
    tone: str
    glyph: str
    real_client: bool = False  # about a real Kafka client (the "Real clients" filter)

    @property
    def time_label(self) -> str:
        return clock_label(self.time_ms)

    @property
    def brokers_attr(self) -> str:
        """For the page's filter: " 1 3 " (spaces around, so " 1 " matches whole ids)."""
        return f" {' '.join(map(str, self.brokers))} "


@dataclass(frozen=True, slots=True, kw_only=True)
class Timeline:
    events: tuple[TimelineEvent, ...]

    @property
    def housekeeping(self) -> int:
        return sum(e.housekeeping for e in self.events)


@dataclass(frozen=True, slots=True, kw_only=True)
class TimelineFilters:
    topics: tuple[str, ...]
    brokers: tuple[int, ...]
    groups: tuple[str, ...]
    housekeeping: bool  # some housekeeping happened: offer its filter
    clients: bool = False  # real clients did something: offer their filter
    housekeeping_tip: str = (
        "The lab's housekeeping, kept out of All: log compaction, and the internal topics "
        "(__consumer_offsets: its partitions' elections, ISR changes and cleaning)"
    )


def is_housekeeping(e: Event) -> bool:
    return e.kind in HOUSEKEEPING_KINDS or bool(e.topic and e.topic.startswith(INTERNAL_PREFIX))


def _ids(value: Any) -> set[int]:
    if isinstance(value, int) and not isinstance(value, bool):
        return {value} if value >= 0 else set()
    if isinstance(value, list | tuple):
        return {v for v in value if isinstance(v, int) and not isinstance(v, bool) and v >= 0}
    return set()


def brokers_of(e: Event) -> tuple[int, ...]:
    """Every broker ``e`` is about: who recorded it, a partition's new and old leader, and the
    brokers that joined or left its ISR."""
    about = _ids(e.broker) | _ids(e.data.get("leader")) | _ids(e.data.get("old_leader"))
    if "old_isr" in e.data and "isr" in e.data:
        about |= _ids(e.data["old_isr"]) ^ _ids(e.data["isr"])
    return tuple(sorted(about))


def _event(e: Event, earlier: Sequence[Event] = ()) -> TimelineEvent:
    tone = TONES.get(e.kind, "info")
    if e.kind == "leader_election" and e.data.get("unclean"):
        tone = "bad"
    text = e.text
    if earlier:
        n = len(earlier)
        text += (
            f" (and {n} earlier retr{'y' if n == 1 else 'ies'} of {e.topic}-{e.partition} after "
            f"{e.data.get('error')} since {clock_label(earlier[-1].time_ms)})"
        )
    return TimelineEvent(
        seq=e.seq,
        time_ms=e.time_ms,
        kind=e.kind,
        kind_label=e.kind.replace("_", " "),
        text=text,
        topic=e.topic,
        partition=e.partition,
        broker=e.broker,
        brokers=brokers_of(e),
        group=e.group,
        housekeeping=is_housekeeping(e),
        tone=tone,
        glyph=GLYPHS[tone],
        real_client=e.kind in CLIENT_KINDS,
    )


def timeline(
    events: Sequence[Event], *, shown: int = SHOWN, housekeeping: int = HOUSEKEEPING_SHOWN
) -> Timeline:
    """The newest ``shown`` events a student follows and the newest ``housekeeping`` others, newest first."""
    newest = sorted(events, key=lambda e: e.seq, reverse=True)
    main = _fold_retries([e for e in newest if not is_housekeeping(e)])[:shown]
    none: list[Event] = []
    chores = [(e, none) for e in newest if is_housekeeping(e)][:housekeeping]
    kept = sorted(main + chores, key=lambda row: row[0].seq, reverse=True)
    return Timeline(events=tuple(_event(e, earlier) for e, earlier in kept))


def _fold_retries(newest: Sequence[Event]) -> list[tuple[Event, list[Event]]]:
    """Each event with the retries folded into it: in a run of produce retries (nothing else between
    them), a producer's retries of one partition after one error are one row, the newest, saying how
    many came before. The journal keeps each (with its attempt); a leader gone for seconds makes
    dozens, which would push what happened out of the list."""
    rows: list[tuple[Event, list[Event]]] = []
    run: dict[tuple[Any, ...], list[Event]] = {}
    for e in newest:
        if e.kind != "produce_retry":
            run = {}
            rows.append((e, []))
            continue
        key = (e.data.get("client"), e.topic, e.partition, e.data.get("error"))
        earlier = run.get(key)
        if earlier is None:
            run[key] = []
            rows.append((e, run[key]))
        else:
            earlier.append(e)
    return rows


def timeline_filters(events: Sequence[Event]) -> TimelineFilters:
    """The user topics, brokers and groups the events a student follows mention, and whether there
    is housekeeping to show."""
    main = [e for e in events if not is_housekeeping(e)]
    return TimelineFilters(
        topics=tuple(
            sorted({e.topic for e in events if e.topic and not e.topic.startswith(INTERNAL_PREFIX)})
        ),
        brokers=tuple(sorted({b for e in main for b in brokers_of(e)})),
        groups=tuple(sorted({e.group for e in main if e.group})),
        housekeeping=any(is_housekeeping(e) for e in events),
        clients=any(e.kind in CLIENT_KINDS for e in events),
    )
