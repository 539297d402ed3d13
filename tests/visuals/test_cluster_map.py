"""The cluster map's view model: brokers as columns, partitions as rows, every state in words."""

from __future__ import annotations

from lab.visuals.cluster_map import broker_actions, cluster_map
from tests.visuals.snapshots import broker, log, partition, three_brokers


def _actions(column) -> dict[str, object]:
    return {(a.name, dict(a.params).get("from")): a for a in column.actions}


def test_placement_rule_can_be_read_off_the_cells() -> None:
    view = cluster_map(three_brokers(), {})
    rows = view.topics[0].partitions
    for row in rows:
        for cell in row.cells:
            # broker (i + j) % 3 + 1 holds replica j of partition i
            assert cell.replica_index == (cell.broker - 1 - row.partition) % 3
            assert f"({row.partition} + {cell.replica_index}) mod 3" in cell.title
    assert [c.role for c in rows[1].cells] == ["follower", "leader", "follower"]


def test_controller_and_states_are_marked() -> None:
    snap = three_brokers(brokers=[broker(1, controller=True), broker(2, "killed"), broker(3, "paused")])
    view = cluster_map(snap, {})
    b1, b2, b3 = view.brokers
    assert b1.controller
    assert not b2.controller
    assert (b2.state_label, b2.glyph, b2.session) == ("killed", "✕", "closed")
    assert (b3.state_label, b3.glyph) == ("paused", "❚❚")
    assert "zookeeper.session.timeout.ms: lab 6000, Kafka 18000" in b2.state_tip


def test_a_replica_out_of_the_isr_and_an_offline_one_are_said_in_words() -> None:
    snap = three_brokers(brokers=[broker(1, controller=True), broker(2), broker(3, "killed")])
    snap["topics"]["orders"]["partitions"][0] = partition(
        0,
        [1, 2, 3],
        leader=1,
        isr=[1],
        logs={1: log(0, 5, 7, role="leader"), 2: log(0, 5, 5), 3: log(0, 5, 5, online=False)},
    )
    row = cluster_map(snap, {}).topics[0].partitions[0]
    leader, lagging, dead = row.cells
    assert leader.label == "leader, in ISR"
    assert lagging.label == "follower, out of ISR"
    assert "replica.lag.time.max.ms: lab 10000, Kafka 30000" in lagging.title
    assert dead.label == "follower, out of ISR, offline"
    assert not dead.online
    assert row.under_replicated
    assert not row.offline


def test_an_offline_partition_has_no_leader() -> None:
    snap = three_brokers()
    snap["topics"]["orders"]["partitions"][2] = partition(
        2, [3, 1, 2], leader=-1, isr=[3], logs={3: log(0, 5, 5, online=False)}
    )
    view = cluster_map(snap, {})
    row = view.topics[0].partitions[2]
    assert row.offline
    assert row.leader is None
    assert "offline, no live leader" in row.title
    assert view.topics[0].offline == 1


def test_internal_topics_come_after_user_topics() -> None:
    snap = three_brokers()
    snap["topics"]["__consumer_offsets"] = snap["topics"]["orders"]
    snap["topics"]["alpha"] = snap["topics"]["orders"]
    view = cluster_map(snap, {})
    assert [t.name for t in view.topics] == ["alpha", "orders", "__consumer_offsets"]
    assert [t.name for t in view.internal_topics] == ["__consumer_offsets"]


def test_controls_that_do_not_apply_are_disabled_with_the_reason() -> None:
    running = _actions(type("B", (), {"actions": broker_actions(broker(1))})())
    assert running[("kill", None)].enabled
    assert not running[("restart", None)].enabled
    assert running[("restart", None)].title == "broker 1 is running; kill it or shut it down first"
    assert not running[("heal", None)].enabled
    assert running[("heal", None)].title == "broker 1 is neither isolated nor slow"

    killed = _actions(type("B", (), {"actions": broker_actions(broker(2, "killed"))})())
    assert killed[("restart", None)].enabled
    for name in ("kill", "pause", "slow", "shutdown"):
        assert not killed[(name, None)].enabled
        assert killed[(name, None)].title == "broker 2 is not running (killed)"

    cut = _actions(
        type("B", (), {"actions": broker_actions(broker(3, "isolated", isolated_from=["zookeeper"]))})()
    )
    assert not cut[("isolate", "zookeeper")].enabled
    assert cut[("isolate", "zookeeper")].title == "broker 3 is already cut off from ZooKeeper"
    assert cut[("isolate", "brokers")].enabled
    assert cut[("heal", None)].enabled

    paused = _actions(type("B", (), {"actions": broker_actions(broker(1, "paused"))})())
    assert paused[("resume", None)].enabled
    assert not paused[("pause", None)].enabled
    assert paused[("isolate", "zookeeper")].params == (("broker", "1"), ("from", "zookeeper"))
    assert paused[("isolate", "zookeeper")].vals == '{"broker": "1", "from": "zookeeper"}'


def test_same_snapshot_same_view_so_an_unchanged_map_is_not_resent() -> None:
    assert cluster_map(three_brokers(), {}) == cluster_map(three_brokers(), {})
    moved = three_brokers(brokers=[broker(1), broker(2, controller=True), broker(3)])
    assert cluster_map(three_brokers(), {}) != cluster_map(moved, {})


def test_the_topic_shows_the_min_insync_replicas_it_really_runs_with() -> None:
    snap = three_brokers()
    snap["topics"]["orders"]["config"] = {"min.insync.replicas": "2"}
    orders = cluster_map(snap, {"min.insync.replicas": "1"}).topics[0]
    assert (orders.min_insync_replicas, orders.min_isr_override) == (2, True)
    assert orders.min_isr_tip == "min.insync.replicas: topic 2 (lab 1, Kafka 1)"
    plain = cluster_map(three_brokers(), {"min.insync.replicas": "3"}).topics[0]
    assert (plain.min_insync_replicas, plain.min_isr_override) == (3, False)
    assert plain.min_isr_tip == "min.insync.replicas: lab 3, Kafka 1"


def test_a_partition_under_min_isr_is_marked_so_a_student_knows_acks_all_fails() -> None:
    snap = three_brokers(brokers=[broker(1, controller=True), broker(2, "killed"), broker(3, "killed")])
    snap["topics"]["orders"]["config"] = {"min.insync.replicas": "2"}
    snap["topics"]["orders"]["partitions"][0] = partition(
        0,
        [1, 2, 3],
        leader=1,
        isr=[1],
        logs={1: log(0, 5, 5, role="leader"), 2: log(0, 5, 5, online=False), 3: log(0, 5, 5, online=False)},
    )
    orders = cluster_map(snap, {}).topics[0]
    row = orders.partitions[0]
    assert row.under_min_isr
    assert row.min_isr_title.startswith("ISR [1]: 1 in sync, min.insync.replicas 2. Under min ISR:")
    assert "NOT_ENOUGH_REPLICAS" in row.min_isr_title
    assert [r.under_min_isr for r in orders.partitions[1:]] == [False, False]  # ISR of 3
    assert orders.under_min_isr == 1


def test_the_placement_legend_says_which_broker_the_index_picks_with_the_labs_own_example() -> None:
    view = cluster_map(three_brokers(), {})
    assert view.broker_order == (1, 2, 3)
    # The index counts from 0 in id order: index 0 is broker 1, not a broker "0" the lab does not have.
    example = view.placement_example
    assert example is not None
    assert (example.topic, example.partition, example.replica, example.index, example.broker) == (
        "orders",
        1,
        2,
        0,
        1,
    )
    assert example.text == "orders-1's replica 2: (1 + 2) mod 3 = 0, so broker 1"
    assert "random" in view.placement_tip  # Kafka's own start index and shift, said beside the lab's rule


def test_the_placement_example_uses_the_brokers_the_lab_has() -> None:
    ids = [2, 5, 9]
    parts = []
    for i in range(2):
        replicas = [ids[(i + j) % 3] for j in range(2)]
        parts.append(
            partition(i, replicas, leader=replicas[0], isr=replicas, logs={b: log(0, 0, 0) for b in replicas})
        )
    snap = three_brokers(
        brokers=[broker(2, controller=True), broker(5), broker(9)],
        topics={"orders": {"config": {}, "partitions": parts}},
    )
    view = cluster_map(snap, {})
    assert view.broker_order == (2, 5, 9)
    example = view.placement_example
    assert example is not None
    assert (example.partition, example.replica, example.index, example.broker) == (1, 1, 2, 9)
    cell = view.topics[0].partitions[1].cells[0]  # broker 2 holds no replica of orders-1
    assert cell.replica_index is None
    leader = view.topics[0].partitions[1].cells[1]
    assert (
        "replica 0: (1 + 0) mod 3 = 1, index 1 of the brokers in id order [2, 5, 9], so broker 5"
        in leader.title
    )
    # No topic yet: the rule worked through with the brokers alone.
    bare = cluster_map(three_brokers(brokers=[broker(2), broker(5), broker(9)], topics={}), {})
    assert bare.placement_example is not None
    assert bare.placement_example.text == "replica 1 of partition 2: (2 + 1) mod 3 = 0, so broker 2"
