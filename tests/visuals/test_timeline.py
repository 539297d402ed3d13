"""The timeline: newest first, each event's words, a tone told by a glyph too, and filter choices."""

from __future__ import annotations

from lab.engine.events import Event
from lab.visuals.timeline import timeline, timeline_filters


def _e(seq: int, kind: str, **kw: object) -> Event:
    return Event(seq=seq, time_ms=seq * 250, kind=kind, text=f"{kind} #{seq}", **kw)  # type: ignore[arg-type]


EVENTS = [
    _e(1, "broker_registered", broker=1),
    _e(2, "isr_shrink", topic="orders", partition=0, broker=1),
    _e(3, "broker_killed", broker=2),
    _e(4, "leader_election", topic="orders", partition=0, data={"unclean": True}),
    _e(5, "rebalance", group="billing"),
]


def test_newest_first_with_words_and_tone_glyphs() -> None:
    view = timeline(EVENTS)
    assert [e.seq for e in view.events] == [5, 4, 3, 2, 1]
    tones = {e.kind: (e.tone, e.glyph) for e in view.events}
    assert tones["broker_killed"] == ("bad", "✕")
    assert tones["isr_shrink"] == ("warn", "!")
    assert tones["broker_registered"] == ("good", "✓")
    assert tones["leader_election"] == ("bad", "✕")  # an unclean election loses data
    assert view.events[-1].time_label == "0.250 s"
    assert view.events[-1].kind_label == "broker registered"


def test_only_the_newest_are_shown() -> None:
    many = [_e(i, "isr_expand") for i in range(1, 301)]
    assert [e.seq for e in timeline(many, shown=3).events] == [300, 299, 298]


def test_filters_offer_what_the_events_mention() -> None:
    f = timeline_filters(EVENTS)
    assert (f.topics, f.brokers, f.groups) == (("orders",), (1, 2), ("billing",))
