"""Real Kafka clients over loopback sockets, against the engine's in-process paths in the same run.

``python -m lab.bench wire [--quick]`` prints one JSON line per figure. The lab is served with
``lab.cluster.serve`` (3 brokers, memory store, fast mode: no network or ZooKeeper delay, the
clock at 1x) in this process; the clients run in a child process (``lab.bench._wire_clients``),
as an application would, so they do not share the lab's interpreter lock.

- ``wire_produce``: a confluent-kafka (librdkafka) producer, acks=all, linger.ms 5, sends 100-byte
  records to a topic of 3 partitions, replication factor 3, min.insync.replicas 2, with no
  Python callback per record (the lab checks afterwards that every record is in its logs).
  Figure: records per second from the first send to the last acknowledgement. Baseline: the
  same number of records in batches of the size librdkafka sent (counted in the leaders' logs),
  produced through the engine in process and in virtual time, up to 5 requests in flight per
  leader (the ``replicate`` bench's client), on a cluster of the same shape.
- ``wire_consume``: a kafka-python consumer group of 3 (threads of the child process) reads a
  6-partition, replication factor 3 topic loaded as the ``consume`` bench loads it. Figure:
  records per second from subscribe to the last offset of every partition read (records read
  twice across a rebalance are not counted twice). Baseline: the ``consume`` bench (3 of the
  engine's own group consumers, in process) on the same number of records, in the same run.
- ``wire_round_trip``: one record at a time, send then flush, with the confluent-kafka producer
  above: wall time until its acks=all acknowledgement (p50, p99). Baseline: the same record
  through the engine in process (virtual time, no sockets or threads). ``floor_*``: a bare echo
  over loopback through an asyncio thread and a driver thread, the shape the lab's listeners
  have, doing no work: what the machine itself costs at this moment.

The throughput figures say which side was busy (``client_cpu_s`` against ``lab_cpu_s``, over
``elapsed_s``), and every figure the machine's load: on a shared machine the tails move with it.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from lab.bench import consume
from lab.bench._wire_clients import TOPIC, WARMUP_TOPIC
from lab.bench.replicate import BATCH_RECORDS, FAST, IN_FLIGHT, RECORD_BYTES, _batch, _cluster, _Pipeline
from lab.cluster import ServedCluster, free_ports, serve
from lab.engine.cluster import Cluster
from lab.engine.ids import TopicPartition
from lab.engine.records import iter_batches
from lab.runtime.spec import TopicSpec

# The group's first rebalance waits for nobody: the in-process baseline waits in virtual time,
# where a second costs nothing, and this one would wait in wall time.
WIRE_CONFIG = {**FAST, "group.initial.rebalance.delay.ms": "0"}


def _emit(figure: dict[str, Any]) -> None:
    print(json.dumps(figure), flush=True)


def _cpu(result: dict[str, Any]) -> dict[str, Any]:
    """Which side was busy: the client's CPU while it was measured, the lab's over the client's run."""
    return {
        "elapsed_s": round(result["elapsed_s"], 3),
        "client_cpu_s": round(result["cpu_s"], 3),
        "lab_cpu_s": round(result["lab_cpu_s"], 3),
    }


def _machine() -> dict[str, Any]:
    return {"cpus": os.cpu_count(), "load_1m": round(os.getloadavg()[0], 2)}


@contextmanager
def _served(partitions: int) -> Iterator[ServedCluster]:
    topics = [
        TopicSpec(name=name, partitions=partitions, replication_factor=3, config={"min.insync.replicas": "2"})
        for name in (TOPIC, WARMUP_TOPIC)
    ]
    with (
        tempfile.TemporaryDirectory(prefix="kafka-lab-bench-") as tmp,
        serve(brokers=3, port=free_ports(3), data_dir=Path(tmp), topics=topics, config=WIRE_CONFIG) as served,
    ):
        yield served


def _in_child(client: str, **kwargs: Any) -> dict[str, Any]:
    """Run ``client(**kwargs)`` of ``lab.bench._wire_clients`` in a fresh Python process; its answer,
    with ``lab_cpu_s``: the CPU time this process (the lab's threads) used meanwhile."""
    cpu = time.process_time()
    done = subprocess.run(
        [sys.executable, "-m", "lab.bench._wire_clients", client, json.dumps(kwargs)],
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
    )
    if done.returncode != 0:
        raise RuntimeError(f"the {client} client failed:\n{done.stderr[-3000:]}")
    answer: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return {**answer, "lab_cpu_s": time.process_time() - cpu}


def _batches_in_logs(cluster: Cluster, topic: str, partitions: int) -> tuple[int, int]:
    """(batches, records) in each partition leader's log: how the client batched (driver thread)."""
    batches = records = 0
    for p in range(partitions):
        leader = cluster.leader_of(topic, p)
        assert leader is not None
        log = cluster.brokers[leader].partitions[TopicPartition(topic, p)].log
        offset = log.log_start_offset
        while offset < log.log_end_offset:
            before = offset
            for _, header in iter_batches(log.read(offset, 1 << 20).records):
                if header.base_offset >= offset:
                    batches += 1
                    records += header.record_count
                    offset = header.base_offset + header.last_offset_delta + 1
            if offset == before:
                raise RuntimeError(f"{topic}-{p} could not be read past offset {offset}")
    return batches, records


def _in_process_produce(records: int, batch_records: int) -> float:
    """Records per second through the engine's produce path, in process (the replicate bench's client)."""
    batches = max(1, records // batch_records)
    with tempfile.TemporaryDirectory(prefix="kafka-lab-bench-") as tmp:
        cluster = _cluster(Path(tmp))
        try:
            pipeline = _Pipeline(cluster, _batch(batch_records), batch_records)
            elapsed = pipeline.run(batches)
            assert pipeline.errors == 0, f"{pipeline.errors} produce requests failed"
            return pipeline.acked_batches * batch_records / elapsed
        finally:
            cluster.close()


def bench_produce(records: int) -> dict[str, Any]:
    with _served(partitions=3) as served:
        result = _in_child("produce_confluent", bootstrap=served.bootstrap_servers, records=records)
        batches, stored = served.lab.submit(lambda lab: _batches_in_logs(lab.cluster, TOPIC, 3)).result(60)
    if result["undelivered"] or stored != records:
        raise RuntimeError(f"{records} records sent, {result['undelivered']} undelivered, {stored} stored")
    ours = records / result["elapsed_s"]
    batch_records = max(1, round(stored / batches))
    baseline = _in_process_produce(records, batch_records)
    return {
        "bench": "wire_produce",
        "client": "confluent-kafka",
        "records": records,
        "stored": stored,
        "record_bytes": RECORD_BYTES,
        "acks": "all",
        "linger_ms": 5,
        "replication_factor": 3,
        "mean_batch_records": batch_records,
        "records_per_s": round(ours),
        **_cpu(result),
        "baseline": "engine_in_process_same_batches",
        "baseline_in_flight_per_leader": IN_FLIGHT,
        "baseline_records_per_s": round(baseline),
        "ratio": round(ours / baseline, 3),
        "target_ratio": 0.25,
        **_machine(),
    }


def bench_consume(records: int) -> dict[str, Any]:
    partitions = consume.PARTITIONS
    batches = records // BATCH_RECORDS
    ends = {
        p: (batches // partitions + (1 if p < batches % partitions else 0)) * BATCH_RECORDS
        for p in range(partitions)
    }
    with _served(partitions=partitions) as served:
        served.lab.submit(
            lambda lab: consume._load(lab.cluster, TOPIC, partitions, batches, _batch())
        ).result(600)
        result = _in_child(
            "group_kafka_python", bootstrap=served.bootstrap_servers, ends=ends, members=3, timeout_s=600
        )
    ours = records / result["elapsed_s"]
    baseline = consume.bench_consume(records)
    return {
        "bench": "wire_consume",
        "client": "kafka-python",
        "records": records,
        "records_read": result["read"],
        "record_bytes": RECORD_BYTES,
        "partitions": partitions,
        "consumers": 3,
        "first_record_s": round(result["first_record_s"], 3),
        "records_per_s": round(ours),
        **_cpu(result),
        "baseline": "consume_bench_in_process",
        "baseline_records_per_s": baseline["records_per_s"],
        "ratio": round(ours / baseline["records_per_s"], 3),
        "target_ratio": 0.25,
        **_machine(),
    }


def _in_process_round_trips(samples: int) -> list[float]:
    with tempfile.TemporaryDirectory(prefix="kafka-lab-bench-") as tmp:
        cluster = _cluster(Path(tmp))
        try:
            pipeline = _Pipeline(cluster, _batch(1), 1)
            pipeline.target = 0  # one at a time: no follow-up sends
            latencies = []
            for i in range(samples + 20):
                before = pipeline.acked_batches
                start = time.perf_counter()
                pipeline.send(i % 3)
                cluster.run_until_true(lambda b=before: pipeline.acked_batches > b, 1_000_000)  # type: ignore[misc]
                if i >= 20:
                    latencies.append((time.perf_counter() - start) * 1000)
            return latencies
        finally:
            cluster.close()


class _EchoServer:
    """Bytes read on an asyncio loop thread, handed to a second thread, written back from the loop."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.inbox: deque[Callable[[], object]] = deque()
        self.cond = threading.Condition()
        self.stopping = False
        threading.Thread(target=self.loop.run_forever, daemon=True).start()
        threading.Thread(target=self._driver, daemon=True).start()
        server = asyncio.run_coroutine_threadsafe(
            self.loop.create_server(self._protocol, "127.0.0.1", 0), self.loop
        ).result(10)
        self.server = server
        self.port = server.sockets[0].getsockname()[1]

    def _protocol(self) -> asyncio.Protocol:
        echo = self

        class Echo(asyncio.Protocol):
            def connection_made(self, transport: asyncio.BaseTransport) -> None:
                assert isinstance(transport, asyncio.Transport)
                self.transport = transport

            def data_received(self, data: bytes) -> None:
                echo.post(lambda: echo.loop.call_soon_threadsafe(self.transport.write, data))

        return Echo()

    def post(self, fn: Callable[[], object]) -> None:
        with self.cond:
            self.inbox.append(fn)
            self.cond.notify_all()

    def _driver(self) -> None:
        while True:
            with self.cond:
                while not self.inbox and not self.stopping:
                    self.cond.wait(0.02)
                if self.stopping:
                    return
                jobs = list(self.inbox)
                self.inbox.clear()
            for job in jobs:
                job()

    def close(self) -> None:
        with self.cond:
            self.stopping = True
            self.cond.notify_all()
        self.loop.call_soon_threadsafe(self.server.close)
        self.loop.call_soon_threadsafe(self.loop.stop)


def bench_round_trip(samples: int) -> dict[str, Any]:
    with _served(partitions=3) as served:
        latencies = _in_child("round_trips_confluent", bootstrap=served.bootstrap_servers, samples=samples)[
            "latencies_ms"
        ]
    echo = _EchoServer()
    try:
        floor = _in_child("round_trips_echo", port=echo.port, samples=samples)["latencies_ms"]
    finally:
        echo.close()
    engine = _in_process_round_trips(samples)
    p50, p99 = _percentiles(latencies)
    base50, base99 = _percentiles(engine)
    floor50, floor99 = _percentiles(floor)
    return {
        "bench": "wire_round_trip",
        "client": "confluent-kafka",
        "samples": samples,
        "acks": "all",
        "record_bytes": RECORD_BYTES,
        "clock_rate": 1,
        "network_latency_ms": 0,
        "p50_ms": round(p50, 3),
        "p99_ms": round(p99, 3),
        "target_p99_ms": 5,
        "baseline": "engine_in_process_one_record",
        "baseline_p50_ms": round(base50, 3),
        "baseline_p99_ms": round(base99, 3),
        "ratio": round(base50 / p50, 3),
        "floor": "loopback_echo_through_two_threads",
        "floor_p50_ms": round(floor50, 3),
        "floor_p99_ms": round(floor99, 3),
        **_machine(),
    }


def _percentiles(values: list[float]) -> tuple[float, float]:
    ordered = sorted(values)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def main(quick: bool = False) -> None:
    _emit(bench_produce(20_000 if quick else 1_000_000))
    _emit(bench_consume(60_000 if quick else 1_000_000))
    _emit(bench_round_trip(200 if quick else 2000))
