"""Small helpers for engine tests: a checked cluster and readable state."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from lab.engine.cluster import Cluster
from lab.engine.invariants import InvariantChecker


@contextmanager
def checked_cluster(
    brokers: int = 3, *, seed: int = 7, config: Mapping[str, object] | None = None, **kw: Any
) -> Iterator[Cluster]:
    """A memory-store cluster with every invariant checked after every event."""
    cluster = Cluster.create(brokers=brokers, seed=seed, config=config, **kw)
    InvariantChecker.attach(cluster)
    try:
        yield cluster
    finally:
        cluster.close()


def part(cluster: Cluster, topic: str, partition: int) -> dict[str, Any]:
    return cluster.partition_state(topic, partition)


def leo(cluster: Cluster, broker: int, topic: str, partition: int = 0) -> int:
    return cluster.brokers[broker].partitions[_tp(topic, partition)].log_end_offset


def hw(cluster: Cluster, broker: int, topic: str, partition: int = 0) -> int:
    return cluster.brokers[broker].partitions[_tp(topic, partition)].high_watermark


def _tp(topic: str, partition: int) -> Any:
    from lab.engine.ids import TopicPartition

    return TopicPartition(topic, partition)


def values(cluster: Cluster, broker: int, topic: str, partition: int = 0) -> list[bytes | None]:
    """Every record value in a replica's log, in offset order (read straight from its files)."""
    from lab.engine.records import iter_records

    log = cluster.brokers[broker].partitions[_tp(topic, partition)].log
    out: list[bytes | None] = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        data = log.read(offset, 1 << 20)
        out += [r.value for r in iter_records(data.records) if r.offset >= offset]
        offset = data.next_offset
    return out


def kinds(cluster: Cluster) -> list[str]:
    return [e.kind for e in cluster.events()]


def texts(cluster: Cluster, kind: str) -> list[str]:
    return [e.text for e in cluster.events() if e.kind == kind]
