"""Producers and plain consumers: what a client sees, as Kafka's clients see it."""

from __future__ import annotations

from collections import Counter
from itertools import pairwise
from typing import Any

import pytest

from lab.engine.clients import Ledger
from lab.engine.cluster import Cluster
from lab.engine.errors import (
    ConfigException,
    IllegalState,
    KafkaTimeout,
    NoOffsetForPartition,
    NotEnoughReplicas,
    OffsetOutOfRange,
)
from lab.engine.ids import TopicPartition as _tp
from lab.engine.partitioner import partition_for_key
from lab.engine.records import iter_headers, iter_records, read_header
from lab.engine.tasks import Task
from tests.engine.helpers import checked_cluster, leo, values

# Kafka's murmur2 test vectors (tests/engine/test_partitioner.py): where a real client puts these keys.
VECTORS = [
    ("21", 0),
    ("foobar", 0),
    ("a-little-bit-long-string", 2),
    ("a-little-bit-longer-string", 5),
    ("lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", 5),
    ("abc", 3),
]


def test_a_keyed_record_lands_where_a_real_client_would_put_it() -> None:
    with checked_cluster(3) as c:
        c.create_topic("t", partitions=6, replication_factor=2)
        p = c.producer()
        futures = {key: p.send("t", "v", key=key) for key, _ in VECTORS}
        p.flush()
        assert {k: f.result().partition for k, f in futures.items()} == dict(VECTORS)


def _runs(partitions: list[int]) -> list[int]:
    """Lengths of the runs of consecutive records that went to the same partition."""
    runs: list[int] = []
    for i, p in enumerate(partitions):
        if i and p == partitions[i - 1]:
            runs[-1] += 1
        else:
            runs.append(1)
    return runs


def test_unkeyed_records_stick_to_a_partition_until_batch_size_bytes_went_to_it() -> None:
    # KIP-794 (Kafka 3.3+): with linger.ms=0 each small batch leaves at once, yet records without a
    # key stay on one partition until batch.size bytes went to it, not just until its batch is sent.
    with checked_cluster(3) as c:
        c.create_topic("t", partitions=4, replication_factor=1)
        p = c.producer(batch_size=1000)
        futures = []
        for _ in range(40):
            futures += [p.send("t", "x" * 100) for _ in range(3)]  # one batch of 3 records, 382 bytes
            c.run_for(20)
        p.flush()
        assert c.brokers[1].stats.produce_requests + c.brokers[2].stats.produce_requests > 30
        runs = _runs([f.result().partition for f in futures])
        # 107 bytes a record and 61 a batch header: three batches (9 records) pass 1000 bytes.
        assert all(run >= 9 for run in runs[:-1]), runs
        assert len(runs) > 5  # and then it moves on
        assert len({f.result().partition for f in futures}) == 4


def test_a_switch_put_off_while_a_batch_had_room_happens_once_that_batch_is_sent() -> None:
    # linger.ms sends batches of 5 records (596 bytes); the second passes batch.size while it still
    # has room, so the switch waits, and comes with the first record after that batch left.
    with checked_cluster(3) as c:
        c.create_topic("t", partitions=4, replication_factor=1)
        p = c.producer(batch_size=1000, linger_ms=50)
        futures = []
        for _ in range(40):
            futures += [p.send("t", "x" * 100) for _ in range(5)]
            c.run_for(100)
        p.flush()
        runs = _runs([f.result().partition for f in futures])
        assert len(runs) > 5
        assert all(run % 10 == 0 for run in runs[:-1]), runs  # two batches a partition (or 4, 6...)


def _batches(c: Cluster, topic: str, partitions: int) -> dict[int, list[tuple[int, int]]]:
    """Per partition, the (base offset, record count) of each batch in its leader's log."""
    out: dict[int, list[tuple[int, int]]] = {}
    for partition in range(partitions):
        leader = c.leader_of(topic, partition)
        assert leader is not None
        log = c.brokers[leader].partitions[_tp(topic, partition)].log
        data = log.read(0, 1 << 30)
        out[partition] = [(h.base_offset, h.record_count) for _, h in iter_headers(data.records)]
    return out


# 8137 bytes: a header, 64 records of 109 bytes and 10 of 110 (two-byte offset deltas) fill it exactly.
@pytest.mark.parametrize(
    ("batch_size", "linger_ms"), [(1000, 0), (16384, 0), (16384, 7), (300, 3), (8137, 0)]
)
def test_alike_records_go_where_records_sent_one_by_one_the_long_way_go(
    batch_size: int, linger_ms: int
) -> None:
    # send() appends a record alike the one before itself while nothing can differ (Producer._arm);
    # an explicit timestamp always takes the general path. Both must give the same batches.
    def run(explicit_timestamp: bool) -> tuple[list[tuple[int, int, int]], dict[int, list[tuple[int, int]]]]:
        with checked_cluster(3, seed=11) as c:
            c.create_topic("t", partitions=3, replication_factor=3)
            p = c.producer(batch_size=batch_size, linger_ms=linger_ms)
            futures = []
            for i in range(3000):
                value = b"v" * (100 if i % 700 < 500 else 37 + i % 3)  # mostly alike, then not
                key = b"k%d" % i if i % 450 == 449 else None
                stamp = {"timestamp": c.now_ms} if explicit_timestamp else {}
                futures.append(p.send("t", value, key=key, **stamp))
                if i % 97 == 96:
                    c.run_for(i % 3)  # time moves, or not
            assert p.flush()
            placed = [(f.result().partition, f.result().offset, f.result().timestamp) for f in futures]
            return placed, _batches(c, "t", 3)

    assert run(explicit_timestamp=False) == run(explicit_timestamp=True)


def test_a_closed_producer_refuses_records_even_alike_ones() -> None:
    with checked_cluster(1) as c:
        c.create_topic("t")
        p = c.producer(linger_ms=100)
        sent = [p.send("t", b"same length") for _ in range(5)]  # the later ones appended in bulk
        p.close()
        with pytest.raises(IllegalState, match="is closed"):
            p.send("t", b"same length")
        assert p.sent == len(sent)


def test_records_appended_in_bulk_are_counted_at_once_and_stamped_with_their_send_time() -> None:
    # send() appends a record alike the one before itself and counts it and stamps its batch later,
    # in bulk (Producer._settle_fast): the producer's counts and the log's timestamps must not show it.
    with checked_cluster(1) as c:
        c.create_topic("t")
        p = c.producer(linger_ms=1000)
        p.send("t", b"first")  # metadata first
        assert p.flush()
        c.run_for(7)
        stamped = c.now_ms
        futures = [p.send("t", b"alike") for _ in range(50)]
        assert (p.sent, p.unanswered) == (51, 50)
        c.run_for(3)  # the clock moves while linger.ms holds the batch
        futures += [p.send("t", b"alike") for _ in range(5)]
        assert (p.sent, p.unanswered) == (56, 55)
        assert p.flush()
        assert p.unanswered == 0
        assert [f.result().timestamp for f in futures] == [stamped] * 50 + [stamped + 3] * 5
        log = c.brokers[1].partitions[_tp("t", 0)].log
        in_log = [r.timestamp for r in iter_records(log.read(1, 1 << 20).records)]
        assert in_log == [stamped] * 50 + [stamped + 3] * 5


def test_batch_size_zero_sends_each_record_in_a_batch_of_its_own() -> None:
    with checked_cluster(1) as c:
        c.create_topic("t")
        c.create_topic("u", partitions=2)
        p = c.producer(batch_size=0)
        for i in range(6):
            p.send("t", f"r{i}")
        p.flush()
        assert c.brokers[1].stats.produce_requests == 6  # a request holds one batch per partition
        spread = [p.send("u", f"r{i}") for i in range(6)]
        p.flush()
        assert len({f.result().partition for f in spread}) == 2  # a switch after every record


def test_adaptive_partitioning_sends_fewer_records_to_a_slow_leader() -> None:
    def spread(**config: object) -> Counter[int]:
        with checked_cluster(3) as c:
            c.create_topic("t", partitions=3, assignment={0: [1], 1: [2], 2: [3]})
            p = c.producer(batch_size=500, **config)
            c.slow_broker(3, 100)  # partition 2's leader answers 200 ms late: its queue grows
            futures = []
            for _ in range(1000):
                futures += [p.send("t", "x" * 100) for _ in range(2)]
                c.run_for(1)
            p.flush()
            return Counter(f.result().partition for f in futures)

    adaptive = spread()
    uniform = spread(partitioner_adaptive_partitioning_enable=False)
    assert uniform[2] > 500  # about a third
    assert adaptive[2] < 250  # the slow leader's partition gets far fewer
    assert sum(adaptive.values()) == sum(uniform.values()) == 2000


def test_a_leader_that_stopped_draining_gets_no_new_records_after_the_availability_timeout() -> None:
    def late_spread(**config: object) -> Counter[int]:
        with checked_cluster(3) as c:
            c.create_topic("t", partitions=3, assignment={0: [1], 1: [2], 2: [3]})
            p = c.producer(batch_size=500, **config)
            p.send("t", "warm-up", partition=2)
            p.flush()
            c.pause_broker(3)  # partition 2's leader holds every request: its in-flight limit fills
            for _ in range(500):
                p.send("t", "x" * 100)
                c.run_for(1)
            late = []
            for _ in range(1000):
                late.append(p.send("t", "x" * 100))
                c.run_for(1)
            c.resume_broker(3)
            p.flush()
            return Counter(f.result().partition for f in late)

    assert late_spread(partitioner_availability_timeout_ms=200)[2] == 0
    assert late_spread()[2] > 0  # without the timeout it only weighs partition 2 down


def test_partitioner_ignore_keys_spreads_keyed_records_like_unkeyed_ones() -> None:
    with checked_cluster(3) as c:
        c.create_topic("t", partitions=4, replication_factor=1)
        hashed = c.producer(batch_size=500)
        spread = c.producer(batch_size=500, partitioner_ignore_keys=True)
        by_key = [hashed.send("t", "x" * 100, key="same") for _ in range(100)]
        ignored = [spread.send("t", "x" * 100, key="same") for _ in range(100)]
        hashed.flush()
        spread.flush()
        assert {f.result().partition for f in by_key} == {partition_for_key(b"same", 4)}
        assert len({f.result().partition for f in ignored}) > 1


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


def _reader_of_the_leader(c: Cluster) -> tuple[Any, Any, int]:
    """A producer and a consumer of t-0 that has read what is there, its next fetch waiting on the leader."""
    c.create_topic("t", replication_factor=3, config={"min.insync.replicas": "2"})
    p = c.producer()
    p.send("t", "before")
    p.flush()
    reader = c.consumer(auto_offset_reset="earliest")
    reader.assign([("t", 0)])
    assert [r.value for r in reader.poll(5000)] == [b"before"]
    c.run_for(100)  # its next fetch now waits on the leader for fetch.max.wait.ms
    return p, reader, c.leader_of("t", 0)


def _read_within(c: Cluster, reader: Any, timeout_ms: int) -> tuple[list[bytes], int]:
    start = c.now_ms
    got: list[bytes] = []
    while not got and c.now_ms - start < timeout_ms:
        got += [r.value for r in reader.poll(100)]
    return got, c.now_ms - start


def test_a_consumer_reads_from_the_new_leader_seconds_after_its_leader_is_killed() -> None:
    # A killed broker's connections close: the fetch it held fails at once (Kafka's consumer marks
    # the node disconnected and asks for metadata), so the consumer waits only for the controller
    # (zookeeper.session.timeout.ms, the lab's 6 s) to name a new leader, not request.timeout.ms (30 s).
    with checked_cluster(3) as c:
        p, reader, leader = _reader_of_the_leader(c)
        c.kill_broker(leader)
        p.send("t", "after")
        got, waited = _read_within(c, reader, 60_000)
        assert got == [b"after"]
        assert c.leader_of("t", 0) != leader
        assert waited < 8000


def test_a_consumer_whose_leader_is_paused_waits_out_its_request_timeout() -> None:
    # A paused broker (a long GC) keeps its connections up and says nothing: the fetch it holds
    # fails only after request.timeout.ms + fetch.max.wait.ms, as in Kafka.
    with checked_cluster(3) as c:
        p, reader, leader = _reader_of_the_leader(c)
        c.pause_broker(leader)
        p.send("t", "after")  # held too: retried on the new leader after its own request.timeout.ms
        got, waited = _read_within(c, reader, 120_000)
        assert got == [b"after"]
        assert waited >= 30_000 + 500


@pytest.mark.parametrize("seed", range(1, 13))
def test_a_consumer_whose_fetch_timed_out_on_a_paused_broker_asks_a_live_one_where_the_leader_is(
    seed: int,
) -> None:
    # Kafka's leastLoadedNode: a request that timed out closes its connection, and a metadata request goes
    # to a broker with a connection that works (and nothing of ours waiting on it) before that one. Were
    # it asked at random, one consumer in three would wait a second request.timeout.ms on the paused one.
    with checked_cluster(3, seed=seed) as c:
        p, reader, leader = _reader_of_the_leader(c)
        c.pause_broker(leader)
        p.send("t", "after")
        got, waited = _read_within(c, reader, 120_000)
        assert got == [b"after"]
        assert (
            waited < 30_000 + 500 + 5_000
        )  # one request.timeout.ms (+ fetch.max.wait.ms), then the new leader


def test_a_broker_that_missed_a_leader_change_cannot_send_a_consumer_back_to_the_old_leader() -> None:
    # KIP-320. A paused leader, resumed, answers metadata from what it knew before the pause until the
    # controller tells it otherwise. Taken as the truth, that answer sent the consumer back to it; its log
    # is shorter than the new leader's, so the fetch was out of range and auto.offset.reset=earliest read
    # everything again (a read_committed consumer saw a committed transaction twice).
    with checked_cluster(3) as c:
        p, reader, old = _reader_of_the_leader(c)
        stale = c.brokers[old].metadata.describe(["t"])  # what it will still say when it resumes
        c.pause_broker(old)
        p.send("t", "after")
        assert _read_within(c, reader, 120_000)[0] == [b"after"]
        new = c.leader_of("t", 0)
        assert new != old
        reader.metadata._on_response(old, stale)
        assert reader.metadata.leader(_tp("t", 0)) == new
        c.resume_broker(old)
        p.send("t", "more")
        assert _read_within(c, reader, 60_000)[0] == [b"more"]
        assert not [e for e in c.events() if e.kind == "offset_reset"]


def test_a_re_created_topic_is_followed_although_its_leader_epochs_start_again() -> None:
    # Its new topic id (KIP-516) tells the client the older, higher epochs belong to the topic deleted.
    with checked_cluster(3) as c:
        p, reader, old = _reader_of_the_leader(c)
        c.kill_broker(old)
        p.send("t", "after")
        assert _read_within(c, reader, 60_000)[0] == [b"after"]
        c.restart_broker(old)
        c.wait_for(lambda: len(c.partition_state("t", 0)["isr"]) == 3, 60_000, "the ISR whole again")
        assert c.leader_of("t", 0) != old
        assert p.metadata.leader_epoch(_tp("t", 0)) >= 1
        c.delete_topic("t")
        c.create_topic("t", replication_factor=3, assignment={0: [old, *sorted({1, 2, 3} - {old})]})
        again = p.send("t", "again")
        c.wait_for(again.done, 30_000, "the record sent to the re-created topic")
        assert again.result().offset == 0
        assert (p.metadata.leader(_tp("t", 0)), p.metadata.leader_epoch(_tp("t", 0))) == (old, 0)


def test_an_acks_all_batch_the_killed_leader_held_is_retried_on_the_new_leader_at_once() -> None:
    with checked_cluster(3) as c:
        c.create_topic("t", replication_factor=3, config={"min.insync.replicas": "2"})
        p = c.producer()
        p.send("t", "before")
        p.flush()
        leader = c.leader_of("t", 0)
        followers = [b for b in (1, 2, 3) if b != leader]
        for b in followers:
            c.slow_broker(b, 3000)  # the leader holds the batch, waiting for its followers
        f = p.send("t", "during")
        c.run_for(200)
        assert not f.done()
        killed_at = c.now_ms
        c.kill_broker(leader)
        for b in followers:
            c.heal(b)
        c.wait_for(f.done, 60_000, "the batch")
        assert f.result().offset == 1
        assert c.now_ms - killed_at < 8000  # the new leader's election, not request.timeout.ms
        retries = [e for e in c.events() if e.kind == "produce_retry" and e.time_ms >= killed_at]
        assert "NETWORK_EXCEPTION" in retries[0].data["error"]


def _retry_times(c: Cluster, **producer_config: Any) -> list[int]:
    """When a batch that can never be written (min.insync.replicas above the live replicas) was retried."""
    c.create_topic("t", replication_factor=2, config={"min.insync.replicas": "2"})
    c.kill_broker(c.partition_state("t", 0)["isr"][1])
    c.run_for(10_000)  # the controller took the follower out of the ISR
    p = c.producer(**producer_config)
    start = c.now_ms
    p.send("t", "x")
    c.run_for(12_000)
    return [e.time_ms - start for e in c.events() if e.kind == "produce_retry"]


def test_a_batch_retried_again_and_again_waits_twice_as_long_each_time_up_to_a_second() -> None:
    # KIP-580 (Kafka 3.7): retry.backoff.ms=100 doubles per attempt, with 20% jitter, up to
    # retry.backoff.max.ms=1000. Flat, 12 seconds of NOT_ENOUGH_REPLICAS were over a hundred retries.
    with checked_cluster(3) as c:
        times = _retry_times(c)
    waits = [b - a for a, b in pairwise(times)]
    assert 12 <= len(times) <= 18
    for attempt, wait in enumerate(waits[:4]):  # 100, 200, 400, 800 ms give or take 20%, plus the round trip
        assert 0.8 * 100 * 2**attempt <= wait <= 1.2 * 100 * 2**attempt + 10
    assert all(1000 <= wait <= 1010 for wait in waits[4:])
    with checked_cluster(3) as c:
        _retry_times(c)
        text = next(e.text for e in c.events() if e.kind == "produce_retry")
    assert "retry.backoff.ms=100 doubled per attempt, at most retry.backoff.max.ms=1000" in text


def test_a_retry_backoff_max_at_or_below_retry_backoff_is_the_wait_every_time() -> None:
    with checked_cluster(3) as c:
        times = _retry_times(c, retry_backoff_ms=300, retry_backoff_max_ms=200)
    waits = [b - a for a, b in pairwise(times)]
    assert len(waits) > 40
    assert all(200 <= wait <= 250 for wait in waits)


def test_delivery_timeout_ends_the_retries() -> None:
    with checked_cluster(3) as c:
        c.create_topic("t", replication_factor=3, config={"min.insync.replicas": "3"})
        c.kill_broker(3)
        c.run_for(10_000)
        p = c.producer(delivery_timeout_ms=5000, request_timeout_ms=1000)
        sent_at = c.now_ms
        f = p.send("t", "x")
        c.run_for(6000)
        # Retried until delivery.timeout.ms: the batch fails with the last answer if it is in flight
        # then, with the timeout if it waits in the accumulator (its backoff).
        with pytest.raises((NotEnoughReplicas, KafkaTimeout)):
            f.result()
        retries = [e.time_ms - sent_at for e in c.events() if e.kind == "produce_retry"]
        assert len(retries) >= 6  # 100, 200, 400, 800 ms, then a second at most (KIP-580)
        assert 4000 <= retries[-1] <= 5000  # still retrying near the end


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


def test_a_lost_acknowledgement_makes_a_retry_write_the_record_twice_without_idempotence() -> None:
    with checked_cluster(3) as c:
        c.create_topic("t", replication_factor=3)
        p = c.producer(request_timeout_ms=2000, client_id="writer", enable_idempotence=False)
        c.lose_next_ack("writer")
        f = p.send("t", "only-once?")
        p.flush(timeout_ms=10_000)
        assert f.result().offset == 1  # the retry's offset
        assert values(c, 1, "t") == [b"only-once?", b"only-once?"]  # the duplicate a student can see


def test_an_idempotent_producers_retry_after_a_lost_acknowledgement_is_written_once() -> None:
    with checked_cluster(3) as c:
        c.create_topic("t", replication_factor=3)
        p = c.producer(request_timeout_ms=2000, client_id="writer")  # Kafka 3.x's default: idempotent
        assert p.idempotent
        c.lose_next_ack("writer")
        f = p.send("t", "only-once")
        p.flush(timeout_ms=10_000)
        assert p.retried == 1
        assert f.result().offset == 0  # the leader answered the retry with the first attempt's offset
        assert values(c, 1, "t") == [b"only-once"]
        state = c.brokers[1].partitions[_tp("t", 0)].log.producer_state.producers
        assert list(state) == [p.producer_id]
        assert state[p.producer_id].last_seq == 0


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
        with pytest.raises(
            ConfigException, match=r"Invalid value '2' for configuration acks: must be one of all"
        ):
            c.producer(acks="2")
        with pytest.raises(
            ConfigException,
            match=r"Unknown producer config name: bogus \(the lab's producers honour acks, batch\.size",
        ):
            c.producer(bogus=1)
        with pytest.raises(
            ConfigException, match=r"Invalid value 'soon' for configuration linger\.ms: not a number"
        ):
            c.producer(linger_ms="soon")
        with pytest.raises(
            ConfigException, match=r"Invalid value -1 for configuration retries: must be at least 0"
        ):
            c.producer(retries=-1)
        assert c.clients == {}  # nothing was made


def test_unknown_topic_fails_after_max_block_ms() -> None:
    with checked_cluster(1) as c:
        p = c.producer(max_block_ms=2000)
        f = p.send("nope", "x")
        c.run_for(3000)
        with pytest.raises(KafkaTimeout, match="does not exist"):
            f.result()


def test_records_waiting_for_metadata_share_one_wait_per_moment_they_were_sent() -> None:
    # Records sent before the producer knows the topic wait, each for at most max.block.ms from its
    # own send: those sent at the same moment share one timer.
    with checked_cluster(1) as c:
        p = c.producer(max_block_ms=2000)
        first = [p.send("nope", f"x{i}") for i in range(300)]
        c.run_for(500)
        later = [p.send("nope", f"y{i}") for i in range(300)]
        assert len([t for t in c.scheduler.pending() if t.label.endswith("max.block.ms")]) == 2
        c.run_for(1500)  # 2000 ms after the first ones
        assert all(isinstance(f.exception(), KafkaTimeout) for f in first)
        assert not any(f.done() for f in later)
        c.run_for(500)
        assert all(isinstance(f.exception(), KafkaTimeout) for f in later)
        assert p.failed == 600


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


# Kafka's checks when a producer or consumer is made (ProducerConfig, KafkaProducer, ConsumerConfig).


def test_a_delivery_timeout_shorter_than_linger_plus_request_timeout_is_refused() -> None:
    with checked_cluster(1) as c:
        with pytest.raises(
            ConfigException,
            match=r"^INVALID_CONFIG: delivery\.timeout\.ms should be equal to or larger than "
            r"linger\.ms \+ request\.timeout\.ms$",
        ):
            c.producer(delivery_timeout_ms=5000, linger_ms=100, request_timeout_ms=5000)
        assert c.clients == {}
        # Equal is enough; and a delivery timeout left at its default grows to the sum, as in Kafka.
        assert (
            c.producer(delivery_timeout_ms=5100, linger_ms=100, request_timeout_ms=5000).delivery_timeout_ms
            == 5100
        )
        assert c.producer(linger_ms=1000, request_timeout_ms=200_000).delivery_timeout_ms == 201_000


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"retries": 0}, "Must set retries to non-zero when using the idempotent producer."),
        (
            {"acks": "1"},
            "Must set acks to all in order to use the idempotent producer. Otherwise we cannot guarantee idempotence.",
        ),
        (
            {"max_in_flight_requests_per_connection": 6},
            "Must set max.in.flight.requests.per.connection to at most 5 to use the idempotent producer.",
        ),
    ],
)
def test_enable_idempotence_is_refused_with_kafkas_reason_first(
    config: dict[str, object], message: str
) -> None:
    with checked_cluster(1) as c:
        with pytest.raises(ConfigException) as info:
            c.producer(enable_idempotence=True, **config)
        assert info.value.message.startswith(message)
        assert c.clients == {}


def test_idempotence_left_at_its_default_gives_way_to_a_config_that_contradicts_it() -> None:
    with checked_cluster(1) as c:
        assert c.producer().idempotent  # Kafka 3.x: on by default
        assert c.producer(enable_idempotence=True, retries=5).idempotent
        assert not c.producer(acks="1").idempotent  # Kafka 3.2+: turned off, not refused
        assert not c.producer(acks="all", enable_idempotence=False).idempotent


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_a_producer_compresses_with_any_of_kafkas_codecs_and_consumers_read_it(codec: str) -> None:
    with checked_cluster(1) as c:
        c.create_topic("t")
        producer = c.producer(compression_type=codec, linger_ms=10)
        futures = [producer.send("t", value=b"squeeze me %d " % i * 10) for i in range(50)]
        c.run_until_true(lambda: all(f.done() for f in futures), 10_000)
        assert [f.result().offset for f in futures] == list(range(50))
        consumer = c.consumer()
        consumer.assign([("t", 0)])
        consumer.seek("t", 0, 0)
        got = consumer.poll(timeout_ms=1_000)
        assert [r.value for r in got] == [b"squeeze me %d " % i * 10 for i in range(50)]
        batch = c.brokers[1].partitions[_tp("t", 0)].log.read(0, 1 << 20).records
        assert read_header(batch).compression.name == codec.upper()


def test_an_unknown_codec_is_refused_by_name() -> None:
    with (
        checked_cluster(1) as c,
        pytest.raises(ConfigException, match=r"Invalid value 'brotli' for configuration compression\.type"),
    ):
        c.producer(compression_type="brotli")


def test_bad_consumer_config_is_named() -> None:
    with checked_cluster(1) as c:
        with pytest.raises(ConfigException, match=r"Unknown consumer config name: fetch\.min\.byte "):
            c.consumer(fetch_min_byte=1)
        with pytest.raises(
            ConfigException, match=r"Invalid value 'often' for configuration max\.poll\.records"
        ):
            c.consumer(max_poll_records="often")
        with pytest.raises(
            ConfigException, match=r"Invalid value 'oldest' for configuration auto\.offset\.reset"
        ):
            c.consumer(auto_offset_reset="oldest")
        with pytest.raises(
            ConfigException,
            match=r"enable\.auto\.commit cannot be set to true when default group id \(null\) is used\.",
        ):
            c.consumer(enable_auto_commit=True)
        with pytest.raises(ConfigException, match=r"'bogus' is not one of range, roundrobin"):
            c.consumer("g", partition_assignment_strategy="bogus")
        assert c.clients == {}
        assert c.consumer(enable_auto_commit=False).config["enable.auto.commit"] == "false"


# The futures send() returns.


def test_each_record_gets_its_own_metadata_and_its_callbacks_in_order() -> None:
    with checked_cluster(1) as c:
        c.create_topic("t")
        p = c.producer(linger_ms=10)
        heard: list[tuple[str, int]] = []
        early = p.send("t", "waits for metadata")  # no metadata yet: not in a batch
        early.add_done_callback(lambda f: heard.append(("early", f.result().offset)))
        c.run_for(5)
        futures = [p.send("t", f"r{i}") for i in range(3)]
        for i, f in enumerate(futures):
            f.add_done_callback(lambda f, i=i: heard.append((f"r{i}", f.result().offset)))
        assert not any(f.done() for f in futures)
        p.flush()
        assert heard == [("early", 0), ("r0", 1), ("r1", 2), ("r2", 3)]
        assert [f.result().offset for f in futures] == [1, 2, 3]
        assert futures[0].result() is futures[0].result()  # made once
        late: list[int] = []
        futures[2].add_done_callback(lambda f: late.append(f.result().offset))  # done: runs at once
        assert late == [3]
        assert c.ledger.of(_tp("t", 0))[2].value == b"r1"


def test_a_task_can_await_a_send() -> None:
    with checked_cluster(1) as c:
        c.create_topic("t")
        p = c.producer()

        async def produce() -> int:
            metadata = await p.send("t", "awaited")
            return metadata.offset

        task = Task.start(produce())
        c.run_for(100)
        assert task.outcome.result() == 0


def test_a_failed_batch_fails_every_record_in_it() -> None:
    with checked_cluster(3) as c:
        c.create_topic("t", replication_factor=3, config={"min.insync.replicas": "3"})
        c.kill_broker(3)
        c.run_for(10_000)
        p = c.producer(retries=0)
        futures = [p.send("t", f"r{i}") for i in range(5)]
        heard: list[str] = []
        futures[4].add_done_callback(lambda f: heard.append(type(f.exception()).__name__))
        p.flush()
        assert all(isinstance(f.exception(), NotEnoughReplicas) for f in futures)
        assert heard == ["NotEnoughReplicas"]
        assert (p.acked, p.failed) == (0, 5)
        assert c.ledger.count == 0


# The acknowledgement ledger.


def test_the_ledger_holds_every_acknowledged_record_of_a_batch_at_its_offset() -> None:
    with checked_cluster(1) as c:
        c.create_topic("t")
        p = c.producer(client_id="writer")
        for i in range(5):
            p.send("t", f"v{i}", key=f"k{i}")
        p.flush()
        acked = c.ledger.of(_tp("t", 0))
        assert [(o, r.key, r.value, r.acks, r.producer) for o, r in acked.items()] == [
            (i, f"k{i}".encode(), f"v{i}".encode(), -1, "writer") for i in range(5)
        ]
        assert c.ledger.count == 5
        assert c.ledger.highest_acks_all[_tp("t", 0)] == 4


def test_the_ledger_keeps_the_newest_acknowledgements_of_a_partition_within_its_bound() -> None:
    ledger = Ledger()
    tp = _tp("t", 0)
    limit = Ledger.LIMIT_PER_PARTITION
    for base in range(0, 2 * limit, 500):
        ledger.record_batch("p", tp, base, None, [b"v"] * 500, acks=1, time_ms=0)
        assert len(ledger.of(tp)) <= limit * 5 // 4
    kept = ledger.of(tp)
    assert len(kept) >= limit
    assert max(kept) == 2 * limit - 1
    assert list(kept) == sorted(kept)  # the newest, in offset order
    assert ledger.count == 2 * limit


def test_poll_with_no_subscription_and_no_assignment_is_illegal_state() -> None:
    with checked_cluster(3) as c:
        c.create_topic("orders", replication_factor=3)
        plain = c.consumer()
        member = c.consumer(group_id="g")
        for consumer in (plain, member):
            with pytest.raises(
                IllegalState, match="Consumer is not subscribed to any topics or assigned any partitions"
            ):
                consumer.poll(timeout_ms=100)
        plain.assign([("orders", 0)])
        assert plain.poll(timeout_ms=100) == []
        member.subscribe(["orders"])
        member.poll(timeout_ms=100)  # subscribed, not yet assigned: that is fine
        member.unsubscribe()
        with pytest.raises(IllegalState, match="not subscribed"):
            member.poll(timeout_ms=100)
