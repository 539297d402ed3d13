"""Simulated clients: producers that send at a rate, consumers that take time per record and commit."""

from __future__ import annotations

from typing import Any

import pytest

from lab.engine.cluster import Cluster
from lab.engine.errors import IllegalArgument
from lab.engine.ids import TopicPartition
from lab.engine.simclients import SimulatedConsumer


def _cluster(seed: int = 1, partitions: int = 1) -> Cluster:
    c = Cluster.create(brokers=3, seed=seed)
    c.create_topic("orders", partitions=partitions, replication_factor=3)
    return c


def _read_all(c: Cluster, partitions: int = 1) -> list[tuple[bytes | None, bytes | None]]:
    reader = c.consumer()
    reader.assign([("orders", p) for p in range(partitions)])
    for p in range(partitions):
        reader.seek("orders", p, 0)
    out: list[tuple[bytes | None, bytes | None]] = []
    for _ in range(10):
        out += [(r.key, r.value) for r in reader.poll(timeout_ms=300)]
    reader.close()
    return out


def _fill(c: Cluster, n: int) -> None:
    p = c.producer()
    for i in range(n):
        p.send("orders", f"v{i}", partition=0)
    p.flush()


def _committed(c: Cluster, group: str) -> dict[str, int]:
    committed: dict[str, int] = c.snapshot()["groups"].get(group, {}).get("committed", {})
    return committed


# Producers


@pytest.mark.parametrize(("rate", "seconds", "expected"), [(20, 5, 100), (250, 2, 500), (0.5, 10, 5)])
def test_a_simulated_producer_sends_at_its_rate_in_virtual_time(
    rate: float, seconds: int, expected: int
) -> None:
    with _cluster() as c:
        sim = c.simulated_producer("orders", rate_per_s=rate)
        c.run_for(seconds * 1000)
        assert expected <= sim.describe()["sent"] <= expected + max(2, rate / 100)  # plus the tick at t=0


def test_what_it_sends_reaches_the_log() -> None:
    with _cluster(partitions=2) as c:
        sim = c.simulated_producer("orders", rate_per_s=100, acks="all")
        c.run_for(3000)
        sim.stop()
        c.run_for(1000)
        view = sim.describe()
        assert view["acked"] == view["sent"] == sim.seq
        assert view["failed"] == 0
        assert view["unanswered"] == 0
        values = sorted(v or b"" for _, v in _read_all(c, partitions=2))
        assert values == sorted(f"{sim.name}-{i}".encode() for i in range(sim.seq))


def test_keys_come_from_the_given_number_of_keys() -> None:
    with _cluster() as c:
        sim = c.simulated_producer("orders", rate_per_s=100, keys=3)
        c.run_for(2000)
        sim.stop()
        c.run_for(500)
        keys = [k for k, _ in _read_all(c)]
        assert len(keys) == sim.seq
        assert set(keys) == {b"key-0", b"key-1", b"key-2"}


def test_without_keys_records_have_none() -> None:
    with _cluster() as c:
        sim = c.simulated_producer("orders", rate_per_s=50, keys=None)
        c.run_for(1000)
        sim.stop()
        c.run_for(500)
        keys = [k for k, _ in _read_all(c)]
        assert keys
        assert set(keys) == {None}


def test_the_same_seed_draws_the_same_keys() -> None:
    def run(seed: int) -> list[bytes | None]:
        with _cluster(seed=seed) as c:
            sim = c.simulated_producer("orders", rate_per_s=100, keys=10)
            c.run_for(1000)
            sim.stop()
            c.run_for(500)
            return [k for k, _ in _read_all(c)]

    assert run(11) == run(11)
    assert run(11) != run(12)


def test_a_stopped_producer_sends_no_more_but_hears_its_answers() -> None:
    with _cluster() as c:
        sim = c.simulated_producer("orders", rate_per_s=100)
        c.run_for(1000)
        sim.stop()
        sent = sim.seq
        c.run_for(2000)
        view = sim.describe()
        assert view["state"] == "stopped"
        assert view["sent"] == sent
        assert view["acked"] == sent


def test_a_crashed_producer_sends_no_more_and_its_producer_is_closed() -> None:
    with _cluster() as c:
        sim = c.simulated_producer("orders", rate_per_s=100)
        c.run_for(1000)
        sim.crash()
        sent = sim.seq
        c.run_for(2000)
        assert sim.state == "crashed"
        assert sim.seq == sent
        assert sim.producer.closed


def test_set_rate_changes_the_pace() -> None:
    with _cluster() as c:
        sim = c.simulated_producer("orders", rate_per_s=10)
        c.run_for(1000)
        before = sim.seq
        sim.set_rate(200)
        c.run_for(1000)
        assert 195 <= sim.seq - before <= 205


@pytest.mark.parametrize(("rate", "keys"), [(0, 3), (-1, 3), (100_001, 3), (10, 0)])
def test_a_bad_rate_or_key_count_is_refused(rate: float, keys: int) -> None:
    with _cluster() as c:
        with pytest.raises(IllegalArgument):
            c.simulated_producer("orders", rate_per_s=rate, keys=keys)
        sim = c.simulated_producer("orders", rate_per_s=10)
        with pytest.raises(IllegalArgument, match="rate_per_s"):
            sim.set_rate(0)
        assert sim.rate_per_s == 10


# Consumers


def _consumer(c: Cluster, *, processing_ms: int, **config: Any) -> SimulatedConsumer:
    return c.simulated_consumer("billing", ["orders"], processing_ms=processing_ms, **config)


def test_a_simulated_consumer_takes_processing_ms_per_record() -> None:
    with _cluster() as c:
        _fill(c, 50)
        sim = _consumer(c, processing_ms=100, max_poll_records=10)
        c.wait_for(lambda: len(sim.processed) >= 10, 10_000)
        first_batch_done = c.now_ms
        c.wait_for(lambda: len(sim.processed) == 50, 10_000)
        # Four more polls of ten records at 100 ms each, and nothing faster.
        assert 4000 <= c.now_ms - first_batch_done <= 4100
        assert [offset for _, offset, _ in sim.processed] == list(range(50))
        assert sim.describe()["consumed"] == 50


def test_it_commits_what_it_processed_and_no_more() -> None:
    with _cluster() as c:
        _fill(c, 40)
        sim = _consumer(c, processing_ms=100, max_poll_records=10)
        c.wait_for(lambda: len(sim.processed) >= 10, 10_000)
        for _ in range(40):
            c.run_for(100)
            committed = _committed(c, "billing").get("orders/0", 0)
            assert committed <= len(sim.processed)  # never ahead of what was processed: at-least-once
        c.wait_for(lambda: _committed(c, "billing").get("orders/0") == 40, 5000)
        assert sim.errors == []


def test_a_stopped_consumer_commits_and_leaves_at_once() -> None:
    with _cluster(partitions=2) as c:
        _fill(c, 10)
        a = _consumer(c, processing_ms=10)
        b = _consumer(c, processing_ms=10)
        c.wait_for(lambda: len(c.snapshot()["groups"].get("billing", {}).get("members", [])) == 2, 10_000)
        c.wait_for(lambda: len(a.processed) + len(b.processed) == 10, 10_000)
        a.stop()
        c.run_for(500)  # far less than session.timeout.ms: a LeaveGroup, not a timeout
        group = c.snapshot()["groups"]["billing"]
        assert [m["member_id"] for m in group["members"]] == [b.consumer.member_id]
        assert a.state == "stopped"
        assert _committed(c, "billing") == {"orders/0": 10}


def test_a_crashed_consumer_stops_heartbeating_and_the_group_rebalances_after_the_session_timeout() -> None:
    with _cluster(partitions=4) as c:
        session = {"session_timeout_ms": 6000, "heartbeat_interval_ms": 1000}
        a = _consumer(c, processing_ms=10, **session)
        b = _consumer(c, processing_ms=10, **session)
        c.wait_for(lambda: len(a.consumer.assignment()) == 2 and len(b.consumer.assignment()) == 2, 15_000)
        generation = c.snapshot()["groups"]["billing"]["generation"]
        b.crash()
        crashed_at = c.now_ms
        c.run_for(4000)  # within the session: the coordinator still counts b
        assert len(c.snapshot()["groups"]["billing"]["members"]) == 2
        c.wait_for(lambda: len(a.consumer.assignment()) == 4, 15_000)
        removed = [e for e in c.events() if e.kind == "member_removed" and e.time_ms > crashed_at]
        assert len(removed) == 1
        assert b.consumer.member_id in removed[0].text or b.name in removed[0].text
        # Removed once 6 s passed since its last heartbeat (which came at most 1 s before the crash).
        assert 5000 <= removed[0].time_ms - crashed_at <= 6100
        group = c.snapshot()["groups"]["billing"]
        assert group["generation"] == generation + 1
        assert [m["member_id"] for m in group["members"]] == [a.consumer.member_id]
        assert b.state == "crashed"


def test_a_simulated_consumer_has_the_labs_session_not_kafkas() -> None:
    # session.timeout.ms: lab 6000, Kafka 45000; heartbeats every 2 s (Kafka: 3 s).
    with _cluster(partitions=2) as c:
        a = _consumer(c, processing_ms=10)
        b = _consumer(c, processing_ms=10)
        assert (a.consumer.session_timeout_ms, a.consumer.heartbeat_interval_ms) == (6000, 2000)
        c.wait_for(lambda: bool(a.consumer.assignment()) and bool(b.consumer.assignment()), 15_000)
        b.crash()
        crashed_at = c.now_ms
        c.wait_for(lambda: len(a.consumer.assignment()) == 2, 15_000)
        removed = [e for e in c.events() if e.kind == "member_removed" and e.time_ms > crashed_at]
        assert len(removed) == 1
        assert 4000 <= removed[0].time_ms - crashed_at <= 6000
        shorter = _consumer(c, processing_ms=10, session_timeout_ms=3000)
        assert (shorter.consumer.session_timeout_ms, shorter.consumer.heartbeat_interval_ms) == (3000, 1000)


def test_a_consumer_whose_processing_exceeds_max_poll_interval_leaves_the_group() -> None:
    with _cluster() as c:
        _fill(c, 20)
        slow = _consumer(c, processing_ms=500, max_poll_interval_ms=3000, heartbeat_interval_ms=500)
        c.wait_for(lambda: bool(slow.consumer.assignment()), 10_000)
        joined = c.now_ms
        c.wait_for(lambda: any(e.kind == "member_left" for e in c.events()), 10_000)
        left = next(e for e in c.events() if e.kind == "member_left")
        assert "max.poll.interval.ms=3000" in left.text
        assert slow.name in left.text
        assert left.group == "billing"
        # Its last poll came after it joined (when its first records arrived); the heartbeat thread
        # notices within retry.backoff.ms (100) of max.poll.interval.ms after it.
        assert 3000 <= left.time_ms - joined <= 3000 + 500 + 100
        assert len(slow.processed) == 0  # still busy with its 20 records (10 s of work)
        c.run_for(100)
        assert c.snapshot()["groups"]["billing"]["members"] == []


def test_a_negative_processing_time_is_refused() -> None:
    with _cluster() as c, pytest.raises(IllegalArgument, match="processing_ms"):
        _consumer(c, processing_ms=-1)


def test_processed_records_name_their_partition() -> None:
    with _cluster() as c:
        _fill(c, 3)
        sim = _consumer(c, processing_ms=1)
        c.wait_for(lambda: len(sim.processed) == 3, 10_000)
        assert sim.processed == [(TopicPartition("orders", 0), i, f"v{i}".encode()) for i in range(3)]


def test_a_transformer_writes_each_record_once_with_its_offsets_even_when_a_broker_dies() -> None:
    from lab.engine.groups import coordinator_of
    from lab.engine.ids import TopicPartition
    from tests.engine.helpers import checked_cluster

    with checked_cluster(3) as c:
        c.create_topic("words", partitions=2, replication_factor=3, config={"min.insync.replicas": "2"})
        c.create_topic("shouts", partitions=2, replication_factor=3, config={"min.insync.replicas": "2"})
        source = c.producer()
        for i in range(120):
            source.send("words", f"word-{i:03d}", key=str(i))
        assert source.flush()
        worker = c.simulated_transformer("shouters", "words", "shouts", processing_ms=50, name="shouter")
        c.run_for(2500)
        assert worker.state == "running"
        assert 0 < worker.transformed < 120
        c.kill_broker(c.leader_of("shouts", 0) or 1)  # mid-stream: transactions fail, abort, run again
        c.wait_for(lambda: worker.transformed == 120, 120_000, "every record transformed")
        c.wait_for(lambda: all(c.leader_of("shouts", i) is not None for i in (0, 1)), 60_000, "leaders")
        reader = c.consumer(isolation_level="read_committed", auto_offset_reset="earliest")
        reader.assign([("shouts", 0), ("shouts", 1)])
        got: list[bytes] = []
        for _ in range(10):
            got += [r.value or b"" for r in reader.poll(300)]
        assert sorted(got) == sorted(f"WORD-{i:03d}".encode() for i in range(120))  # each once
        found = coordinator_of(c.brokers, "shouters")
        assert found is not None
        committed = found[1].offsets
        assert committed[TopicPartition("words", 0)] + committed[TopicPartition("words", 1)] == 120
        assert worker.describe()["transaction"]["committed"] >= 12  # ten records a transaction
