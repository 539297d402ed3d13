"""The transaction coordinator end to end, through the Python API a student uses: what commits is
seen whole by read_committed consumers, what aborts never; markers in the log byte for byte; the
state in __transaction_state; fencing, timeouts, failover; and Kafka's errors by name."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

from lab.engine.cluster import Cluster
from lab.engine.config import BROKER_KEYS
from lab.engine.errors import (
    IllegalState,
    InvalidTransactionTimeout,
    ProducerFenced,
)
from lab.engine.groups import coordinator_of
from lab.engine.ids import TopicPartition
from lab.engine.network import Endpoint
from lab.engine.protocol import DescribeTransactionsRequest, ListTransactionsRequest
from lab.engine.records import iter_batches, iter_records
from lab.engine.transactions import (
    TRANSACTION_STATE_TOPIC,
    partition_for_transactional_id,
    transaction_coordinator_of,
)
from tests.engine.helpers import checked_cluster, texts


@pytest.fixture
def c() -> Iterator[Cluster]:
    with checked_cluster(3) as cluster:
        cluster.create_topic("in", partitions=1, replication_factor=3)
        cluster.create_topic("out", partitions=2, replication_factor=3)
        yield cluster


def _read(c: Cluster, topic: str, isolation: str, partitions: int = 2) -> list[bytes]:
    r = c.consumer(isolation_level=isolation, auto_offset_reset="earliest")
    r.assign([(topic, p) for p in range(partitions)])
    got = []
    for _ in range(6):
        got += r.poll(300)
    r.close()
    return sorted(x.value or b"" for x in got)


def _ask(c: Cluster, broker: int, request: object) -> Any:
    """One request, as a client would send it, to ``broker``; its answer."""
    answers: list[Any] = []
    endpoint = Endpoint(c.network, c.scheduler, "raw-client", lambda env: None)
    try:
        endpoint.request(broker, request, answers.append, timeout_ms=10_000)
        assert c.run_until_true(lambda: bool(answers), 10_000)
    finally:
        endpoint.close()
    return answers[0]


def _committed(c: Cluster, group_id: str) -> dict[TopicPartition, int]:
    found = coordinator_of(c.brokers, group_id)
    return {} if found is None else dict(found[1].offsets)


def _leader_partition(c: Cluster, topic: str, partition: int):  # type: ignore[no-untyped-def]
    leader = c.leader_of(topic, partition)
    assert leader is not None
    return c.brokers[leader].partitions[TopicPartition(topic, partition)]


def test_the_coordinator_partition_is_javas_hash_of_the_transactional_id_with_kafkas_50_beside_the_labs() -> (
    None
):
    assert partition_for_transactional_id("hello", 50) == 99162322 % 50  # "hello".hashCode() = 99162322
    assert partition_for_transactional_id("polygenelubricants", 50) == 0  # hashCode is Integer.MIN_VALUE
    key = BROKER_KEYS["transaction.state.log.num.partitions"]
    assert (key.kafka_default, key.default) == ("50", "5")
    assert BROKER_KEYS["transaction.max.timeout.ms"].kafka_default == "900000"


def test_committed_records_are_seen_whole_by_read_committed_and_aborted_ones_never(c: Cluster) -> None:
    p = c.producer(transactional_id="tx")
    p.init_transactions()
    p.begin_transaction()
    for i in range(6):
        p.send("out", f"c{i}", key=f"k{i}")
    p.commit_transaction()
    p.begin_transaction()
    for i in range(4):
        p.send("out", f"a{i}", key=f"k{i}")
    p.flush()
    p.abort_transaction()
    c.run_for(500)
    committed = [f"c{i}".encode() for i in range(6)]
    assert _read(c, "out", "read_committed") == sorted(committed)
    # read_uncommitted sees the aborted records too, but never a control record.
    assert _read(c, "out", "read_uncommitted") == sorted(committed + [f"a{i}".encode() for i in range(4)])
    assert texts(c, "txn_completed")


def test_an_open_transaction_holds_the_last_stable_offset_at_its_first_record(c: Cluster) -> None:
    plain = c.producer()
    plain.send("out", b"before", partition=0)
    plain.flush()
    p = c.producer(transactional_id="tx")
    p.init_transactions()
    p.begin_transaction()
    p.send("out", b"open-1", partition=0)
    p.send("out", b"open-2", partition=0)
    p.flush()
    plain.send("out", b"after", partition=0)
    plain.flush()
    c.run_for(300)
    part = _leader_partition(c, "out", 0)
    assert part.high_watermark == 4
    assert part.last_stable_offset == 1  # the transaction's first offset
    assert _read(c, "out", "read_committed", 1) == [b"before"]
    p.commit_transaction()
    c.run_for(300)
    assert part.last_stable_offset == part.high_watermark == 5  # its commit marker is offset 4
    assert _read(c, "out", "read_committed", 1) == [b"after", b"before", b"open-1", b"open-2"]


def test_markers_are_control_batches_byte_for_byte_and_aborts_go_to_the_txnindex(c: Cluster) -> None:
    p = c.producer(transactional_id="tx")
    p.init_transactions()
    p.begin_transaction()
    p.send("out", b"x", partition=1)
    p.commit_transaction()
    p.begin_transaction()
    p.send("out", b"y", partition=1)
    p.flush()
    p.abort_transaction()
    c.run_for(500)
    for broker in c.brokers.values():  # every replica has the markers (and the index entry)
        log = broker.partitions[TopicPartition("out", 1)].log
        data = log.read(0, 1 << 20).records
        batches = list(iter_batches(data))
        assert len(batches) == 4
        (_, data1), (_, commit), (_, _data2), (_, abort) = batches
        assert data1.attributes & 0x30 == 0x10  # transactional, not control
        for header in (commit, abort):
            assert header.attributes & 0x30 == 0x30  # control and transactional
            assert (header.producer_id, header.producer_epoch, header.base_sequence) == (
                p.producer_id,
                p.producer_epoch,
                -1,
            )
        records = list(iter_records(data))
        assert records[1].key == b"\x00\x00\x00\x01"  # ControlRecordType version 0, COMMIT
        assert records[3].key == b"\x00\x00\x00\x00"  # ABORT
        assert records[1].value is not None
        assert records[1].value[:2] == b"\x00\x00"  # marker version 0
        (aborted,) = log.aborted_transactions()
        assert (aborted.producer_id, aborted.first_offset, aborted.last_offset) == (p.producer_id, 2, 3)
        raw = (log.dir / "00000000000000000000.txnindex").read_bytes()
        assert len(raw) == 34
        assert raw[:2] == b"\x00\x00"
        assert int.from_bytes(raw[2:10], "big") == p.producer_id


def test_each_state_goes_to_transaction_state_before_it_takes_effect(c: Cluster) -> None:
    p = c.producer(transactional_id="tx")
    p.init_transactions()
    p.begin_transaction()
    p.send("out", b"x", partition=0)
    p.commit_transaction()
    c.run_for(500)
    found = transaction_coordinator_of(c.brokers, "tx")
    assert found is not None
    broker, meta = found
    partition = partition_for_transactional_id("tx", 5)
    log = broker.partitions[TopicPartition(TRANSACTION_STATE_TOPIC, partition)].log
    states = [
        json.loads(r.value)["transaction_status"]
        for r in iter_records(log.read(0, 1 << 20).records)
        if r.value is not None
    ]
    assert states == ["Empty", "Ongoing", "PrepareCommit", "CompleteCommit"]
    assert meta.state.value == "CompleteCommit"


def test_a_new_producer_with_the_same_id_fences_the_old_and_aborts_its_transaction(c: Cluster) -> None:
    zombie = c.producer(transactional_id="tx")
    zombie.init_transactions()
    zombie.begin_transaction()
    zombie.send("out", b"zombie", partition=0)
    zombie.flush()
    fresh = c.producer(transactional_id="tx")
    fresh.init_transactions()  # retries CONCURRENT_TRANSACTIONS while the zombie's transaction aborts
    assert (fresh.producer_id, fresh.producer_epoch) == (zombie.producer_id, zombie.producer_epoch + 2)
    assert texts(c, "txn_fenced")
    with pytest.raises(ProducerFenced):
        zombie.commit_transaction()
    # From now on every call of the zombie says so, by name.
    with pytest.raises(ProducerFenced):
        zombie.send("out", b"more", partition=0)
    with pytest.raises(ProducerFenced):
        zombie.begin_transaction()
    fresh.begin_transaction()
    fresh.send("out", b"fresh", partition=0)
    fresh.commit_transaction()
    c.run_for(500)
    assert _read(c, "out", "read_committed") == [b"fresh"]


def test_a_fenced_producers_records_fail_with_producer_fenced(c: Cluster) -> None:
    zombie = c.producer(transactional_id="tx")
    zombie.init_transactions()
    fresh = c.producer(transactional_id="tx")
    fresh.init_transactions()
    fresh.begin_transaction()
    fresh.send("out", b"fresh", partition=0)
    fresh.commit_transaction()  # its marker carries the new epoch to the partition
    zombie.begin_transaction()  # local: Kafka's client does not know yet
    future = zombie.send("out", b"zombie", partition=0)
    zombie.flush()
    # AddPartitionsToTxn is the first to hear of the new epoch: the record fails with it, by name.
    assert isinstance(future.exception(), ProducerFenced)
    with pytest.raises(ProducerFenced):
        zombie.commit_transaction()


@pytest.mark.parametrize(
    ("calls", "message"),
    [
        (("begin_transaction",), "Cannot call beginTransaction before initTransactions"),
        (("init_transactions", "commit_transaction"), "from state READY to state COMMITTING_TRANSACTION"),
        (("init_transactions", "abort_transaction"), "from state READY to state ABORTING_TRANSACTION"),
        (
            ("init_transactions", "begin_transaction", "begin_transaction"),
            "from state IN_TRANSACTION to state IN_TRANSACTION",
        ),
        (("init_transactions", "init_transactions"), "from state READY to state INITIALIZING"),
        (("init_transactions", "send"), "Cannot call send in state READY"),
        (("send",), "before completing a call to initTransactions"),
    ],
)
def test_transactional_calls_out_of_order_get_kafkas_illegal_state(
    c: Cluster, calls: tuple[str, ...], message: str
) -> None:
    p = c.producer(transactional_id="tx")
    *before, last = calls
    for name in before:
        getattr(p, name)()
    call = (lambda: p.send("out", b"x")) if last == "send" else getattr(p, last)
    with pytest.raises(IllegalState, match=re.escape(message)):
        call()


def test_transactional_calls_on_a_producer_without_transactional_id_are_refused(c: Cluster) -> None:
    with pytest.raises(IllegalState, match=r"transactional\.id"):
        c.producer().begin_transaction()


def test_a_timeout_above_transaction_max_timeout_ms_is_refused(c: Cluster) -> None:
    p = c.producer(transactional_id="tx", transaction_timeout_ms=900_001)
    with pytest.raises(InvalidTransactionTimeout):
        p.init_transactions()


def test_a_transaction_open_past_its_timeout_is_aborted_and_its_producer_fenced(c: Cluster) -> None:
    p = c.producer(transactional_id="tx", transaction_timeout_ms=3000)
    p.init_transactions()
    p.begin_transaction()
    p.send("out", b"hanging", partition=0)
    p.flush()
    part = _leader_partition(c, "out", 0)
    c.run_for(1000)
    assert part.last_stable_offset == 0 < part.high_watermark
    c.run_for(4000)  # past the timeout and a cleanup interval
    assert texts(c, "txn_timed_out")
    assert part.last_stable_offset == part.high_watermark == 2  # the record and its abort marker
    assert _read(c, "out", "read_committed") == []
    with pytest.raises(ProducerFenced):
        p.commit_transaction()


def test_offsets_sent_to_a_transaction_count_only_when_it_commits(c: Cluster) -> None:
    source = c.producer()
    for i in range(4):
        source.send("in", f"r{i}", partition=0)
    source.flush()
    p = c.producer(transactional_id="ctp")
    p.init_transactions()
    # Aborted: the offset does not move.
    p.begin_transaction()
    p.send("out", b"T(r0..r3)", partition=0)
    p.send_offsets_to_transaction({("in", 0): 4}, "workers")
    p.abort_transaction()
    c.run_for(500)
    assert TopicPartition("in", 0) not in _committed(c, "workers")
    # Committed: the offset moves with the records, at once.
    p.begin_transaction()
    p.send("out", b"T(r0..r3)", partition=0)
    p.send_offsets_to_transaction({("in", 0): 4}, "workers")
    p.commit_transaction()
    c.run_for(500)
    assert _committed(c, "workers")[TopicPartition("in", 0)] == 4
    assert _read(c, "out", "read_committed") == [b"T(r0..r3)"]


def test_the_coordinator_killed_between_prepare_commit_and_the_markers_completes_on_the_new_one(
    c: Cluster,
) -> None:
    p = c.producer(transactional_id="tx", request_timeout_ms=3000)
    p.init_transactions()
    p.begin_transaction()
    for i in range(6):
        p.send("out", f"r{i}", key=f"k{i}")
    p.flush()
    found = transaction_coordinator_of(c.brokers, "tx")
    assert found is not None
    coordinator = found[0].id
    txn = p.txn
    assert txn is not None
    # EndTxn by hand, stepping until PrepareCommit is written, then the coordinator dies at once.
    from lab.engine.txn_client import TxnState as ClientState

    txn.state = ClientState.COMMITTING_TRANSACTION
    from lab.engine.tasks import Task

    Task.start(txn._end(commit=True))
    while not texts(c, "txn_prepared"):
        assert c.step()
    c.isolate_broker(coordinator, from_="brokers")  # what it sent next never arrives
    c.kill_broker(coordinator)
    c.heal(coordinator)
    # The markers never left: every surviving replica still has the transaction open.
    for broker in c.brokers.values():
        if broker.alive:
            for i in (0, 1):
                state = broker.partitions[TopicPartition("out", i)].log.producer_state
                assert p.producer_id in state.ongoing
    c.wait_for(
        lambda: (
            (f := transaction_coordinator_of(c.brokers, "tx")) is not None
            and f[0].id != coordinator
            and f[1].state.value == "CompleteCommit"
        ),
        60_000,
        "the new coordinator completes the commit",
    )
    assert any("sends the markers again" in t for t in texts(c, "txn_completing"))
    assert _read(c, "out", "read_committed") == sorted(f"r{i}".encode() for i in range(6))


def test_describe_and_list_transactions_answer_from_the_coordinator(c: Cluster) -> None:
    p = c.producer(transactional_id="tx")
    p.init_transactions()
    p.begin_transaction()
    p.send("out", b"x", partition=1)
    p.flush()
    found = transaction_coordinator_of(c.brokers, "tx")
    assert found is not None
    broker = found[0]
    described = _ask(c, broker.id, DescribeTransactionsRequest(transactional_ids=("tx", "nobody")))
    tx, nobody = described.transactions
    assert (tx.state, tx.producer_id, tx.partitions) == (
        "Ongoing",
        p.producer_id,
        (TopicPartition("out", 1),),
    )
    assert nobody.error in ("TRANSACTIONAL_ID_NOT_FOUND", "NOT_COORDINATOR")
    listed = _ask(c, broker.id, ListTransactionsRequest(state_filters=("Ongoing",)))
    assert [t.transactional_id for t in listed.transactions] == ["tx"]


def _txn_batch(pid: int, epoch: int, seq: int, *values: str) -> bytes:
    from lab.engine.records import build_batch

    return build_batch(
        [(None, v.encode()) for v in values],
        timestamp_ms=0,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        is_transactional=True,
    )


def test_a_sequence_gap_and_a_stale_epoch_in_a_transaction_get_kafkas_errors_and_change_nothing(
    c: Cluster,
) -> None:
    from lab.engine.protocol import ProduceRequest

    p = c.producer(transactional_id="tx")
    p.init_transactions()
    p.begin_transaction()
    p.send("out", b"ok", partition=0)
    p.flush()
    pid, epoch = p.producer_id, p.producer_epoch
    leader = c.leader_of("out", 0)
    assert leader is not None
    tp = TopicPartition("out", 0)

    def produce(batch: bytes) -> str | None:
        answer = _ask(c, leader, ProduceRequest(acks=-1, timeout_ms=5000, partitions={tp: batch}))
        return answer.partitions[tp].error

    assert produce(_txn_batch(pid, epoch, 5, "gap")) == "OUT_OF_ORDER_SEQUENCE_NUMBER"  # 1 to 4 never came
    p.commit_transaction()
    fresh = c.producer(transactional_id="tx")
    fresh.init_transactions()
    fresh.begin_transaction()
    fresh.send("out", b"fresh", partition=0)
    fresh.commit_transaction()  # its marker carries epoch + 1 to out-0
    assert produce(_txn_batch(pid, epoch, 1, "stale")) == "INVALID_PRODUCER_EPOCH"
    c.run_for(500)
    assert _read(c, "out", "read_uncommitted") == [b"fresh", b"ok"]


def test_records_not_yet_sent_when_a_transaction_aborts_fail_with_transaction_aborted(c: Cluster) -> None:
    p = c.producer(transactional_id="tx", linger_ms=1000)
    p.init_transactions()
    p.begin_transaction()
    future = p.send("out", b"never-sent", partition=0)  # waiting for the topic's metadata
    p.abort_transaction()
    assert future.exception() is not None
    assert future.exception().name == "TRANSACTION_ABORTED"  # type: ignore[union-attr]
    p.begin_transaction()  # the producer goes on
    p.send("out", b"next", partition=0)
    p.commit_transaction()
    p.begin_transaction()  # with the topic's metadata known, the record waits in a batch (linger.ms)
    lingering = p.send("out", b"lingering", partition=0)
    p.abort_transaction()
    assert lingering.exception().name == "TRANSACTION_ABORTED"  # type: ignore[union-attr]
    c.run_for(300)
    assert _read(c, "out", "read_uncommitted") == [b"next"]
