"""The same engine on a real ZooKeeper: failover, ISR changes and controller loss, in real time."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from lab.engine.cluster import LAB_EPOCH_MS, Cluster
from lab.engine.errors import InconsistentClusterId
from lab.engine.invariants import InvariantChecker
from lab.engine.metadata.zookeeper import ZooKeeperStore
from tests.engine.helpers import part, texts, values

pytestmark = pytest.mark.zookeeper

FAST = {
    "zookeeper.session.timeout.ms": "1500",
    "replica.lag.time.max.ms": "2000",
    "lab.network.latency.ms": "1",
}


@pytest.fixture
def zk_cluster(zookeeper: str, tmp_path) -> Iterator[Cluster]:  # type: ignore[no-untyped-def]
    name = f"test-{uuid.uuid4().hex[:8]}"
    cluster = Cluster.create(
        brokers=3, seed=1, zookeeper=zookeeper, name=name, data_dir=tmp_path, config=FAST
    )
    InvariantChecker.attach(cluster)
    try:
        yield cluster
    finally:
        store = cluster.store
        cluster.close()
        assert isinstance(store, ZooKeeperStore)
        cleanup = ZooKeeperStore(zookeeper, chroot=f"/kafka-lab/{name}")
        cleanup.delete_chroot()
        cleanup.close()


def test_the_znodes_are_kafkas(zk_cluster: Cluster) -> None:
    c = zk_cluster
    c.create_topic("orders", partitions=2, replication_factor=3)
    tree = {n["path"]: n for n in c.zookeeper_tree()}
    assert tree["/brokers/ids/1"]["ephemeral"]
    assert tree["/controller"]["ephemeral"]
    assert '"partitions":{"0":[1,2,3],"1":[2,3,1]}' in tree["/brokers/topics/orders"]["data"]
    state = tree["/brokers/topics/orders/partitions/0/state"]["data"]
    assert '"leader":1' in state
    assert '"isr":[1,2,3]' in state
    assert tree["/controller_epoch"]["data"] == "1"
    assert tree["/controller_epoch"]["version"] == 1  # made at 0, set to 1 with /controller in one multi
    cluster_id = json.loads(tree["/cluster/id"]["data"])
    assert cluster_id["version"] == "1"
    for b in (1, 2, 3):
        meta = (c.brokers[b].log_dir / "meta.properties").read_text().splitlines()
        assert meta == ["version=0", f"broker.id={b}", f"cluster.id={cluster_id['id']}"]
    topic = json.loads(tree["/brokers/topics/orders"]["data"])
    assert topic["version"] == 3
    partition_metadata = (c.brokers[2].log_dir / "orders-1" / "partition.metadata").read_text()
    assert partition_metadata == f"version: 0\ntopic_id: {topic['topic_id']}"
    for path in ("/controller", "/brokers/ids/1"):
        stamp = json.loads(tree[path]["data"])["timestamp"]
        assert isinstance(stamp, str)
        assert LAB_EPOCH_MS <= int(stamp) <= LAB_EPOCH_MS + c.now_ms  # epoch milliseconds, as Kafka writes


def test_failover_on_zookeeper_session_expiry(zk_cluster: Cluster) -> None:
    c = zk_cluster
    c.create_topic("orders", partitions=3, replication_factor=3, config={"min.insync.replicas": "2"})
    p = c.producer(acks="all")
    for i in range(30):
        p.send("orders", f"v{i}", partition=0)
    p.flush(timeout_ms=10_000)
    c.kill_broker(1)  # leader of orders-0, and the controller
    c.wait_for(lambda: part(c, "orders", 0)["leader"] == 2, 10_000)
    assert part(c, "orders", 0)["isr"] == [2, 3]
    assert c.controller_id() in (2, 3)
    assert values(c, 2, "orders", 0) == [f"v{i}".encode() for i in range(30)]
    state = next(n for n in c.zookeeper_tree() if n["path"] == "/brokers/topics/orders/partitions/0/state")
    assert '"leader":2' in state["data"]
    assert '"leader_epoch":1' in state["data"]
    c.restart_broker(1)
    c.wait_for(lambda: sorted(part(c, "orders", 0)["isr"]) == [1, 2, 3], 15_000)
    assert c.lost_records() == {}


def test_isr_shrinks_and_expands_through_the_state_znode(zk_cluster: Cluster) -> None:
    c = zk_cluster
    c.create_topic("orders", replication_factor=3)
    c.isolate_broker(3, from_="brokers")
    p = c.producer(acks="1")
    p.send("orders", "x")
    p.flush(timeout_ms=5000)
    c.wait_for(lambda: part(c, "orders", 0)["isr"] == [1, 2], 10_000)
    assert texts(c, "isr_shrink")
    state = next(n for n in c.zookeeper_tree() if n["path"] == "/brokers/topics/orders/partitions/0/state")
    assert '"isr":[1,2]' in state["data"]
    c.heal(3)
    c.wait_for(lambda: part(c, "orders", 0)["isr"] == [1, 2, 3], 15_000)


def test_cutting_the_controller_off_zookeeper_moves_the_controller(zk_cluster: Cluster) -> None:
    c = zk_cluster
    c.create_topic("orders", replication_factor=3)
    epoch = c.snapshot()["controller_epoch"]
    old = c.controller_id()  # on a real server, whichever broker registered first
    assert old is not None
    c.isolate_broker(old, from_="zookeeper")
    c.wait_for(lambda: c.snapshot()["controller_epoch"] == epoch + 1, 10_000)
    assert c.snapshot()["controller"] != old
    c.wait_for(lambda: old not in part(c, "orders", 0)["isr"], 5000)
    assert any(f"controller failover, broker {old} not registered" in e.text for e in c.events())
    c.heal(old)
    c.wait_for(lambda: sorted(part(c, "orders", 0)["isr"]) == [1, 2, 3], 20_000)
    assert [b["controller"] for b in c.snapshot()["brokers"]].count(True) == 1


def test_log_directories_of_another_cluster_are_refused_as_kafka_refuses_them(
    zookeeper: str, tmp_path: Path
) -> None:
    # Same log directories, another ZooKeeper chroot: another cluster, as a wrong zookeeper.connect gives.
    names = [f"test-{uuid.uuid4().hex[:8]}" for _ in range(2)]
    try:
        first = Cluster.create(
            brokers=1, seed=1, zookeeper=zookeeper, name=names[0], data_dir=tmp_path, config=FAST
        )
        first.close(delete_data=False)
        with pytest.raises(InconsistentClusterId) as refused:
            Cluster.create(
                brokers=1, seed=1, zookeeper=zookeeper, name=names[1], data_dir=tmp_path, config=FAST
            )
        assert (
            "The broker is trying to join the wrong cluster. Configured zookeeper.connect may be wrong."
            in str(refused.value)
        )
    finally:
        for name in names:
            cleanup = ZooKeeperStore(zookeeper, chroot=f"/kafka-lab/{name}")
            cleanup.delete_chroot()
            cleanup.close()
