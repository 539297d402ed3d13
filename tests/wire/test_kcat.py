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


def test_a_kcat_group_of_two_reads_every_acknowledged_record_through_a_leader_kill(
    kafka_lab: ServedCluster, tmp_path: Any
) -> None:
    # Two balanced consumers (`kcat -G`, committing as librdkafka does), then 10,000 records with
    # acks=all in two runs of kcat -P, the leader of orders-0 killed between them.
    assert KCAT is not None, "kcat is not installed: `make system-kcat` installs Debian's"
    outputs = [tmp_path / f"member-{i}.txt" for i in (0, 1)]
    members = [
        subprocess.Popen(
            [
                KCAT,
                "-u",  # unbuffered: each record reaches the file as it is read
                "-b",
                kafka_lab.bootstrap_servers,
                "-G",
                "shipping",
                "-o",
                "beginning",
                "-X",
                "auto.commit.interval.ms=200",
                "-f",
                "%s\n",
                "orders",
            ],
            stdout=out.open("w"),
            stderr=subprocess.DEVNULL,
        )
        for out in outputs
    ]
    try:

        def shared() -> bool:
            group = kafka_lab.cluster.groups().get("shipping", {})
            return group.get("state") == "Stable" and len(group.get("members", [])) == 2

        assert wait_until(shared, 60), kafka_lab.cluster.groups().get("shipping")
        values = [f"order-{i:05d}" for i in range(10_000)]
        # Keyed, so the records hash over all three partitions and both members read some:
        # librdkafka's sticky partitioner can put a whole keyless run on one member's partitions.
        lines = [f"{value}:{value}" for value in values]
        kcat(
            kafka_lab,
            "-P",
            "-t",
            "orders",
            "-K",
            ":",
            "-X",
            "acks=all",
            stdin="\n".join(lines[:3_000]) + "\n",
        )
        victim = kafka_lab.cluster.leader_of("orders", 0)
        assert victim is not None
        kafka_lab.cluster.kill_broker(victim)
        # kcat exits 0 only when every message was delivered (acknowledged by the ISR).
        kcat(
            kafka_lab,
            "-P",
            "-t",
            "orders",
            "-K",
            ":",
            "-X",
            "acks=all",
            stdin="\n".join(lines[3_000:]) + "\n",
        )
        assert victim not in {kafka_lab.cluster.leader_of("orders", p) for p in range(3)}

        def read() -> set[str]:
            return {line for out in outputs for line in out.read_text().splitlines()}

        assert wait_until(lambda: set(values) <= read(), 90), len(set(values) - read())

        def committed_ends() -> bool:
            group = kafka_lab.cluster.groups().get("shipping", {})
            state = {p: kafka_lab.cluster.partition_state("orders", p) for p in range(3)}
            ends = {f"orders/{p}": s["logs"][str(s["leader"])]["high_watermark"] for p, s in state.items()}
            return group.get("committed") == ends

        assert wait_until(committed_ends, 30), (
            kafka_lab.cluster.groups().get("shipping", {}).get("committed"),
            [kafka_lab.cluster.partition_state("orders", p)["leader"] for p in range(3)],
            victim,
            kafka_lab.cluster.groups().get("shipping", {}).get("coordinator"),
            [e.text for e in kafka_lab.cluster.events()][-12:],
        )
    finally:
        for member in members:
            member.terminate()
        for member in members:
            member.wait(30)
    assert all(out.read_text() for out in outputs), "both members read records"
