"""InitProducerId over the wire, and Produce honouring the producer id, epoch and sequence a real
client writes into its batches (in virtual time, with kio encoding what a client would send)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kio.schema.errors import ErrorCode

from lab.engine.cluster import Cluster
from lab.engine.ids import TopicPartition
from lab.engine.records import build_batch, iter_records
from tests.engine.helpers import checked_cluster
from tests.wire.harness import WireClient

PRODUCE, INIT_PRODUCER_ID = 0, 22


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    with checked_cluster(3) as c:
        c.create_topic("orders", assignment={0: [1, 2, 3]})
        yield c


def produce(pid: int, epoch: int, seq: int, *values: bytes) -> dict:
    batch = build_batch(
        [(None, v) for v in values],
        timestamp_ms=1_000,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
    )
    return {
        "transactional_id": None,
        "acks": -1,
        "timeout": 5_000,
        "topic_data": [{"name": "orders", "partition_data": [{"index": 0, "records": batch}]}],
    }


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
def test_init_producer_id_gives_an_id_from_the_brokers_block_at_epoch_zero(
    cluster: Cluster, version: int
) -> None:
    body: dict = {"transactional_id": None, "transaction_timeout": 60_000}
    if version >= 3:
        body |= {"producer_id": -1, "producer_epoch": -1}
    first = WireClient(cluster, 2).ask(INIT_PRODUCER_ID, version, body)
    second = WireClient(cluster, 2).ask(INIT_PRODUCER_ID, version, body)
    assert first.error_code == ErrorCode.none
    assert (first.producer_id, first.producer_epoch) == (0, 0)
    assert (second.producer_id, second.producer_epoch) == (1, 0)
    other = WireClient(cluster, 3).ask(INIT_PRODUCER_ID, version, body)
    assert other.producer_id == 1000  # broker 3 took the next block of 1000


def test_produce_answers_a_duplicate_with_the_first_offset_and_refuses_gaps_and_stale_epochs(
    cluster: Cluster,
) -> None:
    client = WireClient(cluster, 1)
    init = client.ask(INIT_PRODUCER_ID, 4, {"transactional_id": None, "transaction_timeout": 60_000})
    pid = int(init.producer_id)

    def answer(pid: int, epoch: int, seq: int, *values: bytes) -> tuple[ErrorCode, int]:
        (part,) = client.ask(PRODUCE, 9, produce(pid, epoch, seq, *values)).responses[0].partition_responses
        return part.error_code, part.base_offset

    assert answer(pid, 0, 0, b"a", b"b") == (ErrorCode.none, 0)
    assert answer(pid, 0, 0, b"a", b"b") == (ErrorCode.none, 0)  # the retry: answered, not written
    assert answer(pid, 0, 5, b"gap") == (ErrorCode.out_of_order_sequence_number, -1)
    assert answer(pid, 1, 0, b"c") == (ErrorCode.none, 2)  # a new epoch starts at sequence 0
    assert answer(pid, 0, 2, b"stale") == (ErrorCode.invalid_producer_epoch, -1)
    cluster.run_for(500)
    log = cluster.brokers[1].partitions[TopicPartition("orders", 0)].log
    assert [r.value for r in iter_records(log.read(0, 1 << 20).records)] == [b"a", b"b", b"c"]


FIND_COORDINATOR, ADD_PARTITIONS, END_TXN, FETCH, DESCRIBE_TXNS, LIST_TXNS = 10, 24, 26, 1, 65, 66


def _coordinator(cluster: Cluster, transactional_id: str) -> int:
    client = WireClient(cluster, 1)
    for _ in range(20):  # the first asks create __transaction_state
        answer = client.ask(FIND_COORDINATOR, 4, {"key_type": 1, "coordinator_keys": (transactional_id,)})
        (found,) = answer.coordinators
        if found.error_code == ErrorCode.none:
            return int(found.node_id)
        assert found.error_code == ErrorCode.coordinator_not_available
        cluster.run_for(500)
    raise AssertionError("no transaction coordinator")


def txn_produce(pid: int, epoch: int, seq: int, *values: bytes) -> dict:
    batch = build_batch(
        [(None, v) for v in values],
        timestamp_ms=1_000,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        is_transactional=True,
    )
    return {
        "transactional_id": "wire",
        "acks": -1,
        "timeout": 5_000,
        "topic_data": [{"name": "orders", "partition_data": [{"index": 0, "records": batch}]}],
    }


def test_a_transaction_over_the_wire_and_a_read_committed_fetch_with_its_aborted_transactions(
    cluster: Cluster,
) -> None:
    coordinator = WireClient(cluster, _coordinator(cluster, "wire"))
    init = coordinator.ask(
        INIT_PRODUCER_ID,
        4,
        {"transactional_id": "wire", "transaction_timeout": 60_000, "producer_id": -1, "producer_epoch": -1},
    )
    assert init.error_code == ErrorCode.none
    pid, epoch = int(init.producer_id), int(init.producer_epoch)
    add = coordinator.ask(
        ADD_PARTITIONS,
        3,
        {
            "v3_and_below_transactional_id": "wire",
            "v3_and_below_producer_id": pid,
            "v3_and_below_producer_epoch": epoch,
            "v3_and_below_topics": [{"name": "orders", "partitions": (0,)}],
        },
    )
    assert add.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code == ErrorCode.none
    leader = WireClient(cluster, 1)
    (part,) = leader.ask(PRODUCE, 9, txn_produce(pid, epoch, 0, b"x", b"y")).responses[0].partition_responses
    assert part.error_code == ErrorCode.none
    end = coordinator.ask(
        END_TXN,
        3,
        {"transactional_id": "wire", "producer_id": pid, "producer_epoch": epoch, "committed": False},
    )
    assert end.error_code == ErrorCode.none
    again = coordinator.ask(  # commit after an abort: Kafka's INVALID_TXN_STATE
        END_TXN,
        3,
        {"transactional_id": "wire", "producer_id": pid, "producer_epoch": epoch, "committed": True},
    )
    assert again.error_code in (ErrorCode.invalid_txn_state, ErrorCode.concurrent_transactions)
    cluster.run_for(1000)
    fetch = leader.ask(
        FETCH,
        12,
        {
            "replica_id": -1,
            "max_wait": 0,
            "min_bytes": 1,
            "max_bytes": 1 << 20,
            "isolation_level": 1,
            "session_id": 0,
            "session_epoch": -1,
            "topics": [
                {
                    "topic": "orders",
                    "partitions": [
                        {
                            "partition": 0,
                            "fetch_offset": 0,
                            "partition_max_bytes": 1 << 20,
                            "log_start_offset": -1,
                        }
                    ],
                }
            ],
            "forgotten_topics_data": (),
            "rack_id": "",
        },
    )
    data = fetch.responses[0].partitions[0]
    assert (data.high_watermark, data.last_stable_offset) == (3, 3)  # two records and the abort marker
    assert [(t.producer_id, t.first_offset) for t in data.aborted_transactions] == [(pid, 0)]
    described = coordinator.ask(DESCRIBE_TXNS, 0, {"transactional_ids": ("wire",)})
    (state,) = described.transaction_states
    assert (state.transaction_state, state.producer_id) == ("CompleteAbort", pid)
    listed = coordinator.ask(LIST_TXNS, 0, {"state_filters": (), "producer_id_filters": ()})
    assert [t.transactional_id for t in listed.transaction_states] == ["wire"]
