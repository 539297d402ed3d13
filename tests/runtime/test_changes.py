"""The change key: whenever anything a frame is drawn from changed, the key changed too.

A busy cluster (a producer, a consumer group, brokers killed, restarted, paused, isolated, a topic
made and its config changed) is stepped in virtual time; after every step the snapshot the frame
would be built from is compared with the one before, time aside. A snapshot that moved with a key
that did not is a frame the page would never get.

The tree key is checked the same way against the ZooKeeper tree the store holds: a tree that moved with
a tree key that did not is a write the page's ZooKeeper view would show 30 s late.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lab.engine.cluster import Cluster
from lab.engine.invariants import InvariantChecker
from lab.runtime.changes import state_key, tree_key
from lab.runtime.spec import ClientSpec

STEP_MS = 50


def _drawn(snapshot: dict[str, Any]) -> dict[str, Any]:
    """The snapshot as frames draw it: without the time, session countdowns in tenths of a second."""
    out = copy.deepcopy(snapshot)
    out.pop("time_ms", None)
    for broker in out.get("brokers", ()):
        for key in ("session_expires_in_ms", "previous_session_expires_in_ms"):
            if broker.get(key) is not None:
                broker[key] //= 100
    return out


def test_every_change_a_frame_draws_moves_the_key_and_a_quiet_cluster_does_not(tmp_path: Path) -> None:
    cluster = Cluster.create(
        brokers=3, seed=7, data_dir=tmp_path, config={"zookeeper.session.timeout.ms": "3000"}
    )
    InvariantChecker.attach(cluster, check_durability=False)  # brokers are killed with acks=all records
    cluster.create_topic("orders", partitions=3, replication_factor=3)
    cluster.run_for(3000)

    # Quiet: the clock runs, nothing a frame draws moves, neither does the key.
    key = state_key(cluster)
    for _ in range(100):
        cluster.run_for(STEP_MS)
        assert state_key(cluster) == key

    script: dict[int, Callable[[], object]] = {
        0: lambda: ClientSpec(
            kind="producer", name="load", topics=("orders",), rate_per_s=20, acks="all"
        ).start(cluster),
        20: lambda: ClientSpec(kind="consumer", name="reader", topics=("orders",), group="g").start(cluster),
        100: lambda: cluster.kill_broker(2),
        180: lambda: cluster.restart_broker(2),
        260: lambda: cluster.pause_broker(3),
        300: lambda: cluster.resume_broker(3),
        340: lambda: cluster.isolate_broker(1),
        400: lambda: cluster.heal(1),
        440: lambda: cluster.create_topic("audit", partitions=1, replication_factor=2),
        460: lambda: cluster.alter_topic_config("audit", {"retention.ms": "60000"}),
    }
    before, key = _drawn(cluster.snapshot()), state_key(cluster)
    moved = 0
    for step in range(520):
        action = script.get(step)
        if action is not None:
            action()
        cluster.run_for(STEP_MS)
        now, now_key = _drawn(cluster.snapshot()), state_key(cluster)
        if now != before:
            moved += 1
            changed = sorted(k for k in now if now[k] != before.get(k))
            assert now_key != key, f"step {step}: {changed} changed, the key did not"
        before, key = now, now_key
    assert moved > 100  # the run was busy: the check above was asked many times


def test_every_write_to_zookeeper_moves_the_tree_key_and_records_do_not(tmp_path: Path) -> None:
    cluster = Cluster.create(
        brokers=3, seed=11, data_dir=tmp_path, config={"zookeeper.session.timeout.ms": "3000"}
    )
    InvariantChecker.attach(cluster, check_durability=False)
    cluster.create_topic("orders", partitions=3, replication_factor=3)
    ClientSpec(kind="producer", name="load", topics=("orders",), rate_per_s=5, acks="all").start(cluster)
    for n in (1, 2):
        ClientSpec(kind="consumer", name=f"billing-{n}", topics=("orders",), group="billing").start(cluster)
    cluster.run_for(10_000)

    # Records flow (offsets, counters, messages in flight: the frame's key moves), ZooKeeper is still.
    tree, key, frame_key = cluster.zookeeper_tree(), tree_key(cluster), state_key(cluster)
    frames_moved = 0
    for _ in range(60):
        cluster.run_for(250)
        frames_moved += state_key(cluster) != frame_key
        frame_key = state_key(cluster)
        assert tree_key(cluster) == key
    assert cluster.zookeeper_tree() == tree
    assert frames_moved > 30  # the records did move what frames draw

    script: dict[int, Callable[[], object]] = {
        0: lambda: cluster.kill_broker(2),
        12: lambda: cluster.restart_broker(2),
        30: lambda: cluster.pause_broker(3),  # its session expires at the server: ephemerals go
        60: lambda: cluster.resume_broker(3),
        80: lambda: cluster.create_topic("audit", partitions=1, replication_factor=2),
        90: lambda: cluster.alter_topic_config("audit", {"retention.ms": "60000"}),
        100: lambda: ClientSpec(kind="consumer", name="audit-1", topics=("audit",), group="audit").start(
            cluster
        ),
    }
    moved = 0
    for step in range(130):
        action = script.get(step)
        if action is not None:
            action()
        cluster.run_for(STEP_MS * 4)
        now, now_key = cluster.zookeeper_tree(), tree_key(cluster)
        if now != tree:
            moved += 1
            changed = sorted(
                {n["path"] for n in now} ^ {n["path"] for n in tree}
                or {a["path"] for a, b in zip(now, tree, strict=False) if a != b}
            )
            assert now_key != key, f"step {step}: {changed[:5]} changed in ZooKeeper, the tree key did not"
        tree, key = now, now_key
    assert moved > 5  # the script wrote to ZooKeeper many times
