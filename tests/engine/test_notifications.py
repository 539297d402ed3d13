"""Change notifications are purged as Kafka's brokers purge them: 15 minutes after they were made,
the next time a broker processes that root's notifications (lab/engine/notifications.py)."""

from __future__ import annotations

from lab.engine.acl import parse_binding
from lab.engine.cluster import Cluster
from lab.engine.metadata import paths
from lab.engine.notifications import CHANGE_EXPIRATION_MS
from tests.engine.helpers import checked_cluster

AUTHORIZER = {"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer"}


def children(cluster: Cluster, root: str) -> list[str]:
    return sorted(n["path"].rsplit("/", 1)[1] for n in cluster.zookeeper_tree(root) if n["path"] != root)


def acl(principal: str) -> object:
    return parse_binding(resource_type="topic", name="orders", principal=principal, operation="read")


def test_acl_change_notifications_older_than_15_minutes_are_purged_at_the_next_change() -> None:
    with checked_cluster(2, config=AUTHORIZER) as cluster:
        cluster.create_acls([acl("User:alice")])
        cluster.create_acls([acl("User:bob")])
        cluster.run_for(1_000)
        first = children(cluster, "/kafka-acl-changes")
        assert len(first) == 2
        cluster.run_for(CHANGE_EXPIRATION_MS - 2_000)  # not 15 minutes old yet: kept
        cluster.create_acls([acl("User:carol")])
        cluster.run_for(1_000)
        assert children(cluster, "/kafka-acl-changes")[:2] == first
        cluster.run_for(5_000)  # now they are; the next change purges them, and only them
        cluster.create_acls([acl("User:dave")])
        cluster.run_for(1_000)
        left = children(cluster, "/kafka-acl-changes")
        assert len(left) == 2
        assert not set(first) & set(left)
        # The brokers' caches still hold every ACL: purging forgets announcements, not ACLs.
        assert all(len(b.authorizer.bindings) == 4 for b in cluster.brokers.values())


def test_config_change_notifications_are_purged_too() -> None:
    with checked_cluster(2) as cluster:
        cluster.create_topic("orders", partitions=1, replication_factor=1)
        cluster.alter_topic_config("orders", {"retention.ms": "60000"})
        cluster.run_for(1_000)
        first = children(cluster, paths.CONFIG_CHANGES)
        assert first
        cluster.run_for(CHANGE_EXPIRATION_MS + 1_000)
        cluster.alter_topic_config("orders", {"retention.ms": "120000"})
        cluster.run_for(1_000)
        left = children(cluster, paths.CONFIG_CHANGES)
        assert left
        assert not set(first) & set(left)
