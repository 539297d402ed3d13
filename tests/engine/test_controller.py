"""The controller: placement, topic admin with Kafka's errors, elections, reassignment, shutdowns, failover."""

from __future__ import annotations

import pytest

from lab.engine.assignment import place_replicas
from lab.engine.errors import (
    IllegalState,
    InvalidConfig,
    InvalidPartitions,
    InvalidReplicationFactor,
    InvalidTopic,
    TopicAlreadyExists,
    UnknownTopicOrPartition,
)
from tests.engine.helpers import checked_cluster, part, texts, values


def test_placement_rule_replica_j_of_partition_i_on_broker_i_plus_j_mod_n() -> None:
    assert place_replicas([3, 1, 2], 4, 2) == {0: (1, 2), 1: (2, 3), 2: (3, 1), 3: (1, 2)}
    with checked_cluster(3) as c:
        c.create_topic("t", partitions=3, replication_factor=3)
        assert [part(c, "t", i)["replicas"] for i in range(3)] == [[1, 2, 3], [2, 3, 1], [3, 1, 2]]
        assert [part(c, "t", i)["leader"] for i in range(3)] == [1, 2, 3]  # the preferred leader walks round


@pytest.mark.parametrize(
    ("name", "kwargs", "error", "message"),
    [
        (
            "t",
            {"replication_factor": 4},
            InvalidReplicationFactor,
            "Replication factor: 4 larger than available brokers: 3.",
        ),
        ("t", {"partitions": 0}, InvalidPartitions, "Number of partitions must be larger than 0."),
        (".", {}, InvalidTopic, 'Topic name cannot be "." or ".."'),
        ("..", {}, InvalidTopic, 'Topic name cannot be "." or ".."'),
        ("x" * 250, {}, InvalidTopic, "can't be longer than 249 characters"),
        ("a b", {}, InvalidTopic, "contains a character other than ASCII alphanumerics"),
        ("", {}, InvalidTopic, "can't be empty"),
        (
            "__consumer_offsets",
            {},
            InvalidTopic,
            "'__consumer_offsets' is an internal topic: the group coordinator",
        ),
        ("__transaction_state", {}, InvalidTopic, "'__transaction_state' is an internal topic"),
        ("t", {"config": {"retention.mss": "1"}}, InvalidConfig, "Unknown topic config name: retention.mss"),
        ("t", {"config": {"retention.ms": "soon"}}, InvalidConfig, "retention.ms"),
        ("t", {"config": {"cleanup.policy": "shred"}}, InvalidConfig, "cleanup.policy"),
    ],
)
def test_bad_topic_requests_get_kafkas_error_and_create_nothing(name, kwargs, error, message) -> None:  # type: ignore[no-untyped-def]
    with checked_cluster(3) as c:
        with pytest.raises(error) as raised:
            c.create_topic(name, **kwargs)
        assert message in str(raised.value)
        assert c.topics() == []
        assert not any(n["path"].startswith("/config/topics/") for n in c.zookeeper_tree())


def test_an_existing_topic_cannot_be_created_again() -> None:
    with checked_cluster(3) as c:
        c.create_topic("t", partitions=2, replication_factor=2)
        with pytest.raises(TopicAlreadyExists, match=r"Topic 't' already exists\."):
            c.create_topic("t", partitions=5)
        assert len(c.snapshot()["topics"]["t"]["partitions"]) == 2


@pytest.mark.parametrize(("first", "second"), [("a.b", "a_b"), ("a_b", "a.b"), ("x.y_z", "x_y.z")])
def test_a_name_that_collides_once_dots_are_underscores_is_refused(first: str, second: str) -> None:
    # Kafka's metrics turn '.' into '_': two such topics would share their metric names.
    with checked_cluster(3) as c:
        c.create_topic(first)
        with pytest.raises(InvalidTopic) as raised:
            c.create_topic(second)
        assert raised.value.name == "INVALID_TOPIC_EXCEPTION"
        assert raised.value.message == f"Topic '{second}' collides with existing topics: {first}"
        assert c.topics() == [first]
        c.create_topic("a-b")  # '-' is not one of them
        with pytest.raises(TopicAlreadyExists):
            c.create_topic(first)  # the same name is still "already exists", not a collision


def test_groups_still_find_their_coordinator_after_a_hand_made_offsets_topic_is_refused() -> None:
    with checked_cluster(3) as c:
        with pytest.raises(InvalidTopic):
            c.create_topic("__consumer_offsets", partitions=1)
        c.create_topic("orders", partitions=2, replication_factor=3)
        p = c.producer()
        p.send("orders", "x", partition=0)
        p.flush()
        g = c.consumer("billing", auto_offset_reset="earliest")
        g.subscribe(["orders"])
        started = c.now_ms
        records = g.poll(timeout_ms=5000)
        while not records and c.now_ms - started < 5000:
            records = g.poll(timeout_ms=500)
        assert [r.value for r in records] == [b"x"]
        assert c.now_ms - started < 5000  # not the ~19 s per call a broken coordinator lookup took
        assert c.partition_count("__consumer_offsets") == c.config.int("offsets.topic.num.partitions")


def test_deleting_a_topic_removes_its_logs_on_every_replica() -> None:
    with checked_cluster(3) as c:
        c.create_topic("t", partitions=2, replication_factor=3)
        p = c.producer()
        p.send("t", "x")
        p.flush()
        dirs = [c.brokers[b].log_dir / f"t-{i}" for b in (1, 2, 3) for i in (0, 1)]
        assert all(d.is_dir() for d in dirs)
        c.delete_topic("t")
        c.run_for(100)
        assert c.topics() == []
        assert not any(d.exists() for d in dirs)
        assert texts(c, "topic_deleted")
        with pytest.raises(UnknownTopicOrPartition):
            c.delete_topic("t")


def test_a_topic_with_a_replica_on_a_dead_broker_waits_for_it_as_kafkas_controller_does() -> None:
    """Kafka's TopicDeletionManager: the live replicas are deleted at once, but a replica on a broker
    that is down makes the topic ineligible: it stays in ZooKeeper, marked for deletion, until the
    broker is back and has deleted its copy too, so no stray log of it comes back with the broker."""
    with checked_cluster(3) as c:
        c.create_topic("t", partitions=2, replication_factor=3)
        p = c.producer()
        p.send("t", "x")
        p.flush()
        c.kill_broker(3)
        c.wait_for(lambda: texts(c, "broker_gone"), 60_000, "broker 3's session to expire")
        c.delete_topic("t", wait=False)
        c.run_for(2000)
        assert not any((c.brokers[b].log_dir / f"t-{i}").exists() for b in (1, 2) for i in (0, 1))
        assert all((c.brokers[3].log_dir / f"t-{i}").is_dir() for i in (0, 1))
        assert c.topics() == ["t"]  # still in ZooKeeper: /brokers/topics/t and /admin/delete_topics/t
        znodes = [n["path"] for n in c.zookeeper_tree("/")]
        assert "/admin/delete_topics/t" in znodes
        assert "/brokers/topics/t" in znodes
        assert any("broker 3" in t for t in texts(c, "topic_deletion_waiting"))
        assert not texts(c, "topic_deleted")
        c.restart_broker(3)
        c.run_for(10_000)
        assert c.topics() == []
        assert not any((c.brokers[b].log_dir / f"t-{i}").exists() for b in (1, 2, 3) for i in (0, 1))
        assert texts(c, "topic_deleted")


def test_adding_partitions_places_them_by_the_rule_and_elects_leaders() -> None:
    with checked_cluster(3) as c:
        c.create_topic("t", partitions=2, replication_factor=2)
        c.create_partitions("t", 4)
        assert [part(c, "t", i)["replicas"] for i in range(4)] == [[1, 2], [2, 3], [3, 1], [1, 2]]
        assert all(part(c, "t", i)["leader"] > 0 for i in range(4))
        with pytest.raises(InvalidPartitions, match="higher than the requested 3"):
            c.create_partitions("t", 3)


def test_reassignment_adds_catches_up_switches_the_leader_and_removes() -> None:
    with checked_cluster(4) as c:
        c.create_topic("t", replication_factor=3)
        p = c.producer()
        for i in range(10):
            p.send("t", f"v{i}")
        p.flush()
        assert part(c, "t", 0)["replicas"] == [1, 2, 3]
        c.reassign_partitions({("t", 0): [4, 2, 3]})
        c.run_for(100)
        state = part(c, "t", 0)
        assert state["replicas"] == [4, 2, 3]
        assert state["leader"] in (4, 2, 3)
        assert sorted(state["isr"]) == [2, 3, 4]
        assert values(c, 4, "t") == [f"v{i}".encode() for i in range(10)]
        assert not (c.brokers[1].log_dir / "t-0").exists()
        assert texts(c, "reassignment_started")
        assert texts(c, "reassignment_done")


def test_preferred_leader_election_on_request_and_automatically() -> None:
    with checked_cluster(3, config={"leader.imbalance.check.interval.seconds": "5"}) as c:
        c.create_topic("t", partitions=3, replication_factor=3)
        c.kill_broker(1)
        c.wait_for(lambda: part(c, "t", 0)["leader"] == 2, 15_000)
        c.restart_broker(1)
        c.wait_for(lambda: 1 in part(c, "t", 0)["isr"], 15_000)
        c.elect_preferred_leaders([("t", 0)])
        c.run_for(100)
        assert part(c, "t", 0)["leader"] == 1
        assert any("preferred (first) replica" in t for t in texts(c, "leader_election"))
        # Now automatically: knock broker 2 over, bring it back, wait for the imbalance check.
        c.kill_broker(2)
        c.wait_for(lambda: part(c, "t", 1)["leader"] == 3, 15_000)
        c.restart_broker(2)
        c.wait_for(lambda: part(c, "t", 1)["leader"] == 2, 30_000)
        assert any("auto leader rebalance" in t for t in texts(c, "leader_election"))


def test_controlled_shutdown_moves_leadership_first_so_nothing_goes_offline() -> None:
    with checked_cluster(3) as c:
        c.create_topic("t", partitions=3, replication_factor=3)
        c.controlled_shutdown(1)
        assert part(c, "t", 0)["leader"] == 2
        assert all(1 not in part(c, "t", i)["isr"] for i in range(3))
        assert c.snapshot()["brokers"][0]["state"] == "stopped"
        assert not any(e.kind == "partition_offline" for e in c.events())
        assert any("controlled shutdown of broker 1" in t for t in texts(c, "leader_election"))
        with pytest.raises(IllegalState):
            c.controlled_shutdown(1)


def test_controller_failover_bumps_the_controller_epoch() -> None:
    with checked_cluster(3) as c:
        c.create_topic("t", replication_factor=3)
        assert c.controller_id() == 1
        epoch = c.snapshot()["controller_epoch"]
        c.kill_broker(1)
        c.wait_for(lambda: c.controller_id() in (2, 3), 15_000)
        c.run_for(100)
        assert c.snapshot()["controller_epoch"] == epoch + 1
        assert part(c, "t", 0)["leader"] == 2


def test_the_new_controller_takes_controller_and_bumps_its_epoch_in_one_transaction() -> None:
    # Kafka 2.7+ (registerControllerAndIncrementControllerEpoch): /controller and /controller_epoch
    # change together, so no broker is ever controller under an epoch another also holds.
    from lab.engine.metadata import paths

    with checked_cluster(3) as c:
        admin = c.wait(c._admin_session())
        raw, epoch_stat = c.wait(admin.get(paths.CONTROLLER_EPOCH))
        controller = c.wait(admin.exists(paths.CONTROLLER))
        assert (raw, epoch_stat.version) == (b"1", 1)  # made at Kafka's initial epoch 0, then set to 1
        assert controller is not None
        assert epoch_stat.mzxid == controller.czxid
        c.kill_broker(1)
        c.wait_for(lambda: c.controller_id() in (2, 3), 15_000)
        raw, epoch_stat = c.wait(admin.get(paths.CONTROLLER_EPOCH))
        controller = c.wait(admin.exists(paths.CONTROLLER))
        assert (raw, epoch_stat.version) == (b"2", 2)
        assert controller is not None
        assert epoch_stat.mzxid == controller.czxid
        assert (
            texts(c, "controller_elected")[-1]
            == f"broker {c.controller_id()} is the controller (controller epoch 2)"
        )


def test_a_paused_controller_is_fenced_by_the_controller_epoch_when_it_wakes() -> None:
    with checked_cluster(3) as c:
        c.create_topic("t", replication_factor=3)
        c.pause_broker(1)
        c.wait_for(lambda: c.controller_id() in (2, 3), 20_000)
        c.resume_broker(1)
        c.run_for(5000)
        assert c.controller_id() in (2, 3)
        snap = c.snapshot()
        assert [b["controller"] for b in snap["brokers"]].count(True) == 1
        c.wait_for(lambda: sorted(part(c, "t", 0)["isr"]) == [1, 2, 3], 30_000)


def test_a_broker_cut_off_from_zookeeper_loses_its_leaderships_and_comes_back() -> None:
    with checked_cluster(3) as c:
        c.create_topic("t", partitions=3, replication_factor=3)
        c.isolate_broker(3, from_="zookeeper")
        c.wait_for(lambda: part(c, "t", 2)["leader"] == 1, 20_000)
        assert any("broker 3 left /brokers/ids" in t for t in texts(c, "broker_gone"))
        c.heal(3)
        c.wait_for(lambda: sorted(part(c, "t", 2)["isr"]) == [1, 2, 3], 30_000)
        assert any("session expired" in t for t in texts(c, "zk_session_expired"))


def test_every_election_says_why_with_the_epochs_and_isrs() -> None:
    with checked_cluster(3) as c:
        c.create_topic("orders", replication_factor=3)
        c.kill_broker(1)
        c.wait_for(lambda: part(c, "orders", 0)["leader"] == 2, 20_000)
        line = next(t for t in texts(c, "leader_election") if "orders-0 leader 1 -> 2" in t)
        assert "leader_epoch 0 -> 1" in line
        assert "isr [1, 2, 3] -> [2, 3]" in line


def test_looking_up_a_topic_with_an_illegal_name_is_invalid_topic() -> None:
    with checked_cluster(1) as c:
        for call in (
            lambda: c.partition_count("bad\x00name"),
            lambda: c.delete_topic("a/b"),
            lambda: c.topic_config(""),
        ):
            with pytest.raises(InvalidTopic):
                call()


def test_config_changes_reach_the_controller_and_unclean_election_can_bring_a_partition_back() -> None:
    with checked_cluster(3) as c:
        c.create_topic("t", replication_factor=2, config={"min.insync.replicas": "1"})
        c.isolate_broker(2, from_="brokers")
        p = c.producer(acks="all")
        p.send("t", "only-on-1")
        c.wait_for(lambda: part(c, "t", 0)["isr"] == [1], 20_000)
        c.heal(2)
        c.kill_broker(1)
        c.wait_for(lambda: part(c, "t", 0)["leader"] == -1, 20_000)
        c.alter_topic_config("t", {"unclean.leader.election.enable": "true"})
        assert c.topic_config("t") == {"min.insync.replicas": "1", "unclean.leader.election.enable": "true"}
        c.wait_for(lambda: part(c, "t", 0)["leader"] == 2, 10_000)
        assert any(
            "topic config changed" in t and "unclean election" in t for t in texts(c, "leader_election")
        )


def test_while_a_deletion_waits_for_a_dead_broker_reads_come_from_the_controllers_view() -> None:
    """A deletion can wait minutes for a broker: the topic list and configs keep coming from the
    controller's view (no ZooKeeper round trip, so a paused lab stays still), which agrees with
    ZooKeeper: the topic is there, marked for deletion."""
    with checked_cluster(3) as c:
        c.create_topic("t", partitions=1, replication_factor=3, config={"retention.ms": "60000"})
        c.create_topic("kept", partitions=1, replication_factor=1)
        c.kill_broker(3)
        c.wait_for(lambda: texts(c, "broker_gone"), 60_000, "broker 3's session to expire")
        c.delete_topic("t", wait=False)
        c.run_for(2000)
        before = c.now_ms
        assert c.topics() == ["kept", "t"]
        assert c.topic_config("t") == {"retention.ms": "60000"}
        assert c.now_ms == before  # answered from memory: the clock did not move for a ZooKeeper read
