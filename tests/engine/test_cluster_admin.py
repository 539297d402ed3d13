"""Admin tooling on the facade: browsing messages, listing groups, resetting a group's offsets."""

from __future__ import annotations

import pytest

from lab.engine.errors import IllegalArgument, NonEmptyGroup, OffsetOutOfRange, UnknownTopicOrPartition
from tests.engine.helpers import checked_cluster


def _fill(c, n: int = 10):  # type: ignore[no-untyped-def]
    p = c.producer()
    for i in range(n):
        p.send("t", f"value-{i}", key=f"key-{i % 3}", partition=0, timestamp=1000 + i * 10)
    p.flush()


def test_browse_reads_committed_records_from_an_offset_or_a_time_and_searches() -> None:
    with checked_cluster(3) as c:
        c.create_topic("t", partitions=2, replication_factor=3)
        _fill(c)
        records = c.browse("t", 0)
        assert [r["offset"] for r in records] == list(range(10))
        assert records[3] == {
            "topic": "t",
            "partition": 0,
            "offset": 3,
            "timestamp": 1030,
            "key": "key-0",
            "value": "value-3",
            "headers": {},
        }
        assert [r["offset"] for r in c.browse("t", 0, offset=7)] == [7, 8, 9]
        assert [r["offset"] for r in c.browse("t", 0, timestamp=1055)] == [6, 7, 8, 9]
        assert [r["value"] for r in c.browse("t", 0, search="key-2")] == ["value-2", "value-5", "value-8"]
        assert len(c.browse("t", 0, limit=4)) == 4
        assert c.browse("t", 1) == []
        with pytest.raises(UnknownTopicOrPartition):
            c.browse("t", 2)
        with pytest.raises(OffsetOutOfRange):
            c.browse("t", 0, offset=99)
        with pytest.raises(IllegalArgument):
            c.browse("t", 0, limit=0)


def test_browse_never_shows_records_above_the_hw() -> None:
    with checked_cluster(3) as c:
        c.create_topic("t", replication_factor=3)
        _fill(c, 3)
        c.isolate_broker(2, from_="brokers")
        c.isolate_broker(3, from_="brokers")
        p = c.producer(acks="1")
        p.send("t", "not-yet-committed", partition=0)
        p.flush()
        assert [r["value"] for r in c.browse("t", 0)] == ["value-0", "value-1", "value-2"]


def test_reset_offsets_of_an_inactive_group_and_refuse_an_active_one() -> None:
    with checked_cluster(3) as c:
        c.create_topic("t", partitions=2, replication_factor=3)
        _fill(c)
        g = c.consumer("billing", enable_auto_commit="false", auto_offset_reset="earliest")
        g.subscribe(["t"])
        c.wait_for(lambda: g.state == "stable", 10_000)
        with pytest.raises(NonEmptyGroup, match="inactive, but the current state is Stable"):
            c.reset_group_offsets("billing", "t", "earliest")
        g.close()
        c.run_for(100)
        assert c.reset_group_offsets("billing", "t", 4) == {"t/0": 4, "t/1": 0}
        assert c.groups()["billing"]["committed"] == {"t/0": 4, "t/1": 0}
        assert c.reset_group_offsets("billing", "t", "latest", partitions=[0]) == {"t/0": 10}
        assert c.reset_group_offsets("billing", "t", {"timestamp": 1045}, partitions=[0]) == {"t/0": 5}
        again = c.consumer("billing", enable_auto_commit="false")
        again.subscribe(["t"])
        assert [r.offset for r in again.poll(timeout_ms=5000)] == [5, 6, 7, 8, 9]
        with pytest.raises(IllegalArgument):
            c.reset_group_offsets("billing", "t", "yesterday")


def test_reset_offsets_of_a_first_group_waits_for_the_offsets_topic() -> None:
    with checked_cluster(3) as c:
        c.create_topic("t", replication_factor=3)
        _fill(c, 5)
        # Nobody has used a group yet: __consumer_offsets does not exist until this call creates it.
        assert c.reset_group_offsets("fresh", "t", "latest") == {"t/0": 5}
        assert c.groups()["fresh"]["committed"] == {"t/0": 5}


def test_reassignments_lists_the_moves_under_way() -> None:
    with checked_cluster(4) as c:
        c.create_topic("t", replication_factor=3)
        assert c.reassignments() == {}
        c.reassign_partitions({("t", 0): [4, 2, 3]}, wait=False)
        c.wait_for(lambda: c.reassignments() == {"t-0": [4, 2, 3]}, 5000)
        c.wait_for(lambda: c.reassignments() == {}, 30_000)


def test_the_labs_own_zookeeper_client_is_released_only_when_no_question_waits_and_comes_back() -> None:
    with checked_cluster(3) as c:
        c.create_topic("t", partitions=1, replication_factor=3)
        asking = c.begin_zookeeper_tree()
        assert c.release_admin() is False  # the tree is on its way: the client stays
        assert c.run_until_true(asking.done, 5_000)
        assert "/brokers/topics/t" in {n["path"] for n in asking.result()}
        assert c.release_admin() is True
        assert c.release_admin() is False  # nothing left to release
        # The next question opens another client; the brokers never noticed.
        assert "/brokers/topics/t" in {n["path"] for n in c.zookeeper_tree()}
        assert "/brokers/ids/3" in {n["path"] for n in c.zookeeper_tree()}
