"""The idempotent producer end to end: under random faults (kill, pause, isolation, lost answers)
every acknowledged record is in its partition exactly once, in the order it was sent; and what a
producer cannot fix itself (a stale epoch, a gap in its sequence) gets Kafka's error by name."""

from __future__ import annotations

from collections import defaultdict

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from lab.engine.broker import BrokerState
from lab.engine.cluster import Cluster
from lab.engine.errors import InvalidProducerEpoch, OutOfOrderSequenceNumber
from lab.engine.ids import TopicPartition
from lab.engine.invariants import InvariantChecker
from lab.engine.network import Endpoint
from lab.engine.protocol import ProduceRequest, ProduceResponse
from lab.engine.records import build_batch, iter_records
from tests.engine.helpers import checked_cluster, values

BROKERS = (1, 2, 3)
ACTIONS = ("kill", "restart", "pause", "resume", "isolate_zk", "isolate_brokers", "heal", "lose_acks")

faults = st.lists(
    st.tuples(
        st.integers(500, 20_000), st.sampled_from(ACTIONS), st.sampled_from(BROKERS), st.integers(1, 3)
    ),
    min_size=1,
    max_size=6,
).map(sorted)


def _apply(c: Cluster, action: str, broker_id: int, count: int) -> None:
    b = c.brokers[broker_id]
    if action == "kill" and b.alive:
        c.kill_broker(broker_id)
    elif action == "restart" and not b.alive:
        c.restart_broker(broker_id)
    elif action == "pause" and b.alive and b.state is not BrokerState.PAUSED:
        c.pause_broker(broker_id)
    elif action == "resume" and b.state is BrokerState.PAUSED:
        c.resume_broker(broker_id)
    elif action == "isolate_zk" and "zookeeper" not in c.isolation.get(broker_id, set()):
        c.isolate_broker(broker_id, from_="zookeeper")
    elif action == "isolate_brokers" and "brokers" not in c.isolation.get(broker_id, set()):
        c.isolate_broker(broker_id, from_="brokers")
    elif action == "heal" and c.isolation.get(broker_id):
        c.heal(broker_id)
    elif action == "lose_acks":
        c.lose_next_ack("idem", count)  # written, but the producer never hears so: it retries


def _recover(c: Cluster) -> None:
    for broker_id in BROKERS:
        b = c.brokers[broker_id]
        if b.state is BrokerState.PAUSED:
            c.resume_broker(broker_id)
        if c.isolation.get(broker_id):
            c.heal(broker_id)
    for broker_id in BROKERS:
        if not c.brokers[broker_id].alive:
            c.restart_broker(broker_id)


def _log_values(c: Cluster) -> dict[int, list[bytes]]:
    """Every record of each partition, read from its leader's log once the cluster has settled."""
    out = {}
    for partition in (0, 1):
        leader = c.leader_of("t", partition)
        assert leader is not None
        log = c.brokers[leader].partitions[TopicPartition("t", partition)].log
        data = log.read(log.log_start_offset, 1 << 30).records
        out[partition] = [r.value or b"" for r in iter_records(data)]
    return out


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plan=faults, seed=st.integers(0, 1000))
# Found by Hypothesis (unclean election off, as Kafka's default): broker 1, t-0's leader, cut from
# ZooKeeper and broker 3 killed, so five batches wait on broker 1 while broker 2 takes over and gets a
# sixth; the retry of the oldest was then refused as a gap and written again under a new epoch (the
# first example), or sent back to the head of the queue where it held the other retries for ever
# (the second: a flush that never completed).
@example(
    plan=[
        (500, "isolate_zk", 1, 1),
        (500, "lose_acks", 1, 1),
        (500, "restart", 1, 1),
        (5391, "kill", 3, 1),
        (6528, "kill", 3, 1),
        (9838, "kill", 1, 1),
    ],
    seed=190,
)
@example(plan=[(500, "isolate_zk", 1, 1), (5391, "kill", 3, 1), (9838, "kill", 1, 1)], seed=190)
def test_every_acknowledged_record_is_written_exactly_once_in_order_under_faults(
    plan: list[tuple[int, str, int, int]], seed: int
) -> None:
    c = Cluster.create(brokers=3, seed=seed)
    InvariantChecker.attach(c)
    try:
        c.create_topic("t", partitions=2, replication_factor=3, config={"min.insync.replicas": "2"})
        # delivery.timeout.ms is Kafka's default (2 min): no batch gives up inside the run, so none
        # leaves a gap that only a new epoch could close.
        p = c.producer(client_id="idem", request_timeout_ms=3000)
        assert p.idempotent
        futures = []
        sent = 0
        for at_ms, action, broker_id, count in plan:
            while c.now_ms < at_ms:
                futures.append((sent, p.send("t", f"{sent:05d}", key=str(sent % 7))))
                sent += 1
                c.run_for(150)
            _apply(c, action, broker_id, count)
        c.run_for(2000)
        _recover(c)
        assert p.flush(timeout_ms=180_000)
        c.wait_for(lambda: all(c.leader_of("t", i) is not None for i in (0, 1)), 120_000, "leaders")
        c.run_for(5000)
        acked = {f.result().offset: (f.result().partition, i) for i, f in futures if f.exception() is None}
        assert acked, "nothing was acknowledged: the schedule tests nothing"
        logs = _log_values(c)
        for partition, values in logs.items():
            assert len(values) == len(set(values)), f"t-{partition} holds a record twice"
            indices = [int(v) for v in values]
            assert indices == sorted(indices), f"t-{partition} is out of the order it was sent in"
        by_partition: dict[int, set[bytes]] = defaultdict(set)
        for _offset, (partition, i) in acked.items():
            by_partition[partition].add(f"{i:05d}".encode())
        for partition, wanted in by_partition.items():
            assert wanted <= set(logs[partition]), f"acknowledged records missing from t-{partition}"
        # An acknowledged offset holds the record it was acknowledged for.
        for i, f in futures:
            if f.exception() is None:
                md = f.result()
                leader = c.leader_of("t", md.partition)
                assert leader is not None
                log = c.brokers[leader].partitions[TopicPartition("t", md.partition)].log
                (first, *_rest) = [
                    r for r in iter_records(log.read(md.offset, 1 << 20).records) if r.offset == md.offset
                ]
                assert first.value == f"{i:05d}".encode()
        assert c.lost_records() == {}
    finally:
        c.close()


@pytest.mark.parametrize(
    ("cut_ms", "request_timeout_ms", "delivery_timeout_ms"),
    [
        # Batches expire in the accumulator while the link is down; the first retry after it is back
        # finds its predecessor missing (OUT_OF_ORDER_SEQUENCE_NUMBER) while later retries wait.
        (1100, 1000, 2000),
        (2200, 1000, 3000),
        (2300, 500, 3000),
        (1900, 500, 2000),
        (4900, 500, 5000),
        # The last batch holding a sequence expires: the epoch bump it held back is due at once, and
        # the records sent once the link is back go out under the new epoch instead of expiring.
        (1700, 500, 1500),
        (1100, 1000, 1500),
    ],
)
def test_a_producer_cut_from_its_leader_past_delivery_timeout_answers_every_record_in_order(
    cut_ms: int, request_timeout_ms: int, delivery_timeout_ms: int
) -> None:
    with checked_cluster(1, seed=1) as c:
        c.create_topic("t", assignment={0: [1]})
        # A flat retry.backoff.ms (no KIP-580 growth): the cases' timings were chosen against it.
        p = c.producer(
            client_id="idem",
            request_timeout_ms=request_timeout_ms,
            delivery_timeout_ms=delivery_timeout_ms,
            retry_backoff_max_ms=100,
        )
        futures = [p.send("t", "00000")]
        assert p.flush()
        c.network.cut_from_clients(1)  # every request to the leader is lost: none is written
        cut_at = c.now_ms
        while c.now_ms < cut_at + cut_ms:
            futures.append(p.send("t", f"{len(futures):05d}"))
            c.run_for(150)
        c.network.mend_clients(1)
        after = len(futures)
        for _ in range(5):
            futures.append(p.send("t", f"{len(futures):05d}"))
            c.run_for(150)
        assert p.flush(timeout_ms=180_000), "a record sent never got its answer"
        assert all(f.exception() is None for f in futures[after:]), (
            "a record sent once the link was back failed"
        )
        log = [int(v or b"") for v in values(c, 1, "t", 0)]
        assert log == sorted(set(log)), "the log holds a record twice or out of the order it was sent in"
        acked = [i for i, f in enumerate(futures) if f.exception() is None]
        assert set(acked) <= set(log)


def test_the_journal_tells_every_retry_and_each_batch_numbered_again_after_out_of_order_sequence() -> None:
    # A cut outlasts request.timeout.ms: batch 1 fails for good, the leader refuses those after it
    # with OUT_OF_ORDER_SEQUENCE_NUMBER, the producer bumps its epoch and sends them numbered again.
    with checked_cluster(1, seed=1) as c:
        c.create_topic("t", assignment={0: [1]})
        p = c.producer(client_id="idem", request_timeout_ms=1000, delivery_timeout_ms=2000)
        p.send("t", "00000")
        assert p.flush()
        c.network.cut_from_clients(1)
        cut_at = c.now_ms
        while c.now_ms < cut_at + 1100:
            p.send("t", "x")
            c.run_for(150)
        c.network.mend_clients(1)
        assert p.flush(timeout_ms=60_000)
        retries = [e for e in c.events() if e.kind == "produce_retry"]
        # Each retry of a batch, not only its first, with its attempt number.
        by_sequence: dict[int, list[int]] = {}
        for e in retries:
            by_sequence.setdefault(e.data["sequence"], []).append(e.data["attempt"])
            assert f"on attempt {e.data['attempt']}" in e.text
        assert any(attempts[:2] == [1, 2] for attempts in by_sequence.values())
        assert sum(e.data["error"] == "OUT_OF_ORDER_SEQUENCE_NUMBER" for e in retries) >= 2
        renumbered = [e for e in c.events() if e.kind == "produce_renumbered"]
        assert renumbered
        for e in renumbered:
            assert (e.data["old_epoch"], e.data["epoch"]) == (0, 1)
            assert (
                f"resetting sequence number of batch with current sequence {e.data['old_sequence']} (epoch 0) "
                f"for partition t-0 to {e.data['sequence']} (epoch 1)"
            ) in e.text
            assert "OUT_OF_ORDER_SEQUENCE_NUMBER" in e.text
        assert [e.data["sequence"] for e in renumbered] == list(range(len(renumbered)))
        # The bump says which batch took the sequences away, and why.
        (bump,) = [e for e in c.events() if e.kind == "producer_epoch_bumped"]
        assert "its batch with sequence 1 to t-0 failed after it was sent (REQUEST_TIMED_OUT)" in bump.text
        assert bump.seq < renumbered[0].seq


def _produce(c: Cluster, batch: bytes, *, to: int = 1) -> ProduceResponse:
    """One Produce request, as a client would send it, to broker ``to``."""
    answers: list[ProduceResponse] = []
    endpoint = Endpoint(c.network, c.scheduler, "raw-client", lambda env: None)
    try:
        endpoint.request(
            to,
            ProduceRequest(acks=-1, timeout_ms=5000, partitions={TopicPartition("t", 0): batch}),
            answers.append,
            timeout_ms=10_000,
        )
        assert c.run_until_true(lambda: bool(answers), 10_000)
    finally:
        endpoint.close()
    return answers[0]


def _batch(pid: int, epoch: int, seq: int, *values: str) -> bytes:
    return build_batch(
        [(None, v.encode()) for v in values],
        timestamp_ms=0,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
    )


@pytest.mark.parametrize(
    ("bad", "error"),
    [
        (_batch(4000, 1, 5, "gap"), OutOfOrderSequenceNumber.name),  # sequences 2 to 4 never came
        (_batch(4000, 0, 2, "stale"), InvalidProducerEpoch.name),  # epoch 0 after epoch 1
        (_batch(4000, 2, 3, "new-epoch"), OutOfOrderSequenceNumber.name),  # a new epoch starts at 0
    ],
)
def test_bad_sequences_and_epochs_get_kafkas_error_and_lose_nothing(bad: bytes, error: str) -> None:
    with checked_cluster(3) as c:
        c.create_topic("t", assignment={0: [1, 2, 3]})
        ok = _produce(c, _batch(4000, 1, 0, "a", "b"))
        assert ok.partitions[TopicPartition("t", 0)].error is None
        answer = _produce(c, bad).partitions[TopicPartition("t", 0)]
        assert answer.error == error
        assert answer.base_offset == -1
        # Nothing acknowledged is lost, nothing refused was written, and the producer carries on.
        carry_on = _produce(c, _batch(4000, 1, 2, "c")).partitions[TopicPartition("t", 0)]
        assert (carry_on.error, carry_on.base_offset) == (None, 2)
        c.run_for(500)
        for broker in (1, 2, 3):
            log = c.brokers[broker].partitions[TopicPartition("t", 0)].log
            assert [r.value for r in iter_records(log.read(0, 1 << 20).records)] == [b"a", b"b", b"c"]


def test_an_unknown_producer_id_is_accepted_at_any_sequence_as_kafka_3_does() -> None:
    # Kafka 3.x (KIP-360) no longer answers UNKNOWN_PRODUCER_ID on Produce: the partition may have lost
    # the producer's state with its records (retention), so the first batch it sees sets the sequence.
    with checked_cluster(3) as c:
        c.create_topic("t", assignment={0: [1, 2, 3]})
        first = _produce(c, _batch(123456, 0, 17, "x")).partitions[TopicPartition("t", 0)]
        assert (first.error, first.base_offset) == (None, 0)
        again = _produce(c, _batch(123456, 0, 17, "x")).partitions[TopicPartition("t", 0)]
        assert (again.error, again.base_offset) == (None, 0)  # a duplicate: answered, not written
        gap = _produce(c, _batch(123456, 0, 19, "y")).partitions[TopicPartition("t", 0)]
        assert gap.error == OutOfOrderSequenceNumber.name


def test_a_new_leader_answers_a_retry_the_old_leader_wrote() -> None:
    with checked_cluster(3) as c:
        c.create_topic("t", assignment={0: [1, 2, 3]})
        assert _produce(c, _batch(7, 0, 0, "one", "two")).partitions[TopicPartition("t", 0)].error is None
        c.run_for(500)  # the followers have it
        c.kill_broker(1)
        c.wait_for(lambda: c.leader_of("t", 0) in (2, 3), 60_000, "a new leader")
        leader = c.leader_of("t", 0)
        assert leader is not None
        retry = _produce(c, _batch(7, 0, 0, "one", "two"), to=leader).partitions[TopicPartition("t", 0)]
        assert (retry.error, retry.base_offset) == (None, 0)
        log = c.brokers[leader].partitions[TopicPartition("t", 0)].log
        assert log.log_end_offset == 2


def test_a_killed_and_restarted_leader_rebuilds_its_producer_state_from_its_log() -> None:
    with checked_cluster(1) as c:
        c.create_topic("t", assignment={0: [1]})
        assert _produce(c, _batch(7, 0, 0, "one")).partitions[TopicPartition("t", 0)].error is None
        c.kill_broker(1)  # no clean shutdown, so no snapshot at its log end: the batches are replayed
        c.restart_broker(1)
        c.wait_for(lambda: c.leader_of("t", 0) == 1, 60_000, "broker 1 leads again")
        again = _produce(c, _batch(7, 0, 0, "one")).partitions[TopicPartition("t", 0)]
        assert (again.error, again.base_offset) == (None, 0)
        gap = _produce(c, _batch(7, 0, 5, "six")).partitions[TopicPartition("t", 0)]
        assert gap.error == OutOfOrderSequenceNumber.name


def test_a_controlled_shutdown_leaves_a_snapshot_the_restarted_broker_loads() -> None:
    with checked_cluster(3) as c:
        c.create_topic("t", assignment={0: [1, 2, 3]})
        assert _produce(c, _batch(7, 0, 0, "one", "two")).partitions[TopicPartition("t", 0)].error is None
        c.run_for(500)
        c.controlled_shutdown(1)
        directory = c.brokers[1].partitions[TopicPartition("t", 0)].log.dir
        assert sorted(p.name for p in directory.glob("*.snapshot")) == ["00000000000000000002.snapshot"]
        c.restart_broker(1)
        c.wait_for(lambda: c.brokers[1].state is BrokerState.RUNNING, 60_000, "broker 1 back")
        state = c.brokers[1].partitions[TopicPartition("t", 0)].log.producer_state.producers
        assert (state[7].producer_epoch, state[7].last_seq, state[7].last_offset) == (0, 1, 1)
