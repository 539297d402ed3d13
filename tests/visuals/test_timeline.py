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
    assert view.events[-1].time_label == "0:00.250"
    assert view.events[-1].kind_label == "broker registered"


def test_only_the_newest_are_shown() -> None:
    many = [_e(i, "isr_expand") for i in range(1, 301)]
    assert [e.seq for e in timeline(many, shown=3).events] == [300, 299, 298]


def test_filters_offer_what_the_events_mention() -> None:
    f = timeline_filters(EVENTS)
    assert (f.topics, f.brokers, f.groups) == (("orders",), (1, 2), ("billing",))


def test_times_read_like_the_clock() -> None:
    (event,) = timeline([Event(seq=1, time_ms=205_752, kind="broker_killed", text="x", broker=2)]).events
    assert event.time_label == "3:25.752"  # the clock's format, not "205.752 s"


def _election(seq: int, topic: str, partition: int, leader: int, old: int, **data: object) -> Event:
    return _e(
        seq,
        "leader_election",
        topic=topic,
        partition=partition,
        broker=1,  # recorded by the controller
        data={"leader": leader, "old_leader": old, "isr": [leader], "unclean": False, **data},
    )


def test_an_event_is_about_every_broker_it_names() -> None:
    view = timeline(
        [
            _election(1, "orders", 1, leader=3, old=2),  # broker 2 led orders-1, broker 3 leads it now
            _e(
                2,
                "isr_shrink",
                topic="orders",
                partition=0,
                broker=1,
                data={"isr": [1, 3], "old_isr": [1, 2, 3]},
            ),
            _e(
                3,
                "partition_state",
                topic="orders",
                partition=2,
                broker=1,
                data={"leader": 3, "old_leader": 3},
            ),
        ]
    )
    by_seq = {e.seq: e for e in view.events}
    assert by_seq[1].brokers == (1, 2, 3)  # the controller, the old leader, the new one
    assert by_seq[1].brokers_attr == " 1 2 3 "
    assert by_seq[2].brokers == (1, 2)  # the leader that shrank it, and broker 2 that left
    assert by_seq[3].brokers == (1, 3)
    assert timeline_filters([_election(1, "orders", 1, leader=3, old=2)]).brokers == (1, 2, 3)


def test_housekeeping_is_kept_apart_from_what_a_student_follows() -> None:
    events = [
        _e(1, "broker_killed", broker=2),
        _election(2, "__consumer_offsets", 4, leader=3, old=2),
        _e(3, "compaction", topic="__consumer_offsets", partition=1, broker=3),
        _e(4, "compaction", topic="orders", partition=0, broker=1),
        _election(5, "orders", 1, leader=3, old=2),
        _e(6, "topic_created", topic="__consumer_offsets", broker=1),
    ]
    view = timeline(events)
    assert [e.seq for e in view.events if not e.housekeeping] == [5, 1]
    assert [e.seq for e in view.events if e.housekeeping] == [6, 4, 3, 2]
    assert view.housekeeping == 4
    f = timeline_filters(events)
    assert f.housekeeping
    assert f.topics == ("orders",)  # internal topics are behind the housekeeping filter
    assert "compaction" in f.housekeeping_tip
    assert "__consumer_offsets" in f.housekeeping_tip


def test_a_flood_of_housekeeping_never_pushes_out_what_a_student_did() -> None:
    events = [_e(1, "broker_killed", broker=2)] + [
        _e(i, "compaction", topic="__consumer_offsets", partition=0, broker=1) for i in range(2, 500)
    ]
    view = timeline(events, shown=10, housekeeping=5)
    assert [e.seq for e in view.events if not e.housekeeping] == [1]
    assert [e.seq for e in view.events if e.housekeeping] == [499, 498, 497, 496, 495]


def test_what_real_clients_did_has_its_own_filter() -> None:
    events = [
        *EVENTS,
        _e(6, "client_connected", broker=1),
        _e(7, "client_errors", topic="orders"),
        _e(8, "topic_auto_created", topic="payments", broker=2),
    ]
    view = timeline(events)
    assert [e.seq for e in view.events if e.real_client] == [8, 7, 6]
    assert timeline_filters(events).clients
    assert not timeline_filters(EVENTS).clients


def test_a_denial_is_a_warning_about_its_topic_or_group() -> None:
    denied = [
        _e(1, "authorization_denied", topic="orders", broker=1),
        _e(2, "authorization_denied", group="billing", broker=2),
    ]
    view = timeline(denied)
    assert {(e.tone, e.glyph) for e in view.events} == {("warn", "!")}
    assert view.events[0].kind_label == "authorization denied"
    f = timeline_filters(denied)
    assert (f.topics, f.groups) == (("orders",), ("billing",))


def test_a_run_of_one_producers_retries_of_a_partition_is_one_row_saying_how_many() -> None:
    def retry(seq: int, partition: int, error: str = "NETWORK_EXCEPTION") -> Event:
        return _e(
            seq,
            "produce_retry",
            topic="orders",
            partition=partition,
            data={"client": "producer-1", "error": error, "attempt": seq},
        )

    events = [_e(1, "broker_killed", broker=2)]
    events += [retry(seq, partition=seq % 2) for seq in range(2, 42)]  # two partitions, interleaved
    events += [
        _e(42, "leader_election", topic="orders", partition=0),
        retry(43, 0),
        retry(44, 0, "NOT_LEADER_OR_FOLLOWER"),
    ]
    view = timeline(events, shown=6)
    assert [e.seq for e in view.events] == [44, 43, 42, 41, 40, 1]
    rows = {e.seq: e.text for e in view.events}
    assert rows[44] == "produce_retry #44"  # another error: a row of its own
    assert rows[43] == "produce_retry #43"  # after the election: a new run
    assert (
        rows[41]
        == "produce_retry #41 (and 19 earlier retries of orders-1 after NETWORK_EXCEPTION since 0:00.750)"
    )
    assert (
        rows[40]
        == "produce_retry #40 (and 19 earlier retries of orders-0 after NETWORK_EXCEPTION since 0:00.500)"
    )
