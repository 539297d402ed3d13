"""A broker's authorizer cache (lab/engine/authorizer.py): loaded when the broker starts, kept current
by Kafka's change notifications, on the memory store and on a real ZooKeeper."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from lab.engine.acl import AclFilter, parse_binding
from lab.engine.cluster import Cluster
from lab.engine.errors import TopicAuthorizationFailed
from lab.engine.metadata.zookeeper import ZooKeeperStore

AUTHORIZER = {
    "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
    "zookeeper.session.timeout.ms": "1500",
    "lab.network.latency.ms": "1",
}
ALICE_WRITES = parse_binding(resource_type="topic", name="orders", principal="User:alice", operation="write")


@pytest.fixture(params=["memory", "zookeeper"])
def make(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[object]:
    made: list[tuple[Cluster, str | None]] = []
    hosts = request.getfixturevalue("zookeeper") if request.param == "zookeeper" else None

    def build(data_dir: Path = tmp_path / "data") -> Cluster:
        if hosts is None:
            cluster = Cluster.create(brokers=2, seed=3, config=AUTHORIZER, data_dir=data_dir)
            made.append((cluster, None))
        else:
            name = made[0][1] if made else f"test-{uuid.uuid4().hex[:8]}"
            cluster = Cluster.create(
                brokers=2, seed=3, zookeeper=hosts, name=name, data_dir=data_dir, config=AUTHORIZER
            )
            made.append((cluster, name))
        return cluster

    yield build
    for cluster, _ in made:
        cluster.close()
    if hosts is not None and made:
        cleanup = ZooKeeperStore(hosts, chroot=f"/kafka-lab/{made[0][1]}")
        cleanup.delete_chroot()
        cleanup.close()


def test_acls_reach_every_broker_through_the_change_notifications(make) -> None:  # type: ignore[no-untyped-def]
    c: Cluster = make()
    c.create_topic("orders", partitions=1, replication_factor=2)
    c.create_acls([ALICE_WRITES])
    assert c.describe_acls() == [ALICE_WRITES]
    c.wait_for(lambda: c.acls_taken_in([ALICE_WRITES]), 10_000, "the brokers to read the ACL")
    f = c.producer(principal="User:alice").send("orders", value=b"v")
    c.wait_for(f.done, 10_000, "the answer")
    assert f.result().offset == 0
    # The znodes are Kafka's, and each change announced.
    tree = {n["path"]: n for n in c.zookeeper_tree()}
    assert '"principal":"User:alice"' in tree["/kafka-acl/Topic/orders"]["data"]
    assert any(p.startswith("/kafka-acl-changes/acl_changes_") for p in tree)
    c.delete_acls([AclFilter(principal="User:alice")])
    c.wait_for(lambda: c.acls_taken_in([]), 10_000, "the brokers to drop the ACL")
    g = c.producer(principal="User:alice").send("orders", value=b"w")
    c.wait_for(g.done, 10_000, "the answer")
    with pytest.raises(TopicAuthorizationFailed):
        g.result()


def test_a_broker_loads_every_acl_when_it_starts(make, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    c: Cluster = make()
    c.create_topic("orders", partitions=1, replication_factor=2)
    c.create_acls([ALICE_WRITES])
    c.wait_for(lambda: c.acls_taken_in([ALICE_WRITES]), 10_000, "the brokers to read the ACL")
    c.kill_broker(2)
    c.restart_broker(2)
    c.wait_for(lambda: c.brokers[2].authorizer.loaded, 20_000, "broker 2 to load its ACLs")
    assert c.brokers[2].authorizer.bindings == {ALICE_WRITES}
