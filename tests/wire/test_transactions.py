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
