"""The per-record producer API: ``producer.send()`` one record at a time, acks=all, replication factor 3.

``python -m lab.bench send [--quick]`` prints one JSON line:

- ``send``: 3 brokers, one topic with 3 partitions and replication factor 3 (min.insync.replicas 2),
  memory store, fast mode (no network delay). One producer with Kafka's defaults (acks=all,
  batch.size 16384, linger.ms 0) sends 100-byte records without keys, one ``send()`` each, keeping
  every future; the cluster runs after every 500 sends (in virtual time the producer's sender and
  the brokers work only while the cluster runs), and ``flush()`` waits for the last answers. The
  figure is acknowledged records per second of wall time, from the first send to the last answer.
  Afterwards (not timed) every future must hold its own offset and the acknowledgement ledger
  every record; reading a future's RecordMetadata is not timed (it is made when asked for, as in
  Kafka's client).
- Baseline: a plain Python loop taking the same records one at a time and writing them to three
  files in 500-record chunks. The machine may be shared, so the two are measured in turns, a
  fifth of the records at a time, and each figure sums its own turns.
- With them, what CPython's garbage collector took of the lab's turns: its collections per generation
  (young, middle, full) and the share of the lab's time spent in them (the futures the application
  keeps are Python objects it walks; the plain loop makes none).
"""

from __future__ import annotations

import gc
import json
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, BinaryIO

from lab.bench.replicate import FAST, RECORD_BYTES
from lab.engine.clients import FutureRecordMetadata
from lab.engine.cluster import Cluster

CHUNK = 500
TURNS = 5


def _emit(figure: dict[str, Any]) -> None:
    print(json.dumps(figure), flush=True)


def _values(records: int) -> list[bytes]:
    # Distinct records (a counter in each), the same bytes for the lab and for the baseline.
    return [b"%08d" % i + bytes(RECORD_BYTES - 8) for i in range(records)]


class _Sender:
    """The application: one send() per record, letting the cluster run after every CHUNK sends."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.producer = cluster.producer(acks="all")
        self.futures: list[FutureRecordMetadata] = []

    def send(self, values: list[bytes]) -> None:
        send, futures, cluster = self.producer.send, self.futures, self.cluster
        for i, value in enumerate(values, 1):
            futures.append(send("bench", value))
            if i % CHUNK == 0:
                cluster.run_for(0)


def _plain_loop(files: Sequence[BinaryIO], values: list[bytes]) -> None:
    chunk: list[bytes] = []
    for value in values:
        chunk.append(value)
        if len(chunk) == CHUNK:
            data = b"".join(chunk)
            for f in files:
                f.write(data)
            chunk = []
    if chunk:
        data = b"".join(chunk)
        for f in files:
            f.write(data)
    for f in files:
        f.flush()


class _Collector:
    """Time and collections of CPython's garbage collector while ``counting`` (gc.callbacks)."""

    def __init__(self) -> None:
        self.counting = False
        self.seconds = 0.0
        self.collections = [0, 0, 0]
        self._start = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if not self.counting:
            return
        if phase == "start":
            self._start = time.perf_counter()
        else:
            self.seconds += time.perf_counter() - self._start
            self.collections[info["generation"]] += 1


def bench_send(records: int) -> dict[str, Any]:
    values = _values(records)
    step = records // TURNS
    turns = [values[i * step : (i + 1) * step if i < TURNS - 1 else records] for i in range(TURNS)]
    ours = baseline = 0.0
    with tempfile.TemporaryDirectory(prefix="kafka-lab-bench-") as tmp:
        base = Path(tmp)
        cluster = Cluster.create(brokers=3, seed=1, config=FAST, data_dir=base / "cluster")
        files = [open(base / f"raw-{i}.log", "wb") for i in range(3)]  # noqa: SIM115
        collector = _Collector()
        gc.callbacks.append(collector)
        try:
            cluster.create_topic(
                "bench", partitions=3, replication_factor=3, config={"min.insync.replicas": "2"}
            )
            sender = _Sender(cluster)
            for i, values_of_turn in enumerate(turns):
                start = time.perf_counter()
                collector.counting = True
                sender.send(values_of_turn)
                if i == TURNS - 1:
                    assert sender.producer.flush(), "flush() timed out"
                collector.counting = False
                ours += time.perf_counter() - start
                start = time.perf_counter()
                _plain_loop(files, values_of_turn)
                baseline += time.perf_counter() - start
            # The same semantics as one record at a time: every future has its own offset.
            offsets = {(md.partition, md.offset) for md in (f.result() for f in sender.futures)}
            assert len(offsets) == records, "two records were told the same offset"
            assert cluster.ledger.count == records, "the ledger misses acknowledged records"
        finally:
            gc.callbacks.remove(collector)
            for f in files:
                f.close()
            cluster.close()
    return {
        "bench": "send",
        "records": records,
        "record_bytes": RECORD_BYTES,
        "replication_factor": 3,
        "acks": "all",
        "records_per_s": round(records / ours),
        "baseline": "python_loop_three_files_500_record_chunks",
        "baseline_records_per_s": round(records / baseline),
        "ratio": round(baseline / ours, 4),
        "target_ratio": 0.08,
        "gc_collections": collector.collections,
        "gc_share": round(collector.seconds / ours, 3),
    }


def main(quick: bool = False) -> None:
    _emit(bench_send(50_000 if quick else 500_000))
