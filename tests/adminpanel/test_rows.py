"""The panel's tables from a real cluster's snapshot: counts, replica progress, configs, groups' lag."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from lab.adminpanel import rows
from lab.engine.cluster import Cluster
from lab.engine.errors import CoordinatorNotAvailable, NotEnoughReplicas


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    with Cluster.create(brokers=3, seed=3, config={"zookeeper.session.timeout.ms": "1500"}) as c:
        c.create_topic("orders", partitions=3, replication_factor=3, config={"retention.ms": "1000"})
        c.create_topic("solo", partitions=1, replication_factor=1)
        yield c


def test_topic_rows_count_partitions_replicas_and_trouble(cluster: Cluster) -> None:
    group = cluster.consumer("billing")
    group.assign([("orders", 0)])
    cluster.wait_for(lambda: "__consumer_offsets" in cluster.topics(), 10_000)
    cluster.run_for(2_000)
    assert [r.name for r in rows.topic_rows(cluster.snapshot())] == ["orders", "solo"]
    assert rows.hidden_internal(cluster.snapshot()) == 1
    orders, solo = rows.topic_rows(cluster.snapshot())
    assert (orders.partitions, orders.replication_factor, orders.under_replicated, orders.offline) == (
        3,
        3,
        0,
        0,
    )
    assert orders.overrides == 1
    shown = rows.topic_rows(cluster.snapshot(), internal=True)
    assert [r.name for r in shown] == ["__consumer_offsets", "orders", "solo"]
    assert shown[0].internal

    cluster.kill_broker(cluster.partition_state("solo", 0)["replicas"][0])
    cluster.run_for(5_000)
    orders, solo = rows.topic_rows(cluster.snapshot())
    assert (orders.under_replicated, orders.offline) == (3, 0)
    assert (solo.under_replicated, solo.offline) == (0, 1)


def test_a_topic_whose_isr_fell_below_its_min_insync_replicas_is_marked_where_acks_all_fails() -> None:
    lab_config = {"zookeeper.session.timeout.ms": "1500", "min.insync.replicas": "1"}
    with Cluster.create(brokers=3, seed=3, config=lab_config) as c:
        c.create_topic("orders", partitions=2, replication_factor=3, config={"min.insync.replicas": "2"})
        c.create_topic("loose", partitions=1, replication_factor=3)
        survivor = c.partition_state("orders", 0)["leader"]
        for b in c.broker_ids:
            if b != survivor:
                c.kill_broker(b)
        c.run_for(5_000)
        snap = c.snapshot()
        loose_row, orders_row = rows.topic_rows(snap, broker_config=lab_config)
        assert (orders_row.min_insync_replicas, orders_row.min_isr_override, orders_row.under_min_isr) == (
            2,
            True,
            2,
        )
        assert (loose_row.min_insync_replicas, loose_row.min_isr_override, loose_row.under_min_isr) == (
            1,
            False,
            0,
        )
        detail = rows.topic_detail(snap, "orders", broker_config=lab_config)
        assert detail is not None
        assert [p.under_min_isr for p in detail.partitions] == [True, True]
        assert detail.under_min_isr == 2
        # What the badge says is what a producer meets: acks=all fails, acks=1 still succeeds.
        strict = c.producer(acks="all", retries=0).send("orders", "v", partition=0)
        loose = c.producer(acks="1").send("orders", "v", partition=0)
        c.wait_for(lambda: strict.done() and loose.done(), 5_000)
        with pytest.raises(NotEnoughReplicas):
            strict.result()
        assert loose.result().offset == 0
        # The broker's own value applies to a topic without an override.
        strict_broker, _ = rows.topic_rows(snap, broker_config={"min.insync.replicas": "3"})
        assert (strict_broker.min_insync_replicas, strict_broker.under_min_isr) == (3, 1)


def test_a_partitions_replicas_show_how_far_behind_the_leader_they_are(cluster: Cluster) -> None:
    follower = cluster.partition_state("orders", 0)["replicas"][1]
    cluster.pause_broker(follower)
    producer = cluster.producer(acks="1")
    for i in range(8):
        producer.send("orders", f"v{i}", partition=0)
    producer.flush()
    detail = rows.topic_detail(cluster.snapshot(), "orders")
    assert detail is not None
    p0 = detail.partitions[0]
    assert (p0.log_end_offset, p0.preferred_leads, p0.election_block) == (
        8,
        True,
        f"Broker {p0.leader}, the preferred replica, already leads.",
    )
    lagging = next(r for r in p0.replica_rows if r.broker == follower)
    assert (lagging.log_end_offset, lagging.behind, lagging.progress) == (0, 8, 0)
    leader = next(r for r in p0.replica_rows if r.leader)
    assert (leader.behind, leader.progress) == (0, 100)
    assert rows.topic_detail(cluster.snapshot(), "nope") is None


def test_config_rows_show_the_override_the_labs_default_and_kafkas() -> None:
    found = {r.name: r for r in rows.config_rows({"retention.ms": "1000"}, {"min.insync.replicas": "2"})}
    assert (found["retention.ms"].override, found["retention.ms"].effective) == ("1000", "1000")
    isr = found["min.insync.replicas"]
    assert (isr.override, isr.lab_default, isr.kafka_default, isr.lab_differs) == ("", "2", "1", True)
    assert found["cleanup.policy"].options == ("delete", "compact", "compact,delete")
    assert found["unclean.leader.election.enable"].options == ("true", "false")
    assert found["segment.bytes"].options == ()


def test_group_rows_give_lag_per_partition_and_the_total(cluster: Cluster) -> None:
    producer = cluster.producer(acks="all")
    for i in range(5):
        producer.send("orders", f"v{i}", partition=1)
    producer.flush()
    group = cluster.consumer("billing")
    group.assign([("orders", 1)])
    for _ in range(50):
        try:
            group.commit({("orders", 1): 2})
            break
        except CoordinatorNotAvailable:  # the first group creates __consumer_offsets
            cluster.run_for(200)
    group.close()
    (billing,) = rows.group_rows(cluster.snapshot())
    assert (billing.group_id, billing.state, billing.active, billing.total_lag) == (
        "billing",
        "Empty",
        False,
        3,
    )
    assert billing.partitions == (
        rows.LagRow(topic="orders", partition=1, committed=2, end=5, lag=3, owner=""),
    )
    assert billing.topics == ("orders",)


def test_virtual_time_reads_like_the_clock() -> None:
    assert rows.time_label(62_034) == "1:02.034"
    assert rows.time_label(None) == "—"
