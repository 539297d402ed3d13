"""A member's side of a group (Kafka's ConsumerCoordinator and heartbeat thread), as a student would check it."""

from __future__ import annotations

from typing import Any

import pytest

from lab.engine.cluster import Cluster
from lab.engine.errors import UnknownMemberId
from lab.engine.membership import GroupConsumer
from tests.engine.helpers import checked_cluster


def _group(c: Cluster, name: str = "g") -> dict[str, Any]:
    group: dict[str, Any] = c.snapshot()["groups"][name]
    return group


def _members(c: Cluster, n: int, **config: Any) -> list[GroupConsumer]:
    members = [c.consumer(group_id="g", **config) for _ in range(n)]
    for m in members:
        m.subscribe(["orders"])
    c.wait_for(
        lambda: (
            all(m.state == "stable" and m.assignment() for m in members) and len(_group(c)["members"]) == n
        ),
        30_000,
        "the group to settle",
    )
    return members


def test_a_member_whose_coordinator_stops_answering_finds_the_new_one_and_keeps_its_place() -> None:
    # Kafka's heartbeat thread gives a silent coordinator up after session.timeout.ms and looks
    # the coordinator up again; the new one loaded the group, so nobody is removed.
    with checked_cluster(3, config={"zookeeper.session.timeout.ms": "3000"}) as c:
        c.create_topic("orders", partitions=2, replication_factor=3)
        members = _members(c, 2, session_timeout_ms=6000, heartbeat_interval_ms=2000)
        ids = [m.member_id for m in members]
        generation = _group(c)["generation"]
        coordinator = _group(c)["coordinator"]
        paused_at = c.now_ms
        c.pause_broker(coordinator)
        c.run_for(15_000)
        assert _group(c)["coordinator"] != coordinator
        gave_up = [e for e in c.events() if e.kind == "coordinator_unknown" and e.time_ms > paused_at]
        assert sorted(e.data["member"] for e in gave_up) == sorted(ids)
        # At most session.timeout.ms after the last heartbeat answer (one came at most 2 s before the pause).
        assert all(4000 <= e.time_ms - paused_at <= 6000 + 100 for e in gave_up)
        c.resume_broker(coordinator)
        c.run_for(40_000)  # the old coordinator comes back, and takes its partition back (preferred leader)
        assert [m.member_id for m in members] == ids
        assert _group(c)["generation"] == generation  # no rebalance through failover and failback
        assert not [e for e in c.events() if e.kind == "member_removed" and e.time_ms > paused_at]
        assert all(m.state == "stable" and m.assignment() for m in members)


def test_a_member_whose_coordinator_is_killed_during_its_join_finds_the_new_one_in_seconds() -> None:
    # The coordinator holds a first JoinGroup for group.initial.rebalance.delay.ms; killed then, its
    # connection closes and the member looks the coordinator up again at once, instead of waiting
    # out the JoinGroup's max.poll.interval.ms + request.timeout.ms (330 s).
    with checked_cluster(3) as c:
        c.create_topic("orders", partitions=2, replication_factor=3)
        warm = c.consumer(group_id="warm-up")  # makes __consumer_offsets
        warm.subscribe(["orders"])
        c.wait_for(lambda: warm.state == "stable", 30_000, "the warm-up member")
        member = c.consumer(group_id="g")
        member.subscribe(["orders"])
        c.wait_for(
            lambda: c.snapshot()["groups"].get("g", {}).get("state") == "PreparingRebalance", 5000, "the join"
        )
        coordinator = _group(c)["coordinator"]
        killed_at = c.now_ms
        c.kill_broker(coordinator)
        c.wait_for(lambda: member.state == "stable" and bool(member.assignment()), 60_000, "the member")
        assert _group(c)["coordinator"] != coordinator
        assert c.now_ms - killed_at < 12_000  # the new coordinator's election and the initial delay


def test_a_commit_that_hears_unknown_member_id_makes_the_member_join_again() -> None:
    with checked_cluster(3) as c:
        c.create_topic("orders", partitions=2, replication_factor=3)
        g, other = _members(c, 2, session_timeout_ms=2000, heartbeat_interval_ms=500)
        old = g.member_id
        mine = g.assignment()[0]
        coordinator = _group(c)["coordinator"]
        c.network.cut(g.client_id, coordinator)
        c.wait_for(lambda: old not in [m["member_id"] for m in _group(c)["members"]], 10_000)
        c.network.mend(g.client_id, coordinator)
        with pytest.raises(UnknownMemberId):
            g.commit({(mine.topic, mine.partition): 0})
        assert g.assignment() == []  # fenced: what it held may be someone else's now
        c.wait_for(lambda: g.state == "stable" and bool(g.assignment()), 20_000, "the member to rejoin")
        assert g.member_id not in ("", old)
        assert sorted(m["member_id"] for m in _group(c)["members"]) == sorted([g.member_id, other.member_id])
        fenced = [e for e in c.events() if e.kind == "member_fenced"]
        assert fenced
        assert fenced[0].data == {"member": old, "error": "UNKNOWN_MEMBER_ID"}


def test_a_static_member_removed_by_its_coordinator_rejoins_with_its_group_instance_id() -> None:
    with checked_cluster(3) as c:
        c.create_topic("orders", partitions=2, replication_factor=3)
        a = c.consumer(
            group_id="g", group_instance_id="billing-a", session_timeout_ms=2000, heartbeat_interval_ms=500
        )
        b = c.consumer(
            group_id="g", group_instance_id="billing-b", session_timeout_ms=2000, heartbeat_interval_ms=500
        )
        a.subscribe(["orders"])
        b.subscribe(["orders"])
        c.wait_for(lambda: a.state == b.state == "stable" and bool(a.assignment()), 30_000)
        old = a.member_id
        coordinator = _group(c)["coordinator"]
        c.network.cut(a.client_id, coordinator)
        c.wait_for(lambda: len(_group(c)["members"]) == 1, 10_000, "the coordinator to remove a")
        c.network.mend(a.client_id, coordinator)
        c.wait_for(lambda: a.state == "stable" and a.member_id not in ("", old), 40_000, "a to rejoin")
        by_instance = {m["instance_id"]: m["member_id"] for m in _group(c)["members"]}
        assert by_instance == {"billing-a": a.member_id, "billing-b": b.member_id}
        assert a.assignment()


def test_a_consumer_that_stops_polling_leaves_about_max_poll_interval_after_its_last_poll() -> None:
    with checked_cluster(3) as c:
        c.create_topic("orders", partitions=2, replication_factor=3)
        g = c.consumer(
            group_id="g",
            session_timeout_ms=10_000,
            heartbeat_interval_ms=3000,
            max_poll_interval_ms=5000,
            retry_backoff_ms=100,
        )
        g.subscribe(["orders"])
        for _ in range(30):
            g.poll(timeout_ms=100)
            if g.state == "stable" and g.assignment():
                break
        last_poll = c.now_ms
        c.run_for(8000)
        left = [e for e in c.events() if e.kind == "member_left"]
        assert len(left) == 1
        assert "max.poll.interval.ms=5000" in left[0].text
        # The heartbeat thread checks every retry.backoff.ms, not only at its heartbeats (every 3 s).
        assert 5000 <= left[0].time_ms - last_poll <= 5000 + 100
        removed = [e for e in c.events() if e.kind == "member_removed"]
        assert len(removed) == 1
        assert "left the group (consumer poll timeout has expired)" in removed[0].text  # a LeaveGroup
        assert removed[0].time_ms - left[0].time_ms <= 10  # not a session timeout
        assert _group(c)["members"] == []
        assert g.assignment() == []
        g.poll(timeout_ms=3000)  # it rejoins on its next poll
        c.wait_for(lambda: g.state == "stable" and len(g.assignment()) == 2, 10_000)
