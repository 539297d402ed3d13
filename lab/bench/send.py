"""The per-record producer API: ``producer.send()`` one record at a time, acks=all, replication factor 3.

``python -m lab.bench send [--quick]`` prints one JSON line:

- ``send``: 3 brokers, one topic with 3 partitions and replication factor 3 (min.insync.replicas 2),
  memory store, fast mode (no network delay). One producer with Kafka's defaults (acks=all,
  batch.size 16384, linger.ms 0) sends 100-byte records without keys, one ``send()`` each, keeping
  every future; the cluster runs after every 500 sends (in virtual time the producer's sender and
  the brokers work only while the cluster runs), and ``flush()`` waits for the last answers. The
  figure is acknowledged records per second of wall time, from the first send to the last
  answer; every future must have resolved to its offset and the acknowledgement ledger must hold
  every record. Baseline: a plain Python loop taking the same records one at a time and writing
  them to three files in 500-record chunks.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from typing import Any

from lab.bench.replicate import FAST, RECORD_BYTES
from lab.engine.cluster import Cluster

CHUNK = 500


def _emit(figure: dict[str, Any]) -> None:
    print(json.dumps(figure), flush=True)


def _values(records: int) -> list[bytes]:
    # Distinct records (a counter in each), the same bytes for the lab and for the baseline.
    return [b"%08d" % i + bytes(RECORD_BYTES - 8) for i in range(records)]


def _send_all(cluster: Cluster, values: list[bytes]) -> tuple[float, list[Any]]:
    producer = cluster.producer(acks="all")
    send = producer.send
    futures = []
    start = time.perf_counter()
    for i, value in enumerate(values, 1):
        futures.append(send("bench", value))
        if i % CHUNK == 0:
            cluster.run_for(0)
    assert producer.flush(), "flush() timed out"
    return time.perf_counter() - start, futures


def _raw_three_files(directory: Path, values: list[bytes]) -> float:
    files = [open(directory / f"raw-{i}.log", "wb") for i in range(3)]  # noqa: SIM115
    start = time.perf_counter()
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
    elapsed = time.perf_counter() - start
    for f in files:
        f.close()
    return elapsed


def bench_send(records: int) -> dict[str, Any]:
    values = _values(records)
    with tempfile.TemporaryDirectory(prefix="kafka-lab-bench-") as tmp:
        base = Path(tmp)
        cluster = Cluster.create(brokers=3, seed=1, config=FAST, data_dir=base / "cluster")
        try:
            cluster.create_topic(
                "bench", partitions=3, replication_factor=3, config={"min.insync.replicas": "2"}
            )
            elapsed, futures = _send_all(cluster, values)
            # The same semantics as one record at a time: every future has its own offset.
            offsets = {(md.partition, md.offset) for md in (f.result() for f in futures)}
            assert len(offsets) == records, "two records were told the same offset"
            assert cluster.ledger.count == records, "the ledger misses acknowledged records"
        finally:
            cluster.close()
        raw = _raw_three_files(base, values)
    ours = records / elapsed
    baseline = records / raw
    return {
        "bench": "send",
        "records": records,
        "record_bytes": RECORD_BYTES,
        "replication_factor": 3,
        "acks": "all",
        "records_per_s": round(ours),
        "baseline": "python_loop_three_files_500_record_chunks",
        "baseline_records_per_s": round(baseline),
        "ratio": round(ours / baseline, 4),
        "target_ratio": 0.08,
    }


def main(quick: bool = False) -> None:
    _emit(bench_send(50_000 if quick else 500_000))
