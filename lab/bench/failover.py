"""Failover on a real ZooKeeper: 100 partitions led by one broker, whose session ends.

``python -m lab.bench failover [--quick]`` prints one JSON line:

- ``failover``: wall time from the leading broker's ZooKeeper session ending (it is closed, as
  when a process dies and the server expires it) to every partition having its new leader
  written in its state znode, read back from ZooKeeper to be sure. The controller batches its
  writes in ``multi`` calls fenced by /controller_epoch. Baseline in the same run: the same
  writes made one round trip per partition (read, then conditional set), as a naive
  controller would.
"""

from __future__ import annotations

import json
import os
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from lab.engine.cluster import Cluster
from lab.engine.metadata import paths
from lab.engine.metadata.zookeeper import ZooKeeperStore
from lab.zookeeper_server import ManagedZooKeeper

PARTITIONS = 100
CONFIG = {"zookeeper.session.timeout.ms": "6000", "lab.network.latency.ms": "0"}


def _emit(figure: dict[str, Any]) -> None:
    print(json.dumps(figure), flush=True)


def _one_failover(hosts: str, data_dir: Path) -> tuple[float, float]:
    name = f"bench-failover-{uuid.uuid4().hex[:8]}"
    cluster = Cluster.create(brokers=3, seed=1, zookeeper=hosts, name=name, data_dir=data_dir, config=CONFIG)
    try:
        controller = cluster.controller_id()
        assert controller is not None
        victim = next(b for b in cluster.broker_ids if b != controller)
        others = [b for b in cluster.broker_ids if b != victim]
        cluster.create_topic("bench", assignment={p: [victim, *others] for p in range(PARTITIONS)})
        broker = cluster.brokers[victim]
        session = broker.session
        assert session is not None
        start = time.perf_counter()
        session.close()  # the session ends now: its ephemeral goes, and the controller's watch fires
        broker.kill()
        cluster.wait_for(
            lambda: _all_written(cluster, victim), 30_000, "every partition to have a new leader"
        )
        elapsed = time.perf_counter() - start
        assert _read_back(hosts, name, victim), "ZooKeeper does not show the new leaders"
        baseline = _naive_writes(hosts, name)
        return elapsed, baseline
    finally:
        cluster.close()
        cleanup = ZooKeeperStore(hosts, chroot=f"/kafka-lab/{name}")
        cleanup.delete_chroot()
        cleanup.close()


def _all_written(cluster: Cluster, victim: int) -> bool:
    ctx = cluster.ctx.controller_context
    if ctx is None:
        return False
    states = [s for tp, s in ctx.states.items() if tp.topic == "bench"]
    return len(states) == PARTITIONS and all(s.leader not in (victim, -1) for s in states)


def _read_back(hosts: str, name: str, victim: int) -> bool:
    from kazoo.client import KazooClient

    client = KazooClient(hosts=f"{hosts}/kafka-lab/{name}")
    client.start(timeout=10)
    try:
        for p in range(PARTITIONS):
            data, _ = client.get(paths.partition_state_path("bench", p))
            if paths.decode_partition_state(data).leader in (victim, -1):
                return False
        return True
    finally:
        client.stop()
        client.close()


def _naive_writes(hosts: str, name: str) -> float:
    """The same state writes, one round trip (read + conditional set) per partition."""
    from kazoo.client import KazooClient

    client = KazooClient(hosts=f"{hosts}/kafka-lab/{name}")
    client.start(timeout=10)
    try:
        start = time.perf_counter()
        for p in range(PARTITIONS):
            path = paths.partition_state_path("bench", p)
            data, stat = client.get(path)
            state = paths.decode_partition_state(data)
            new = paths.PartitionState(
                leader=state.leader,
                leader_epoch=state.leader_epoch + 1,
                isr=state.isr,
                controller_epoch=state.controller_epoch,
            )
            client.set(path, paths.encode_partition_state(new), version=stat.version)
        return time.perf_counter() - start
    finally:
        client.stop()
        client.close()


def main(quick: bool = False) -> None:
    runs = 1 if quick else 5
    with tempfile.TemporaryDirectory(prefix="kafka-lab-bench-") as tmp:
        base = Path(tmp)
        server: ManagedZooKeeper | None = None
        hosts = os.environ.get("LAB_ZOOKEEPER", "").strip()
        if not hosts:
            server = ManagedZooKeeper(base / "zookeeper")
            hosts = server.start()
        try:
            results = [_one_failover(hosts, base / f"run-{i}") for i in range(runs)]
        finally:
            if server is not None:
                server.stop()
    ours = statistics.median(r[0] for r in results) * 1000
    naive = statistics.median(r[1] for r in results) * 1000
    _emit(
        {
            "bench": "failover",
            "partitions": PARTITIONS,
            "runs": runs,
            "store": "zookeeper",
            "failover_ms": round(ours, 1),
            "worst_ms": round(max(r[0] for r in results) * 1000, 1),
            "target_ms": 250,
            "baseline": "one_round_trip_per_partition",
            "baseline_ms": round(naive, 1),
            "ratio": round(naive / ours, 3),
        }
    )
