"""Debian's kcat (librdkafka's command-line client), unmodified, against a served 3-broker lab."""

from __future__ import annotations

import json
import shutil
import subprocess
from typing import Any

import pytest

from lab.cluster import ServedCluster
from tests.processes import wait_until

KCAT = shutil.which("kcat")
pytestmark = pytest.mark.kafka_lab(
    brokers=3,
    topics=["orders:3:3", "audit:2:2"],
    config={"zookeeper.session.timeout.ms": "1500", "min.insync.replicas": "2"},
)


def kcat(kafka_lab: ServedCluster, *args: str, stdin: str | None = None) -> str:
    assert KCAT is not None, "kcat is not installed: `make system-kcat` installs Debian's"
    done = subprocess.run(
        [KCAT, "-b", kafka_lab.bootstrap_servers, *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def as_kcat_lists(snapshot: dict[str, Any], brokers: dict[int, str]) -> dict[str, Any]:
    """What ``kcat -L -J`` should say, from the engine's snapshot: live brokers, every topic."""
    return {
        "controllerid": snapshot["controller"],
        "brokers": sorted((b["id"], brokers[b["id"]]) for b in snapshot["brokers"] if b["state"] == "alive"),
        "topics": {
            name: sorted((p["partition"], p["leader"], p["replicas"], p["isr"]) for p in topic["partitions"])
            for name, topic in snapshot["topics"].items()
        },
    }


def listed(kafka_lab: ServedCluster) -> dict[str, Any]:
    metadata = json.loads(kcat(kafka_lab, "-L", "-J"))
    assert not [t for t in metadata["topics"] if t.get("error")], metadata["topics"]
    return {
        "controllerid": metadata["controllerid"],
        "brokers": sorted((b["id"], b["name"]) for b in metadata["brokers"]),
        "topics": {
            t["topic"]: sorted(
                (
                    p["partition"],
                    p["leader"],
                    [r["id"] for r in p["replicas"]],
                    [r["id"] for r in p["isrs"]],
                )
                for p in t["partitions"]
            )
            for t in metadata["topics"]
        },
    }


def dead_broker_gone(kafka_lab: ServedCluster, victim: int) -> bool:
    """No partition is led by the dead broker or keeps it in its ISR, in the engine's view."""
    snapshot = kafka_lab.cluster.snapshot()
    return all(
        p["leader"] != victim and victim not in p["isr"]
        for topic in snapshot["topics"].values()
        for p in topic["partitions"]
    )


def lists_as_the_snapshot(kafka_lab: ServedCluster) -> tuple[bool, dict[str, Any], dict[str, Any]]:
    expected = as_kcat_lists(kafka_lab.cluster.snapshot(), kafka_lab.brokers)
    seen = listed(kafka_lab)
    return seen == expected, seen, expected


def test_kcat_lists_brokers_topics_leaders_and_isrs_as_the_snapshot_has_them(
    kafka_lab: ServedCluster,
) -> None:
    same, seen, expected = lists_as_the_snapshot(kafka_lab)
    assert set(expected["topics"]) >= {"orders", "audit"}
    assert same, (seen, expected)

    # A leader dies (it may be the controller too): once the engine has moved leaders and shrunk
    # ISRs, and the survivors have heard (Kafka's metadata is eventually consistent across
    # brokers too), kcat lists two brokers, the new leaders and ISRs, the new controller.
    victim = kafka_lab.cluster.leader_of("orders", 0)
    kafka_lab.cluster.kill_broker(victim)
    assert wait_until(lambda: dead_broker_gone(kafka_lab, victim), 30)
    assert wait_until(lambda: lists_as_the_snapshot(kafka_lab)[0], 30), lists_as_the_snapshot(kafka_lab)[1:]
    _, seen, _ = lists_as_the_snapshot(kafka_lab)
    assert victim not in dict(seen["brokers"])
    assert all(victim not in isr and leader != victim for _, leader, _, isr in seen["topics"]["orders"])


def test_kcat_produces_keyed_records_and_consumes_them_back(kafka_lab: ServedCluster) -> None:
    lines = [f"customer-{i % 3}:order {i}" for i in range(12)]
    kcat(kafka_lab, "-P", "-t", "orders", "-K", ":", "-X", "acks=all", stdin="\n".join(lines) + "\n")

    out = kcat(kafka_lab, "-C", "-t", "orders", "-o", "beginning", "-e", "-q", "-f", "%p|%k|%s\n")
    read = [tuple(line.split("|")) for line in out.splitlines()]
    assert sorted((k, v) for _, k, v in read) == sorted(tuple(line.split(":")) for line in lines)
    by_key = {k: {p for p, kk, _ in read if kk == k} for _, k, _ in read}
    assert all(len(partitions) == 1 for partitions in by_key.values())  # one key, one partition

    # The engine stored each where kcat read it.
    browsed = {
        (str(p), r["key"], r["value"])
        for p in range(3)
        for r in kafka_lab.cluster.browse("orders", p, limit=100)
    }
    assert browsed == set(read)
