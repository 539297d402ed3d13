"""The same engine on a real ZooKeeper: failover, ISR changes and controller loss, in real time."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from lab.engine.cluster import LAB_EPOCH_MS, Cluster
from lab.engine.errors import InconsistentClusterId, ZooKeeperNotAvailable
from lab.engine.invariants import InvariantChecker
from lab.engine.metadata.zookeeper import ZooKeeperStore
from lab.zookeeper_server import ManagedZooKeeper
from tests.engine.helpers import part, texts, values
from tests.processes import wait_until
from tests.zkoutage import HeldRestart, kill

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


def test_zookeeper_killed_and_back(tmp_path: Path) -> None:
    """While ZooKeeper is gone, brokers keep serving and what needs it is refused at once; when it is
    back, a session it still knows carries on and an expired one makes its broker register again."""
    held = HeldRestart()
    server = ManagedZooKeeper(tmp_path / "zookeeper", restart_backoff_s=(0.5, 2.0), report=held)
    server.start(timeout_s=60)
    config = {**FAST, "zookeeper.session.timeout.ms": "6000"}
    c = Cluster.create(brokers=4, seed=1, zookeeper=server.hosts, data_dir=tmp_path / "data", config=config)
    InvariantChecker.attach(c)
    try:
        c.create_topic("orders", assignment={0: [1, 2, 3]}, config={"min.insync.replicas": "2"})
        p = c.producer(acks="all")
        before = [p.send("orders", f"before-{i}") for i in range(5)]
        p.flush(timeout_ms=10_000)
        assert [f.result().offset for f in before] == [0, 1, 2, 3, 4]
        c.kill_broker(4)
        keeper = part(c, "orders", 0)["leader"]
        spare = next(b for b in (1, 2, 3) if b not in (keeper, c.controller_id()))

        kill(server)  # its restart waits for held.release()
        assert c.run_until_true(lambda: c.zookeeper_outage() is not None, 10_000)
        [down] = texts(c, "zookeeper_unreachable")
        assert down.startswith(f"ZooKeeper is not answering: the lab lost every connection to {server.hosts}")
        assert sorted(e.broker for e in c.events() if e.kind == "zk_disconnected") == [1, 2, 3]
        # Refused without waiting: the engine's clock did not move.
        now = c.now_ms
        with pytest.raises(
            ZooKeeperNotAvailable, match=r"^ZOOKEEPER_NOT_AVAILABLE: ZooKeeper is not answering"
        ):
            c.create_topic("later", partitions=1, replication_factor=3)
        with pytest.raises(ZooKeeperNotAvailable, match="broker 4 cannot start without it"):
            c.restart_broker(4)
        assert c.now_ms == now
        # The data path needs no ZooKeeper: acks=all is answered as long as the ISR holds.
        during = [p.send("orders", f"during-{i}") for i in range(5)]
        p.flush(timeout_ms=10_000)
        assert [f.result().offset for f in during] == [5, 6, 7, 8, 9]
        # Two brokers wait out the restart behind a cut link: one comes back while the server still
        # knows its session, the other only after the server has expired it.
        c.isolate_broker(keeper, from_="zookeeper")
        c.isolate_broker(spare, from_="zookeeper")

        held.release()
        assert wait_until(lambda: len(server.restarts) == 1, 90)  # serving again
        assert server.restarts[0].how == "was killed by SIGKILL"
        c.heal(keeper)
        assert c.run_until_true(lambda: c.zookeeper_outage() is None, 10_000)
        assert len(texts(c, "zookeeper_reachable")) == 1
        assert c.run_until_true(
            lambda: any(e.broker == keeper for e in c.events() if e.kind == "zk_reconnected"), 10_000
        )
        back = next(e.text for e in c.events() if e.kind == "zk_reconnected" and e.broker == keeper)
        assert f"is still alive, so /brokers/ids/{keeper} and its watches stand" in back

        # The spare's session expired on the restarted server: the controller takes it out of the ISR;
        # healed, it learns its session is gone and registers with a new one.
        c.wait_for(lambda: spare not in part(c, "orders", 0)["isr"], 20_000)
        c.heal(spare)
        c.wait_for(lambda: sorted(part(c, "orders", 0)["isr"]) == [1, 2, 3], 20_000)
        expired = next(e for e in c.events() if e.kind == "zk_session_expired" and e.broker == spare)
        assert any(
            e.kind == "broker_registered" and e.broker == spare and e.seq > expired.seq for e in c.events()
        )
        assert not any(e.kind == "zk_session_expired" and e.broker == keeper for e in c.events())

        c.restart_broker(4)
        c.create_topic("later", partitions=1, replication_factor=3)
        after = p.send("orders", "after")
        p.flush(timeout_ms=10_000)
        assert after.result().offset == 10
        leader = part(c, "orders", 0)["leader"]
        expected = [f"before-{i}".encode() for i in range(5)] + [f"during-{i}".encode() for i in range(5)]
        assert values(c, leader, "orders", 0) == [*expected, b"after"]
        assert c.lost_records() == {}
    finally:
        c.close()
        server.stop()


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
