"""Produce throughput over a SASL_SSL listener against the PLAINTEXT one, in the same run.

``python -m lab.bench security [--quick]`` prints one JSON line. One lab (3 brokers, memory store,
fast mode, as the ``wire`` bench serves it) listens with PLAINTEXT and SASL_SSL; a confluent-kafka
producer in a child process (acks=all, linger.ms 5, 100-byte records, no callback per record) sends
the same number of records through each in turn, twice (PLAINTEXT, SASL_SSL, PLAINTEXT, SASL_SSL; each
side's best round counts): PLAINTEXT is the baseline, SASL_SSL logs in with SCRAM-SHA-512 and verifies
the lab's CA. Figure: records per second from the first send to the last
acknowledgement over SASL_SSL; the ratio to PLAINTEXT's is what TLS and authentication cost
(authentication once per connection; TLS on every byte, encrypted by the listeners' asyncio loop).
The lab checks afterwards that every record of both runs is in its logs.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from lab.bench._wire_clients import TOPIC, WARMUP_TOPIC
from lab.bench.replicate import RECORD_BYTES
from lab.bench.wire import WIRE_CONFIG, _batches_in_logs, _in_child
from lab.cluster import free_ports, serve
from lab.runtime.spec import TopicSpec

USER, PASSWORD = "bench", "bench-secret"
TARGET_RATIO = 0.5
ROUNDS = 2


def bench_produce(records: int) -> dict[str, Any]:
    topics = [
        TopicSpec(name=name, partitions=3, replication_factor=3, config={"min.insync.replicas": "2"})
        for name in (TOPIC, WARMUP_TOPIC)
    ]
    with (
        tempfile.TemporaryDirectory(prefix="kafka-lab-bench-") as tmp,
        serve(
            brokers=3,
            port=free_ports(6),
            data_dir=Path(tmp),
            topics=topics,
            config=WIRE_CONFIG,
            listeners=["SASL_SSL"],
            users={USER: PASSWORD},
        ) as served,
    ):
        secured_config = {
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.username": USER,
            "sasl.password": PASSWORD,
            "ssl.ca.location": served.ca_file,
        }
        runs: dict[str, list[dict[str, Any]]] = {"plain": [], "secured": []}
        for _ in range(ROUNDS):  # in turn, so neither has the lab's first-time costs alone
            runs["plain"].append(
                _in_child("produce_confluent", bootstrap=served.bootstrap_servers, records=records)
            )
            runs["secured"].append(
                _in_child(
                    "produce_confluent",
                    bootstrap=served.bootstrap("SASL_SSL"),
                    records=records,
                    config=secured_config,
                )
            )
        _, stored = served.lab.submit(lambda lab: _batches_in_logs(lab.cluster, TOPIC, 3)).result(60)
    undelivered = sum(r["undelivered"] for found in runs.values() for r in found)
    if undelivered or stored != 2 * ROUNDS * records:
        raise RuntimeError(
            f"{2 * ROUNDS} x {records} records sent, {undelivered} undelivered, {stored} stored"
        )
    plain = min(runs["plain"], key=lambda r: r["elapsed_s"])  # each side's best round
    secured = min(runs["secured"], key=lambda r: r["elapsed_s"])
    ours = records / secured["elapsed_s"]
    baseline = records / plain["elapsed_s"]
    return {
        "bench": "security_produce",
        "client": "confluent-kafka",
        "listener": "SASL_SSL",
        "mechanism": "SCRAM-SHA-512",
        "records": records,
        "rounds": ROUNDS,
        "record_bytes": RECORD_BYTES,
        "acks": "all",
        "linger_ms": 5,
        "replication_factor": 3,
        "records_per_s": round(ours),
        "elapsed_s": round(secured["elapsed_s"], 3),
        "client_cpu_s": round(secured["cpu_s"], 3),
        "lab_cpu_s": round(secured["lab_cpu_s"], 3),
        "baseline": "plaintext_listener_same_run",
        "baseline_records_per_s": round(baseline),
        "baseline_lab_cpu_s": round(plain["lab_cpu_s"], 3),
        "ratio": round(ours / baseline, 3),
        "target_ratio": TARGET_RATIO,
        "cpus": os.cpu_count(),
        "load_1m": round(os.getloadavg()[0], 2),
    }


def main(quick: bool = False) -> None:
    print(json.dumps(bench_produce(20_000 if quick else 300_000)), flush=True)
