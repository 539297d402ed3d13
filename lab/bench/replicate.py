"""Three-way replication with acks=all, against appending the same batches to three plain files.

``python -m lab.bench replicate [--quick]`` prints one JSON line per figure:

- ``replicate``: 3 brokers, one topic with 3 partitions and replication factor 3, acks=all,
  100-byte records in prebuilt 500-record batches, memory store, fast mode (followers long-poll,
  no network delay). A client keeps up to 5 produce requests in flight per leader, as Kafka's
  max.in.flight.requests.per.connection allows; the figure is acknowledged records per second of
  wall time. Baseline: plain Python appending the same batches to three files.
- ``ack_latency``: one batch in flight at a time: wall time from sending it to its acks=all answer
  (p50, p99). Baseline: appending one batch to three plain files.
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from lab.engine.cluster import Cluster
from lab.engine.ids import TopicPartition
from lab.engine.network import Endpoint
from lab.engine.protocol import ProduceRequest, ProduceResponse
from lab.engine.records import build_batch

RECORD_BYTES = 100
BATCH_RECORDS = 500
IN_FLIGHT = 5
FAST = {
    "lab.network.latency.ms": "0",
    "lab.zookeeper.latency.ms": "0",
    "log.retention.check.interval.ms": "3600000",
}


def _emit(figure: dict[str, Any]) -> None:
    print(json.dumps(figure), flush=True)


def _batch(records: int = BATCH_RECORDS) -> bytes:
    return build_batch([(None, bytes(range(RECORD_BYTES)))] * records, timestamp_ms=1_700_000_000_000)


def _cluster(data_dir: Path) -> Cluster:
    cluster = Cluster.create(brokers=3, seed=1, config=FAST, data_dir=data_dir)
    cluster.create_topic("bench", partitions=3, replication_factor=3, config={"min.insync.replicas": "2"})
    return cluster


class _Pipeline:
    """A bare client: prebuilt batches straight to each partition's leader, up to IN_FLIGHT a leader."""

    def __init__(self, cluster: Cluster, batch: bytes, batch_records: int = BATCH_RECORDS) -> None:
        self.cluster = cluster
        self.batch = batch
        self.batch_records = batch_records
        self.endpoint = Endpoint(cluster.network, cluster.scheduler, "bench-client", lambda env: None)
        self.leaders = {p: cluster.leader_of("bench", p) for p in range(3)}
        self.acked_batches = 0
        self.errors = 0
        self.sent = 0

    def send(self, partition: int) -> None:
        leader = self.leaders[partition]
        assert leader is not None
        tp = TopicPartition("bench", partition)
        request = ProduceRequest(
            acks=-1, timeout_ms=30_000, partitions={tp: self.batch}, records=self.batch_records
        )
        self.sent += 1
        self.endpoint.request(leader, request, lambda r: self._answered(partition, tp, r), timeout_ms=30_000)

    def _answered(self, partition: int, tp: TopicPartition, response: object) -> None:
        if isinstance(response, ProduceResponse) and response.partitions[tp].error is None:
            self.acked_batches += 1
        else:
            self.errors += 1
        if self.sent < self.target:
            self.send(partition)

    def run(self, batches: int) -> float:
        self.target = batches
        start = time.perf_counter()
        for partition in range(3):
            for _ in range(IN_FLIGHT):
                if self.sent < batches:
                    self.send(partition)
        self.cluster.run_until_true(lambda: self.acked_batches + self.errors >= batches, 10_000_000)
        return time.perf_counter() - start


def _raw_three_files(directory: Path, batch: bytes, batches: int) -> float:
    files = [open(directory / f"raw-{i}.log", "wb") for i in range(3)]  # noqa: SIM115
    start = time.perf_counter()
    for _ in range(batches):
        for f in files:
            f.write(batch)
    elapsed = time.perf_counter() - start
    for f in files:
        f.close()
    return elapsed


def bench_replicate(records: int) -> dict[str, Any]:
    batch = _batch()
    batches = records // BATCH_RECORDS
    with tempfile.TemporaryDirectory(prefix="kafka-lab-bench-") as tmp:
        base = Path(tmp)
        cluster = _cluster(base / "cluster")
        try:
            pipeline = _Pipeline(cluster, batch)
            elapsed = pipeline.run(batches)
            assert pipeline.errors == 0, f"{pipeline.errors} produce requests failed"
            acked = pipeline.acked_batches * BATCH_RECORDS
        finally:
            cluster.close()
        raw = _raw_three_files(base, batch, batches)
    ours = acked / elapsed
    baseline = records / raw
    return {
        "bench": "replicate",
        "records": acked,
        "record_bytes": RECORD_BYTES,
        "batch": BATCH_RECORDS,
        "replication_factor": 3,
        "acks": "all",
        "records_per_s": round(ours),
        "baseline": "raw_append_three_files",
        "baseline_records_per_s": round(baseline),
        "ratio": round(ours / baseline, 3),
    }


def bench_ack_latency(samples: int) -> dict[str, Any]:
    batch = _batch()
    with tempfile.TemporaryDirectory(prefix="kafka-lab-bench-") as tmp:
        base = Path(tmp)
        cluster = _cluster(base / "cluster")
        try:
            pipeline = _Pipeline(cluster, batch)
            latencies = []
            for i in range(samples + 20):
                before = pipeline.acked_batches
                pipeline.target = 0  # one at a time: no follow-up sends
                start = time.perf_counter()
                pipeline.send(i % 3)
                cluster.run_until_true(lambda b=before: pipeline.acked_batches > b, 1_000_000)  # type: ignore[misc]
                if i >= 20:  # warm-up first
                    latencies.append((time.perf_counter() - start) * 1000)
        finally:
            cluster.close()
        raw = []
        files = [open(base / f"raw-{i}.log", "wb") for i in range(3)]  # noqa: SIM115
        for _ in range(samples):
            start = time.perf_counter()
            for f in files:
                f.write(batch)
            raw.append((time.perf_counter() - start) * 1000)
        for f in files:
            f.close()
    p50, p99 = _percentiles(latencies)
    raw50, raw99 = _percentiles(raw)
    return {
        "bench": "ack_latency",
        "samples": samples,
        "acks": "all",
        "batch": BATCH_RECORDS,
        "p50_ms": round(p50, 3),
        "p99_ms": round(p99, 3),
        "target_p99_ms": 2,
        "baseline": "raw_append_three_files",
        "baseline_p50_ms": round(raw50, 4),
        "baseline_p99_ms": round(raw99, 4),
        "ratio": round(raw50 / p50, 4),
    }


def _percentiles(values: list[float]) -> tuple[float, float]:
    ordered = sorted(values)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def main(quick: bool = False) -> None:
    _emit(bench_replicate(100_000 if quick else 1_000_000))
    _emit(bench_ack_latency(200 if quick else 2000))
