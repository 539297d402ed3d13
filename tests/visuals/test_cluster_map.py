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
    assert (b2.state_label, b2.glyph, b2.session_label) == ("killed", "✕", "no session")
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
