"""The journal: what happened and when, read with a "since" cursor."""

from __future__ import annotations

import json
from dataclasses import FrozenInstanceError

import pytest

from lab.engine.events import Event, Journal
from lab.engine.scheduler import Scheduler


def _journal(limit: int = 50_000) -> tuple[Scheduler, Journal]:
    s = Scheduler()
    return s, Journal(s, limit=limit)


def test_events_carry_the_virtual_time_and_a_growing_sequence() -> None:
    s, journal = _journal()
    first = journal.record("broker_killed", "broker 2 killed", broker=2)
    s.run_until(1500)
    second = journal.record(
        "leader_elected", "broker 3 leads orders-0", topic="orders", partition=0, broker=3
    )
    assert (first.seq, first.time_ms) == (1, 0)
    assert (second.seq, second.time_ms) == (2, 1500)
    assert journal.last_seq == 2
    assert [e.kind for e in journal] == ["broker_killed", "leader_elected"]
    assert len(journal) == 2


def test_extra_details_go_into_data() -> None:
    _, journal = _journal()
    event = journal.record(
        "isr_shrink", "broker 3 left the ISR", topic="t", partition=1, old=[1, 2, 3], new=[1, 2]
    )
    assert event.data == {"old": [1, 2, 3], "new": [1, 2]}
    assert event.topic == "t"
    assert event.partition == 1
    assert event.group is None


def test_since_returns_what_came_after_the_cursor() -> None:
    _, journal = _journal()
    for i in range(5):
        journal.record("tick", f"event {i}")
    assert [e.seq for e in journal.since(0)] == [1, 2, 3, 4, 5]
    assert [e.seq for e in journal.since(3)] == [4, 5]
    assert journal.since(5) == []
    assert journal.since(99) == []  # a cursor from the future sees nothing, not an error


def test_a_reader_that_keeps_its_cursor_sees_every_event_once() -> None:
    s, journal = _journal()
    cursor = 0
    seen: list[int] = []
    for round_ in range(4):
        for _ in range(round_):
            journal.record("tick", "x")
            s.run_until(s.now_ms + 10)
        new = journal.since(cursor)
        seen += [e.seq for e in new]
        if new:
            cursor = new[-1].seq
    assert seen == list(range(1, journal.last_seq + 1))


def test_an_empty_journal_has_nothing_since_zero() -> None:
    _, journal = _journal()
    assert journal.since(0) == []
    assert journal.last_seq == 0


def test_the_limit_drops_the_oldest_events_and_the_cursor_keeps_counting() -> None:
    _, journal = _journal(limit=3)
    for i in range(10):
        journal.record("tick", f"event {i}")
    assert len(journal) == 3
    assert journal.last_seq == 10
    assert [e.seq for e in journal] == [8, 9, 10]
    assert [e.seq for e in journal.since(0)] == [8, 9, 10]  # all that is kept
    assert [e.seq for e in journal.since(2)] == [8, 9, 10]  # a reader that fell behind gets what is left
    assert [e.seq for e in journal.since(8)] == [9, 10]
    assert [e.seq for e in journal.since(9)] == [10]
    assert journal.since(10) == []


def test_of_kind_filters_by_kind() -> None:
    _, journal = _journal()
    journal.record("a", "1")
    journal.record("b", "2")
    journal.record("a", "3")
    journal.record("c", "4")
    assert [e.text for e in journal.of_kind("a")] == ["1", "3"]
    assert [e.text for e in journal.of_kind("a", "c")] == ["1", "3", "4"]
    assert journal.of_kind("z") == []


def test_iterating_is_over_a_copy() -> None:
    _, journal = _journal()
    journal.record("a", "1")
    seen = []
    for event in journal:
        seen.append(event.seq)
        if len(seen) < 3:
            journal.record("b", "recorded while reading")
    assert seen == [1]


def test_to_dict_is_json_safe_and_keeps_every_field() -> None:
    s, journal = _journal()
    s.run_until(42)
    event = journal.record(
        "records_lost",
        "offsets 3..4 of orders-0 were lost",
        topic="orders",
        partition=0,
        broker=2,
        group=None,
        offsets=[3, 4],
        reason="unclean election",
    )
    d = event.to_dict()
    assert json.loads(json.dumps(d)) == d
    assert d == {
        "seq": 1,
        "time_ms": 42,
        "kind": "records_lost",
        "text": "offsets 3..4 of orders-0 were lost",
        "topic": "orders",
        "partition": 0,
        "broker": 2,
        "group": None,
        "data": {"offsets": [3, 4], "reason": "unclean election"},
    }


def test_to_dict_gives_a_copy_of_the_data() -> None:
    _, journal = _journal()
    event = journal.record("x", "y", n=1)
    d = event.to_dict()
    d["data"]["n"] = 2
    assert event.data == {"n": 1}


def test_events_are_frozen() -> None:
    _, journal = _journal()
    event = journal.record("x", "y")
    with pytest.raises(FrozenInstanceError):
        event.text = "changed"  # type: ignore[misc]
    assert isinstance(event, Event)


def test_every_event_a_cluster_records_survives_a_json_round_trip() -> None:
    from lab.engine.cluster import Cluster

    with Cluster.create(brokers=3, seed=3, config={"replica.lag.time.max.ms": "2000"}) as c:
        c.create_topic("orders", partitions=2, replication_factor=3)
        c.simulated_producer("orders", rate_per_s=20)
        c.simulated_consumer("billing", ["orders"], processing_ms=5)
        c.run_for(3000)
        c.kill_broker(2)
        c.run_for(8000)
        c.restart_broker(2)
        c.isolate_broker(3, from_="brokers")
        c.run_for(5000)
        c.heal(3)
        c.run_for(5000)
        events = c.events()
        kinds = {e.kind for e in events}
        assert {"broker_killed", "isr_shrink", "isr_expand", "rebalance"} <= kinds
        for event in events:
            d = event.to_dict()
            assert json.loads(json.dumps(d)) == d, event.kind  # tuples or objects in data would not survive
