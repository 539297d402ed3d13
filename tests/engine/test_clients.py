"""Producers and plain consumers: what a client sees, as Kafka's clients see it."""

from __future__ import annotations

import pytest

from lab.engine.errors import (
    IllegalArgument,
    KafkaTimeout,
    NoOffsetForPartition,
    NotEnoughReplicas,
    OffsetOutOfRange,
)
from lab.engine.partitioner import murmur2, partition_for_key
from tests.engine.helpers import checked_cluster, leo, values

# Kafka's own murmur2 test vectors (KAFKA-FACTS.md), and where the keys land with 6 partitions.
VECTORS = [
    ("21", -973932308, 0),
    ("foobar", -790332482, 0),
    ("a-little-bit-long-string", -985981536, 2),
    ("a-little-bit-longer-string", -1486304829, 5),
    ("lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971, 5),
    ("abc", 479470107, 3),
]


@pytest.mark.parametrize(("key", "hashed", "partition"), VECTORS)
def test_murmur2_matches_kafka(key: str, hashed: int, partition: int) -> None:
    assert murmur2(key.encode()) == hashed
    assert partition_for_key(key.encode(), 6) == partition


def test_a_keyed_record_lands_where_a_real_client_would_put_it() -> None:
    with checked_cluster(3) as c:
        c.create_topic("t", partitions=6, replication_factor=2)
        p = c.producer()
        futures = {key: p.send("t", "v", key=key) for key, _, _ in VECTORS}
        p.flush()
        assert {k: f.result().partition for k, f in futures.items()} == {k: part for k, _, part in VECTORS}


def test_unkeyed_records_stick_to_one_partition_per_batch() -> None:
    with checked_cluster(3) as c:
        c.create_topic("t", partitions=4, replication_factor=1)
        p = c.producer(linger_ms=50, batch_size=2000)
        first = [p.send("t", "x" * 100) for _ in range(10)]
        p.flush()
        assert len({f.result().partition for f in first}) == 1  # one batch, one partition
        many = [p.send("t", "x" * 100) for _ in range(200)]
        p.flush()
        assert len({f.result().partition for f in many}) > 1  # full batches move on


def test_linger_and_batch_size_decide_how_records_are_grouped() -> None:
    with checked_cluster(1) as c:
        c.create_topic("t")
        lingering = c.producer(linger_ms=100)
        for i in range(20):
            lingering.send("t", f"r{i}")
        c.run_for(50)
        assert leo(c, 1, "t") == 0  # still waiting for linger.ms
        c.run_for(100)
        assert leo(c, 1, "t") == 20
        requests = c.brokers[1].stats.produce_requests
        assert requests == 1
        small = c.producer(batch_size=200)
        for _ in range(20):
            small.send("t", "y" * 50)
        small.flush()
        assert c.brokers[1].stats.produce_requests - requests > 3  # batch.size splits them


def test_after_a_failover_the_producer_finds_the_new_leader_and_retries() -> None:
    with checked_cluster(3) as c:
        c.create_topic("t", replication_factor=3, config={"min.insync.replicas": "2"})
        p = c.producer()
        p.send("t", "before")
        p.flush()
        c.kill_broker(1)
        during = [p.send("t", f"during-{i}") for i in range(5)]
        p.flush(timeout_ms=60_000)
        assert [f.result().offset for f in during] == [1, 2, 3, 4, 5]
        retries = [e for e in c.events() if e.kind == "produce_retry"]
        # Which producer retried, and after which of Kafka's errors (the API tells a script so).
        assert retries
        assert all(e.data["client"] == p.client_id and e.data["error"] for e in retries)
        assert values(c, c.leader_of("t", 0), "t") == [b"before"] + [f"during-{i}".encode() for i in range(5)]


def test_delivery_timeout_ends_the_retries() -> None:
    with checked_cluster(3) as c:
        c.create_topic("t", replication_factor=3, config={"min.insync.replicas": "3"})
        c.kill_broker(3)
        c.run_for(10_000)
        p = c.producer(delivery_timeout_ms=5000, request_timeout_ms=1000)
        f = p.send("t", "x")
        c.run_for(6000)
        with pytest.raises(NotEnoughReplicas):  # retried until delivery.timeout.ms, then the last error
            f.result()
        assert p.retried > 10


def test_a_batch_with_no_leader_to_go_to_expires_in_the_accumulator() -> None:
    with checked_cluster(2) as c:
        c.create_topic("t", assignment={0: [2]})
        p = c.producer(delivery_timeout_ms=5000, request_timeout_ms=1000)
        p.send("t", "warm-up")
        p.flush()
        c.kill_broker(2)
        c.run_for(8000)  # the controller marks t-0 offline
        f = p.send("t", "x")
        c.run_for(6000)
        with pytest.raises(KafkaTimeout, match=r"delivery\.timeout\.ms"):
            f.result()


def test_a_lost_acknowledgement_makes_a_retry_write_the_record_twice() -> None:
    with checked_cluster(3) as c:
        c.create_topic("t", replication_factor=3)
        p = c.producer(request_timeout_ms=2000, client_id="writer")
        c.lose_next_ack("writer")
        f = p.send("t", "only-once?")
        p.flush(timeout_ms=10_000)
        assert f.result().offset == 1  # the retry's offset
        assert values(c, 1, "t") == [b"only-once?", b"only-once?"]  # the duplicate a student can see


def test_acks_zero_gets_no_offset_back() -> None:
    with checked_cluster(1) as c:
        c.create_topic("t")
        p = c.producer(acks="0")
        f = p.send("t", "fire-and-forget")
        c.run_for(100)  # metadata first; then the record goes out, and nobody answers
        assert f.result().offset == -1
        assert leo(c, 1, "t") == 1


def test_bad_producer_config_is_named() -> None:
    with checked_cluster(1) as c:
        with pytest.raises(IllegalArgument, match="acks"):
            c.producer(acks="2")
        with pytest.raises(IllegalArgument, match="unknown producer config"):
            c.producer(bogus=1)


def test_unknown_topic_fails_after_max_block_ms() -> None:
    with checked_cluster(1) as c:
        p = c.producer(max_block_ms=2000)
        f = p.send("nope", "x")
        c.run_for(3000)
        with pytest.raises(KafkaTimeout, match="does not exist"):
            f.result()


def test_consumer_positions_seek_to_end_and_offsets_for_times() -> None:
    with checked_cluster(1) as c:
        c.create_topic("t")
        p = c.producer()
        for i in range(5):
            p.send("t", f"v{i}", timestamp=1000 + i * 100)
        p.flush()
        r = c.consumer()
        r.assign([("t", 0)])
        assert r.offsets_for_times({("t", 0): 1250}) == {("t", 0) and r.assignment()[0]: 3}
        assert r.offsets_for_times({("t", 0): 99_999})[r.assignment()[0]] is None
        r.seek_to_end("t", 0)
        c.run_for(50)
        assert r.position("t", 0) == 5
        assert r.poll(timeout_ms=200) == []


def test_auto_offset_reset_latest_earliest_and_none() -> None:
    with checked_cluster(1) as c:
        c.create_topic("t")
        p = c.producer()
        for i in range(3):
            p.send("t", f"old{i}")
        p.flush()
        latest = c.consumer(auto_offset_reset="latest")
        earliest = c.consumer(auto_offset_reset="earliest")
        strict = c.consumer(auto_offset_reset="none")
        for consumer in (latest, earliest, strict):
            consumer.assign([("t", 0)])
        assert [r.value for r in earliest.poll(timeout_ms=500)] == [b"old0", b"old1", b"old2"]
        assert latest.poll(timeout_ms=300) == []
        p.send("t", "new")
        p.flush()
        assert [r.value for r in latest.poll(timeout_ms=1000)] == [b"new"]
        with pytest.raises(NoOffsetForPartition):
            strict.poll(timeout_ms=500)


def test_retention_past_the_position_gives_offset_out_of_range() -> None:
    config = {"segment.bytes": "200", "retention.bytes": "300"}
    with checked_cluster(1, config={"log.retention.check.interval.ms": "1000"}) as c:
        c.create_topic("t", config=config)
        p = c.producer()
        for i in range(30):
            p.send("t", f"record-{i:03d}")
            p.flush()
        c.run_for(2000)
        start = c.partition_state("t", 0)["logs"]["1"]["log_start_offset"]
        assert start > 0
        assert any(e.kind == "retention" for e in c.events())
        strict = c.consumer(auto_offset_reset="none")
        strict.assign([("t", 0)])
        strict.seek("t", 0, 0)  # below the log start offset now
        with pytest.raises(OffsetOutOfRange):
            strict.poll(timeout_ms=1000)


def test_max_in_flight_one_keeps_a_single_request_outstanding_per_broker() -> None:
    with checked_cluster(1, config={"lab.network.latency.ms": "20"}) as c:
        c.create_topic("t", partitions=3)
        p = c.producer(max_in_flight_requests_per_connection=1, batch_size=100)
        for i in range(30):
            p.send("t", "y" * 60, partition=i % 3)
        seen = []
        for _ in range(40):
            c.run_for(5)
            seen.append(p.endpoint.outstanding_to(1))
        assert max(seen) == 1
        p.flush()
        assert p.acked == 30
