"""Exactly-once's cost: idempotent produce against the same produce without idempotence.

``python -m lab.bench transactions [--quick]`` prints one JSON line per figure:

- ``idempotent_produce`` (first): 3 brokers, a topic of 3 partitions, replication factor 3
  (min.insync.replicas 2), memory store, fast mode. Two producers with acks=all send the same
  100-byte records, one ``send()`` each, the cluster running after every 500 sends: one with
  Kafka 3.x's default ``enable.idempotence=true`` (InitProducerId first, then a producer id, epoch
  and sequence in every batch, which each leader checks against its producer state and each
  follower rebuilds it from), and the baseline with ``enable.idempotence=false``, each on a
  cluster of its own. They run in turns, a fifth of the records at a time, so a shared machine
  slows both alike. The figure is acknowledged records per second of wall time; the ratio is the
  idempotent rate over the other (the target: at least 0.8). Afterwards (not timed) every record
  is in its partition once, and the leader's producer state ends at the last sequence sent.
- ``transactions`` (second): the same cluster; a transactional producer commits transactions of
  100 records (begin, 100 ``send()``, commit: AddPartitionsToTxn, the produce, EndTxn, the
  coordinator's PrepareCommit, markers and CompleteCommit), against the same records sent by the
  same idempotent producer without transactions, 100 at a time, each hundred flushed (acknowledged)
  before the next. In turns, as above. The figure is committed records per second (and transactions
  per second); the ratio is that over the baseline's acknowledged records per second (the target:
  at least 0.3). Afterwards a read_committed consumer reads every record once.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from typing import Any

from lab.bench.replicate import FAST, RECORD_BYTES
from lab.engine.clients import FutureRecordMetadata, Producer
from lab.engine.cluster import Cluster
from lab.engine.ids import TopicPartition

CHUNK = 500
TURNS = 5


def _emit(figure: dict[str, Any]) -> None:
    print(json.dumps(figure), flush=True)


class _Run:
    """One cluster and one producer, sending a turn's records one send() at a time."""

    def __init__(self, base: Path, *, idempotent: bool) -> None:
        self.cluster = Cluster.create(brokers=3, seed=1, config=FAST, data_dir=base)
        self.cluster.create_topic(
            "bench", partitions=3, replication_factor=3, config={"min.insync.replicas": "2"}
        )
        self.producer: Producer = self.cluster.producer(acks="all", enable_idempotence=idempotent)
        self.futures: list[FutureRecordMetadata] = []
        self.seconds = 0.0

    def turn(self, values: list[bytes], *, last: bool) -> None:
        send, futures, cluster = self.producer.send, self.futures, self.cluster
        start = time.perf_counter()
        for i, value in enumerate(values, 1):
            futures.append(send("bench", value))
            if i % CHUNK == 0:
                cluster.run_for(0)
        if last:
            assert self.producer.flush(), "flush() timed out"
        self.seconds += time.perf_counter() - start

    def check(self, records: int) -> None:
        offsets = {(md.partition, md.offset) for md in (f.result() for f in self.futures)}
        assert len(offsets) == records, "two records were told the same offset"
        written = 0
        for partition in range(3):
            leader = self.cluster.leader_of("bench", partition)
            assert leader is not None
            log = self.cluster.brokers[leader].partitions[TopicPartition("bench", partition)].log
            written += log.log_end_offset - log.log_start_offset
            if self.producer.idempotent:
                entry = log.producer_state.producers[self.producer.producer_id]
                sent = sum(1 for md in (f.result() for f in self.futures) if md.partition == partition)
                assert entry.last_seq == sent - 1, "the leader's producer state is behind"
        assert written == records, "a record was written twice, or not at all"


def bench_idempotent_produce(records: int) -> dict[str, Any]:
    values = [b"%08d" % i + bytes(RECORD_BYTES - 8) for i in range(records)]
    step = records // TURNS
    turns = [values[i * step : (i + 1) * step if i < TURNS - 1 else records] for i in range(TURNS)]
    with tempfile.TemporaryDirectory(prefix="kafka-lab-bench-") as tmp:
        ours = _Run(Path(tmp) / "idempotent", idempotent=True)
        plain = _Run(Path(tmp) / "plain", idempotent=False)
        try:
            assert ours.producer.idempotent
            assert not plain.producer.idempotent
            for i, values_of_turn in enumerate(turns):
                last = i == TURNS - 1
                ours.turn(values_of_turn, last=last)
                plain.turn(values_of_turn, last=last)
            ours.check(records)
            plain.check(records)
        finally:
            ours.cluster.close()
            plain.cluster.close()
    return {
        "bench": "idempotent_produce",
        "records": records,
        "record_bytes": RECORD_BYTES,
        "replication_factor": 3,
        "acks": "all",
        "records_per_s": round(records / ours.seconds),
        "baseline": "same_produce_enable_idempotence_false",
        "baseline_records_per_s": round(records / plain.seconds),
        "ratio": round(plain.seconds / ours.seconds, 4),
        "target_ratio": 0.8,
    }


TXN_RECORDS = 100  # records per transaction


class _TxnRun:
    """One cluster and one producer: transactions of 100 records, or the same hundreds flushed."""

    def __init__(self, base: Path, *, transactional: bool) -> None:
        self.cluster = Cluster.create(brokers=3, seed=1, config=FAST, data_dir=base)
        self.cluster.create_topic(
            "bench", partitions=3, replication_factor=3, config={"min.insync.replicas": "2"}
        )
        self.producer: Producer = (
            self.cluster.producer(acks="all", transactional_id="bench")
            if transactional
            else self.cluster.producer(acks="all")
        )
        self.transactional = transactional
        if transactional:
            self.producer.init_transactions()
        self.seconds = 0.0

    def turn(self, values: list[bytes]) -> None:
        producer, send = self.producer, self.producer.send
        start = time.perf_counter()
        for at in range(0, len(values), TXN_RECORDS):
            if self.transactional:
                producer.begin_transaction()
            for value in values[at : at + TXN_RECORDS]:
                send("bench", value)
            if self.transactional:
                producer.commit_transaction()
            else:
                assert producer.flush(), "flush() timed out"
        self.seconds += time.perf_counter() - start

    def check(self, records: int) -> None:
        reader = self.cluster.consumer(isolation_level="read_committed", auto_offset_reset="earliest")
        reader.assign([("bench", p) for p in range(3)])
        seen: set[bytes] = set()
        for _ in range(200):
            got = reader.poll(100)
            seen.update(r.value or b"" for r in got)
            if len(seen) == records and not got:
                break
        assert len(seen) == records, f"read_committed read {len(seen)} of {records} records"
        assert self.producer.acked == records


def bench_transactions(records: int) -> dict[str, Any]:
    values = [b"%08d" % i + bytes(RECORD_BYTES - 8) for i in range(records)]
    step = records // TURNS
    turns = [values[i * step : (i + 1) * step if i < TURNS - 1 else records] for i in range(TURNS)]
    with tempfile.TemporaryDirectory(prefix="kafka-lab-bench-") as tmp:
        ours = _TxnRun(Path(tmp) / "transactional", transactional=True)
        plain = _TxnRun(Path(tmp) / "plain", transactional=False)
        try:
            for values_of_turn in turns:
                ours.turn(values_of_turn)
                plain.turn(values_of_turn)
            ours.check(records)
            plain.check(records)
        finally:
            ours.cluster.close()
            plain.cluster.close()
    return {
        "bench": "transactions",
        "records": records,
        "records_per_transaction": TXN_RECORDS,
        "record_bytes": RECORD_BYTES,
        "replication_factor": 3,
        "records_per_s": round(records / ours.seconds),
        "transactions_per_s": round(records / TXN_RECORDS / ours.seconds, 1),
        "baseline": "same_records_idempotent_flushed_per_100",
        "baseline_records_per_s": round(records / plain.seconds),
        "ratio": round(plain.seconds / ours.seconds, 4),
        "target_ratio": 0.3,
    }


def main(quick: bool = False) -> None:
    _emit(bench_idempotent_produce(30_000 if quick else 300_000))
    _emit(bench_transactions(5_000 if quick else 50_000))
