"""Consumer groups, stated as a student would check them."""

from __future__ import annotations

import pytest

from lab.engine.errors import IllegalState, InvalidSessionTimeout, UnknownMemberId
from lab.engine.groups import OFFSETS_TOPIC, java_string_hash, partition_for_group
from lab.engine.ids import TopicPartition
from tests.engine.helpers import checked_cluster


def _fill(c, topic: str = "orders", n: int = 60) -> None:  # type: ignore[no-untyped-def]
    p = c.producer()
    for i in range(n):
        p.send(topic, f"v{i}", key=f"k{i}")
    p.flush()


def _drain(c, members, rounds: int = 20):  # type: ignore[no-untyped-def]
    got = {m.client_id: [] for m in members}
    for _ in range(rounds):
        for m in members:
            got[m.client_id] += m.poll(timeout_ms=200)
    return got


def _group(c, name: str = "billing"):  # type: ignore[no-untyped-def]
    return c.snapshot()["groups"][name]


# Computed with Java 17's String.hashCode (javac on this machine), and Math.abs(h) % 50.
JAVA_HASHES = [
    ("billing", -109829509, 9),
    ("hello", 99162322, 22),
    ("", 0, 0),
    ("audit", 93166555, 5),
    ("group-\u00e4\u20ac", 506325590, 40),
    ("consumer-group-with-a-rather-long-name", -10784275, 25),
]


@pytest.mark.parametrize(("group", "java_hash", "partition"), JAVA_HASHES)
def test_java_hash_and_coordinator_partition_match_kafka(group: str, java_hash: int, partition: int) -> None:
    assert java_string_hash(group) == java_hash
    assert partition_for_group(group, 50) == partition


def test_each_partition_is_read_by_exactly_one_member_and_the_group_reads_everything() -> None:
    with checked_cluster(3) as c:
        c.create_topic("orders", partitions=6, replication_factor=3)
        _fill(c)
        members = [c.consumer(group_id="billing", auto_offset_reset="earliest") for _ in range(3)]
        for m in members:
            m.subscribe(["orders"])
        got = _drain(c, members)
        owned = [tp for m in members for tp in m.assignment()]
        assert sorted(owned) == [
            TopicPartition("orders", p) for p in range(6)
        ]  # no partition twice, none missing
        values = sorted(r.value for rs in got.values() for r in rs)
        assert values == sorted(f"v{i}".encode() for i in range(60))  # every record, once
        group = _group(c)
        assert group["state"] == "Stable"
        assert len(group["members"]) == 3


def test_every_group_sees_every_record() -> None:
    with checked_cluster(3) as c:
        c.create_topic("orders", partitions=3, replication_factor=3)
        _fill(c, n=30)
        billing = c.consumer(group_id="billing", auto_offset_reset="earliest")
        audit = c.consumer(group_id="audit", auto_offset_reset="earliest")
        billing.subscribe(["orders"])
        audit.subscribe(["orders"])
        got = _drain(c, [billing, audit])
        assert len(got[billing.client_id]) == 30
        assert len(got[audit.client_id]) == 30


def test_a_dead_members_partitions_move_to_the_survivors() -> None:
    with checked_cluster(3) as c:
        c.create_topic("orders", partitions=4, replication_factor=3)
        a, b = (
            c.consumer(group_id="billing", auto_offset_reset="earliest", session_timeout_ms=6000)
            for _ in range(2)
        )
        a.subscribe(["orders"])
        b.subscribe(["orders"])
        _drain(c, [a, b], rounds=10)
        assert len(a.assignment()) == 2
        assert len(b.assignment()) == 2
        generation = _group(c)["generation"]
        b.crash()
        c.run_for(2500)  # < session.timeout.ms minus heartbeat.interval.ms (3000)
        assert len(_group(c)["members"]) == 2  # the session has not timed out yet
        for _ in range(20):
            a.poll(timeout_ms=200)
        group = _group(c)
        assert [m["client_id"] for m in group["members"]] == [a.client_id]
        assert group["generation"] == generation + 1
        assert sorted(a.assignment()) == [TopicPartition("orders", p) for p in range(4)]
        texts = [e.text for e in c.events() if e.kind == "member_removed"]
        # Named by member id, which starts with the client id (Kafka's "<client.id>-<uuid>").
        assert b.member_id.startswith(f"{b.client_id}-")
        assert any(f"{b.member_id} sent no heartbeat for session.timeout.ms=6000" in t for t in texts)
        rebalance = [e for e in c.events() if e.kind == "rebalance"][-1]
        assert rebalance.data["assigned"][a.member_id]  # what the survivor received is named


def test_a_consumer_rewinds_and_reads_the_same_records_again() -> None:
    with checked_cluster(3) as c:
        c.create_topic("orders", replication_factor=3)
        _fill(c, n=10)
        r = c.consumer()
        r.assign([("orders", 0)])
        r.seek_to_beginning("orders", 0)
        first = r.poll(timeout_ms=500)
        r.seek("orders", 0, 0)
        again = r.poll(timeout_ms=500)
        assert [x.offset for x in first] == list(range(10))
        assert [(x.offset, x.value) for x in again] == [(x.offset, x.value) for x in first]
        other = c.consumer()
        other.assign([("orders", 0)])
        assert other.position("orders", 0) is None  # nobody else's position moved


def test_commits_survive_the_coordinator_dying() -> None:
    with checked_cluster(3) as c:
        c.create_topic("orders", partitions=2, replication_factor=3)
        _fill(c, n=20)
        g = c.consumer(group_id="billing", auto_offset_reset="earliest", enable_auto_commit="false")
        g.subscribe(["orders"])
        _drain(c, [g], rounds=10)
        g.commit()
        committed = _group(c)["committed"]
        coordinator = _group(c)["coordinator"]
        g.close()
        c.kill_broker(coordinator)
        c.run_for(10_000)
        group = _group(c)
        assert group["coordinator"] != coordinator
        assert group["committed"] == committed  # read back from __consumer_offsets by the new leader
        assert any(e.kind == "coordinator_loaded" for e in c.events())
        h = c.consumer(group_id="billing", enable_auto_commit="false")
        h.subscribe(["orders"])
        assert _drain(c, [h], rounds=10)[h.client_id] == []  # it starts after what was committed


def test_offsets_topic_is_created_on_first_use_compacted_and_replicated() -> None:
    with checked_cluster(3) as c:
        c.create_topic("orders", replication_factor=3)
        g = c.consumer(group_id="billing")
        g.subscribe(["orders"])
        g.poll(timeout_ms=3000)
        snap = c.snapshot()["topics"][OFFSETS_TOPIC]
        assert len(snap["partitions"]) == 5  # the lab's offsets.topic.num.partitions (Kafka: 50)
        assert all(len(p["replicas"]) == 3 for p in snap["partitions"])
        assert snap["config"]["cleanup.policy"] == "compact"


def test_cooperative_sticky_revokes_only_what_moves_over_two_rebalances() -> None:
    with checked_cluster(3) as c:
        c.create_topic("orders", partitions=6, replication_factor=3)
        strategy = {"partition_assignment_strategy": "cooperative-sticky"}
        a = c.consumer(group_id="g", **strategy)
        b = c.consumer(group_id="g", **strategy)
        a.subscribe(["orders"])
        b.subscribe(["orders"])
        _drain(c, [a, b], rounds=10)
        before = {a.client_id: set(a.assignment()), b.client_id: set(b.assignment())}
        third = c.consumer(group_id="g", **strategy)
        third.subscribe(["orders"])
        _drain(c, [a, b, third], rounds=20)
        after = {m.client_id: set(m.assignment()) for m in (a, b, third)}
        assert sorted(len(v) for v in after.values()) == [2, 2, 2]
        assert after[a.client_id] <= before[a.client_id]
        assert after[b.client_id] <= before[b.client_id]
        assert a.revoked_count + b.revoked_count == 2  # only the two partitions that moved were given up
        rebalances = [e for e in c.events() if e.kind == "rebalance"]
        assert rebalances[-1].data["generation"] == rebalances[-2].data["generation"] + 1  # two rounds


def test_eager_rebalance_revokes_everything() -> None:
    with checked_cluster(3) as c:
        c.create_topic("orders", partitions=6, replication_factor=3)
        a, b = (c.consumer(group_id="g") for _ in range(2))
        a.subscribe(["orders"])
        b.subscribe(["orders"])
        _drain(c, [a, b], rounds=10)
        revoked_before = a.revoked_count + b.revoked_count
        third = c.consumer(group_id="g")
        third.subscribe(["orders"])
        _drain(c, [a, b, third], rounds=20)
        assert a.revoked_count + b.revoked_count - revoked_before == 6


def test_static_member_back_within_its_session_keeps_its_partitions_without_a_rebalance() -> None:
    with checked_cluster(3) as c:
        c.create_topic("orders", partitions=2, replication_factor=3)
        a = c.consumer(group_id="g", group_instance_id="a", session_timeout_ms=10_000)
        b = c.consumer(group_id="g", group_instance_id="b", session_timeout_ms=10_000)
        a.subscribe(["orders"])
        b.subscribe(["orders"])
        _drain(c, [a, b], rounds=10)
        mine = a.assignment()
        generation = _group(c, "g")["generation"]
        a.crash()
        c.run_for(2000)
        back = c.consumer(group_id="g", group_instance_id="a", session_timeout_ms=10_000)
        back.subscribe(["orders"])
        _drain(c, [back, b], rounds=10)
        assert back.assignment() == mine
        assert _group(c, "g")["generation"] == generation
        assert any(e.kind == "static_rejoin" for e in c.events())


def test_a_fenced_member_gets_unknown_member_id_and_rejoins() -> None:
    with checked_cluster(3) as c:
        c.create_topic("orders", partitions=2, replication_factor=3)
        g = c.consumer(group_id="g", session_timeout_ms=2000, heartbeat_interval_ms=500)
        g.subscribe(["orders"])
        c.wait_for(lambda: g.state == "stable", 10_000)
        old = g.member_id
        # Silence the member for longer than its session: its heartbeats cannot reach the coordinator.
        coordinator = _group(c, "g")["coordinator"]
        c.network.cut(g.client_id, coordinator)
        c.run_for(4000)
        c.network.mend(g.client_id, coordinator)
        # Requests lost in the cut answer only at request.timeout.ms (30 s): then it finds its way back.
        c.wait_for(lambda: g.member_id not in ("", old) and g.state == "stable", 40_000)
        assert any(e.kind == "member_removed" and "sent no heartbeat" in e.text for e in c.events())
        assert len(g.assignment()) == 2


def test_user_errors_are_named() -> None:
    with checked_cluster(3) as c:
        c.create_topic("orders", partitions=2, replication_factor=3)
        g = c.consumer(group_id="g")
        g.subscribe(["orders"])
        _drain(c, [g], rounds=5)
        with pytest.raises(IllegalState, match="not assigned"):
            g.commit({("other", 0): 3})
        with pytest.raises(IllegalState, match="cannot be mixed"):
            g.assign([("orders", 0)])
        r = c.consumer()
        r.assign([("orders", 0)])
        with pytest.raises(IllegalState, match="not assigned"):
            r.seek("orders", 1, 0)
        outsider = c.consumer(group_id="g")
        outsider.assign([("orders", 0)])
        with pytest.raises(UnknownMemberId):
            outsider.commit({("orders", 0): 1})


def test_lag_is_hw_minus_committed() -> None:
    with checked_cluster(3) as c:
        c.create_topic("orders", replication_factor=3)
        _fill(c, n=10)
        g = c.consumer(group_id="g", enable_auto_commit="false", auto_offset_reset="earliest")
        g.subscribe(["orders"])
        g.poll(timeout_ms=3000)
        g.commit({("orders", 0): 4})
        group = _group(c, "g")
        assert group["lag"] == {"orders/0": 6}
        assert group["total_lag"] == 6
        assert g.committed("orders", 0) == 4


def test_added_partitions_trigger_a_rebalance_that_hands_them_out() -> None:
    with checked_cluster(3) as c:
        c.create_topic("orders", partitions=2, replication_factor=3)
        a, b = (c.consumer(group_id="g") for _ in range(2))
        a.subscribe(["orders"])
        b.subscribe(["orders"])
        c.wait_for(
            lambda: a.state == b.state == "stable" and len(a.assignment()) + len(b.assignment()) == 2, 20_000
        )
        c.create_partitions("orders", 4)
        c.wait_for(
            lambda: len(a.assignment()) + len(b.assignment()) == 4 and a.state == b.state == "stable", 30_000
        )
        assert any(
            "now has 4 partitions (was 2)" in e.text for e in c.events() if e.kind == "rebalance_started"
        )


def test_auto_commit_commits_positions_every_interval() -> None:
    with checked_cluster(3) as c:
        c.create_topic("orders", replication_factor=3)
        _fill(c, n=10)
        g = c.consumer(group_id="g", auto_offset_reset="earliest", auto_commit_interval_ms=1000)
        g.subscribe(["orders"])
        assert len(g.poll(timeout_ms=5000)) == 10
        c.run_for(1500)
        assert _group(c, "g")["committed"] == {"orders/0": 10}


def test_a_paused_coordinator_counts_the_heartbeats_it_held_before_its_session_timers() -> None:
    # A long GC pause, shorter than the broker's ZooKeeper session: the coordinator keeps its group.
    # On resuming it runs what it held in the order it came: the members' heartbeats first.
    with checked_cluster(3, config={"zookeeper.session.timeout.ms": "20000"}) as c:
        c.create_topic("orders", partitions=2, replication_factor=3)
        members = [
            c.consumer(group_id="g", session_timeout_ms=6000, heartbeat_interval_ms=2000) for _ in range(2)
        ]
        for m in members:
            m.subscribe(["orders"])
        c.wait_for(lambda: all(m.state == "stable" and m.assignment() for m in members), 20_000)
        generation = _group(c, "g")["generation"]
        coordinator = _group(c, "g")["coordinator"]
        paused_at = c.now_ms
        c.pause_broker(coordinator)
        c.run_for(8000)  # past every member's session.timeout.ms
        c.resume_broker(coordinator)
        c.run_for(5000)
        assert _group(c, "g")["coordinator"] == coordinator
        assert not [e for e in c.events() if e.kind == "member_removed" and e.time_ms > paused_at]
        assert _group(c, "g")["generation"] == generation
        assert all(m.state == "stable" and m.assignment() for m in members)


def test_a_coordinator_that_loses_its_partition_answers_waiting_joins_with_not_coordinator() -> None:
    with checked_cluster(3) as c:
        c.create_topic("orders", partitions=4, replication_factor=3)
        session = {"session_timeout_ms": 10_000, "heartbeat_interval_ms": 1000}
        a, b = (c.consumer(group_id="g", **session) for _ in range(2))
        a.subscribe(["orders"])
        b.subscribe(["orders"])
        c.wait_for(
            lambda: a.state == b.state == "stable" and bool(a.assignment()) and bool(b.assignment()), 20_000
        )
        a.crash()
        late = c.consumer(group_id="g", **session)
        late.subscribe(["orders"])
        # The group waits for a (silent) to rejoin, up to its session: b and late's JoinGroups are held.
        c.wait_for(
            lambda: b.state == late.state == "joining" and _group(c, "g")["state"] == "PreparingRebalance",
            5000,
        )
        coordinator = _group(c, "g")["coordinator"]
        moved_at = c.now_ms
        c.controlled_shutdown(coordinator)  # its leaderships move first: it stops coordinating g
        # Told NOT_COORDINATOR at once, they find the new coordinator and join there (not after the
        # JoinGroup's timeout, max.poll.interval.ms plus request.timeout.ms: 330 s).
        c.wait_for(
            lambda: b.state == late.state == "stable" and len(b.assignment()) + len(late.assignment()) == 4,
            30_000,
            "b and late to own the partitions",
        )
        assert _group(c, "g")["coordinator"] != coordinator
        assert c.now_ms - moved_at < 30_000


def test_a_session_timeout_outside_the_brokers_range_is_invalid_session_timeout() -> None:
    with checked_cluster(3, config={"group.max.session.timeout.ms": "30000"}) as c:
        c.create_topic("orders", replication_factor=3)
        short = c.consumer(group_id="g", session_timeout_ms=500, heartbeat_interval_ms=100)
        kafkas = c.consumer(
            group_id="g", session_timeout_ms=45_000
        )  # Kafka's default, above this broker's maximum
        short.subscribe(["orders"])
        kafkas.subscribe(["orders"])
        c.run_for(3000)  # their JoinGroups are answered
        with pytest.raises(
            InvalidSessionTimeout, match=r"session.timeout.ms=500 is outside .*\[1000, 30000\]"
        ):
            short.poll(timeout_ms=100)
        with pytest.raises(InvalidSessionTimeout, match=r"session\.timeout\.ms=45000"):
            kafkas.poll(timeout_ms=100)
        assert c.snapshot()["groups"].get("g", {}).get("members", []) == []


def test_rebalance_records_name_each_member_by_member_id() -> None:
    with checked_cluster(3) as c:
        c.create_topic("orders", partitions=2, replication_factor=3)
        a, b = (c.consumer(group_id="g") for _ in range(2))
        a.subscribe(["orders"])
        b.subscribe(["orders"])
        c.wait_for(
            lambda: a.state == b.state == "stable" and bool(a.assignment()) and bool(b.assignment()), 20_000
        )
        record = [e for e in c.events() if e.kind == "rebalance"][-1]
        assert record.data["members"] == sorted([a.member_id, b.member_id])
        assert record.data["clients"] == {a.member_id: a.client_id, b.member_id: b.client_id}
        for m in (a, b):
            assert f"{m.member_id} owns [{', '.join(map(str, m.assignment()))}]" in record.text
        gone = b.member_id
        b.close()
        c.wait_for(lambda: a.state == "stable" and len(a.assignment()) == 2, 20_000)
        left = [e for e in c.events() if e.kind == "rebalance"][-1]
        assert f"{gone} left the group" in left.data["reason"]


def test_a_generation_abandoned_before_it_settled_has_its_place_in_the_history() -> None:
    with checked_cluster(3) as c:
        c.create_topic("orders", partitions=4, replication_factor=3)
        a, b = (c.consumer(group_id="g") for _ in range(2))
        a.subscribe(["orders"])
        b.subscribe(["orders"])
        c.wait_for(
            lambda: a.state == b.state == "stable" and bool(a.assignment()) and bool(b.assignment()), 20_000
        )
        third = c.consumer(group_id="g")
        third.subscribe(["orders"])
        c.wait_for(lambda: _group(c, "g")["state"] == "CompletingRebalance", 20_000)
        fourth = c.consumer(group_id="g")  # joins before generation 2's assignment is handed out
        fourth.subscribe(["orders"])
        members = (a, b, third, fourth)
        c.wait_for(lambda: all(m.state == "stable" and len(m.assignment()) == 1 for m in members), 20_000)
        history = [e for e in c.events() if e.kind == "rebalance"]
        assert [e.data["generation"] for e in history] == [1, 2, 3]
        abandoned = history[1]
        assert abandoned.data["members"] == sorted([a.member_id, b.member_id, third.member_id])
        assert abandoned.data["abandoned"] == f"{fourth.member_id} joined"
        assert "was abandoned" in abandoned.text
        assert history[2].data["members"] == sorted(m.member_id for m in members)
