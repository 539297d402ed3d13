"""Checks on a lab a real client used (the ``kafka_lab`` fixture's), shared by the clients' test modules."""

from __future__ import annotations

from lab.cluster import ServedCluster
from tests.processes import wait_until


def logged_values(
    kafka_lab: ServedCluster, topic: str = "orders", partitions: int = 3
) -> dict[int, list[str]]:
    """Each partition's records as its leader holds them, in offset order."""
    return {
        p: [r["value"] for r in kafka_lab.cluster.browse(topic, p, limit=10_000)] for p in range(partitions)
    }


def assert_written_once_in_order(kafka_lab: ServedCluster, acked: list[bytes]) -> None:
    """What an idempotent producer promises: every acknowledged record in the log once, each partition in
    the order they were sent, all from one producer id (InitProducerId's) on every replica."""
    assert wait_until(lambda: sum(len(v) for v in logged_values(kafka_lab).values()) >= len(acked), 60)
    logs = logged_values(kafka_lab)
    every = [v for values in logs.values() for v in values]
    assert len(every) == len(set(every)) == len(acked)  # no retry wrote a record twice
    assert set(every) == {v.decode() for v in acked}
    for values in logs.values():
        assert values == sorted(values)  # each partition in the order the records were sent
    producers = {
        p["producer_id"]
        for part in kafka_lab.cluster.snapshot()["topics"]["orders"]["partitions"]
        for log in part["logs"].values()
        for p in log["producers"]
    }
    assert len(producers) == 1
