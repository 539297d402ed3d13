"""Consumer groups: reading a topic through a group, and how long a rebalance takes.

``python -m lab.bench consume [--quick]`` prints one JSON line per figure:

- ``consume``: a group of 3 consumers reads 1,000,000 100-byte records from a 6-partition,
  replication factor 3 topic (memory store, fast mode), each record decoded into a
  ConsumerRecord as poll() returns it. Figure: records per second of wall time, from subscribe
  to the last record. Baselines in the same run: reading the same batches from plain files
  (``raw_file_read``, the issue's baseline), and reading them and decoding every record with the
  same decoder (``raw_file_read_decode``), which shows what the engine itself adds.
- ``rebalance``: a 10-member group over 100 partitions; one member crashes. Virtual and wall time
  until the group is Stable again, and how many partitions were revoked, eager (range) against
  cooperative-sticky.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from typing import Any

from lab.bench.replicate import BATCH_RECORDS, FAST, RECORD_BYTES, _batch
from lab.engine.cluster import Cluster
from lab.engine.groups import GroupState, coordinator_of
from lab.engine.ids import TopicPartition
from lab.engine.membership import GroupConsumer
from lab.engine.network import Endpoint
from lab.engine.protocol import ProduceRequest, ProduceResponse
from lab.engine.records import iter_records

PARTITIONS = 6


def _emit(figure: dict[str, Any]) -> None:
    print(json.dumps(figure), flush=True)


def _load(cluster: Cluster, topic: str, partitions: int, batches: int, batch: bytes) -> None:
    """Write prebuilt batches round the partitions, acks=1, many in flight."""
    endpoint = Endpoint(cluster.network, cluster.scheduler, "bench-loader", lambda env: None)
    done = [0]
    leaders = {p: cluster.leader_of(topic, p) for p in range(partitions)}
    for i in range(batches):
        tp = TopicPartition(topic, i % partitions)
        leader = leaders[tp.partition]
        assert leader is not None

        def answered(response: object, tp: TopicPartition = tp) -> None:
            assert isinstance(response, ProduceResponse), response
            assert response.partitions[tp].error is None, response
            done[0] += 1

        endpoint.request(
            leader,
            ProduceRequest(acks=1, timeout_ms=30_000, partitions={tp: batch}),
            answered,
            timeout_ms=60_000,
        )
        if i % 200 == 199:
            cluster.run_until_true(lambda n=i: done[0] > n - 100, 10_000_000)  # type: ignore[misc]
    cluster.run_until_true(lambda: done[0] == batches, 10_000_000)
    endpoint.close()


def bench_consume(records: int) -> dict[str, Any]:
    batch = _batch()
    batches = records // BATCH_RECORDS
    with tempfile.TemporaryDirectory(prefix="kafka-lab-bench-") as tmp:
        base = Path(tmp)
        cluster = Cluster.create(brokers=3, seed=1, config=FAST, data_dir=base / "cluster")
        try:
            cluster.create_topic("bench", partitions=PARTITIONS, replication_factor=3)
            _load(cluster, "bench", PARTITIONS, batches, batch)
            cluster.run_for(1000)  # followers catch up, HWs advance
            members = [
                cluster.consumer(group_id="bench", auto_offset_reset="earliest", enable_auto_commit="false")
                for _ in range(3)
            ]
            start = time.perf_counter()
            for member in members:
                member.subscribe(["bench"])
            read = 0
            while read < records:
                for member in members:
                    for r in member.poll(timeout_ms=10):
                        read += 1
                        _ = r.value
            elapsed = time.perf_counter() - start
            owned = sorted(tp.partition for m in members for tp in m.assignment())
            assert owned == list(range(PARTITIONS)), owned
            assert all(isinstance(m, GroupConsumer) and len(m.assignment()) == 2 for m in members)
        finally:
            cluster.close()
        paths = [base / f"raw-{p}.log" for p in range(PARTITIONS)]
        for i, path in enumerate(paths):
            path.write_bytes(batch * (batches // PARTITIONS + (1 if i < batches % PARTITIONS else 0)))
        start = time.perf_counter()
        total = 0
        for path in paths:
            with open(path, "rb") as f:
                while chunk := f.read(1 << 20):
                    total += len(chunk)
        raw = time.perf_counter() - start
        start = time.perf_counter()
        decoded = 0
        for path in paths:
            for rec in iter_records(path.read_bytes()):
                decoded += 1
                _ = rec.value
        raw_decode = time.perf_counter() - start
    ours = read / elapsed
    baseline = records / raw
    decode_baseline = decoded / raw_decode
    return {
        "bench": "consume",
        "records": read,
        "record_bytes": RECORD_BYTES,
        "partitions": PARTITIONS,
        "consumers": 3,
        "records_per_s": round(ours),
        "baseline": "raw_file_read",
        "baseline_records_per_s": round(baseline),
        "ratio": round(ours / baseline, 3),
        "decode_baseline": "raw_file_read_decode",
        "decode_baseline_records_per_s": round(decode_baseline),
        "ratio_vs_decode": round(ours / decode_baseline, 3),
    }


def bench_rebalance(strategy: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="kafka-lab-bench-") as tmp:
        cluster = Cluster.create(brokers=3, seed=1, config=FAST, data_dir=Path(tmp))
        try:
            cluster.create_topic("bench", partitions=100, replication_factor=3)
            config: dict[str, Any] = {
                "partition_assignment_strategy": strategy,
                "session_timeout_ms": 10_000,
                "heartbeat_interval_ms": 1000,
            }
            members: list[GroupConsumer] = [cluster.consumer("bench", **config) for _ in range(10)]
            for member in members:
                assert isinstance(member, GroupConsumer)
                member.subscribe(["bench"])
            cluster.wait_for(
                lambda: _stable(cluster, members, 10),
                120_000,
                "10 members to share the partitions",
            )
            revoked_before = sum(m.revoked_count for m in members if isinstance(m, GroupConsumer))
            victim = members.pop()
            assert isinstance(victim, GroupConsumer)
            virtual_start = cluster.now_ms
            wall_start = time.perf_counter()
            victim.crash()
            cluster.wait_for(
                lambda: _stable(cluster, members, 9), 300_000, "9 members to share the partitions"
            )
            virtual = cluster.now_ms - virtual_start
            wall = time.perf_counter() - wall_start
            revoked = sum(m.revoked_count for m in members if isinstance(m, GroupConsumer)) - revoked_before
            rebalances = [e for e in cluster.events() if e.kind == "rebalance"]
        finally:
            cluster.close()
    return {
        "bench": "rebalance",
        "assignor": strategy,
        "members": 10,
        "partitions": 100,
        "crash_to_stable_virtual_ms": virtual,
        "crash_to_stable_wall_ms": round(wall * 1000, 1),
        "partitions_revoked_by_survivors": revoked,
        "rebalances": len(rebalances) - 1,
        "session_timeout_ms": 10_000,
    }


def _stable(cluster: Cluster, members: list[Any], expected: int) -> bool:
    found = coordinator_of(cluster.brokers, "bench")
    if found is None or found[1].state is not GroupState.STABLE or len(found[1].members) != expected:
        return False
    owned = sorted(tp.partition for m in members for tp in m.assignment())
    return owned == list(range(100)) and all(m.state == "stable" for m in members)


def main(quick: bool = False) -> None:
    _emit(bench_consume(120_000 if quick else 1_000_000))
    for strategy in ("range", "cooperative-sticky"):
        result = bench_rebalance(strategy)
        _emit(result)
