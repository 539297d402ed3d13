"""The data-loss cases the lab reproduces (KAFKA-FACTS.md), and the settings that prevent them."""

from __future__ import annotations

from lab.engine.cluster import Cluster
from lab.engine.invariants import lost_acknowledged
from tests.engine.helpers import hw, leo, part, texts, values


def _jepsen(*, unclean: bool, min_isr: int) -> Cluster:
    """The ISR shrinks to the leader alone; it keeps acknowledging acks=all; then it dies."""
    c = Cluster.create(brokers=3, seed=1)
    c.create_topic(
        "t",
        replication_factor=3,
        config={"min.insync.replicas": str(min_isr), "unclean.leader.election.enable": str(unclean).lower()},
    )
    p = c.producer(acks="all", retries=0)
    for i in range(3):
        p.send("t", f"before-{i}")
    p.flush()
    c.isolate_broker(2, from_="brokers")
    c.isolate_broker(3, from_="brokers")
    # Writes keep coming; the followers cannot fetch them; after replica.lag.time.max.ms the
    # leader drops them from the ISR, and the waiting writes are acknowledged by the leader alone.
    after = [p.send("t", f"after-{i}") for i in range(4)]
    c.wait_for(lambda: part(c, "t", 0)["isr"] == [1], 20_000)
    p.flush()
    c.kill_broker(1)
    c.heal(2)
    c.heal(3)
    c.run_for(15_000)
    c.acked_after_shrink = [f.result().offset for f in after if f.exception() is None]  # type: ignore[attr-defined]
    return c


def test_jepsen_2013_unclean_election_loses_acknowledged_writes_and_says_which() -> None:
    c = _jepsen(unclean=True, min_isr=1)
    try:
        assert c.acked_after_shrink == [3, 4, 5, 6]  # type: ignore[attr-defined]
        state = part(c, "t", 0)
        assert state["leader"] == 2
        assert state["leader_epoch"] == 1
        assert any("unclean election" in t for t in texts(c, "leader_election"))
        assert c.lost_records() == {"t-0": [3, 4, 5, 6]}
        lost = texts(c, "records_lost")
        assert lost
        assert "offsets 3..6" in lost[0]
        assert "broker 2" in lost[0]
        assert values(c, 2, "t") == [b"before-0", b"before-1", b"before-2"]
    finally:
        c.close()


def test_a_loss_stays_reported_after_the_new_leader_writes_the_same_offsets_again() -> None:
    c = _jepsen(unclean=True, min_isr=1)
    try:
        assert c.lost_records() == {"t-0": [3, 4, 5, 6]}
        p = c.producer(acks="all")
        reused = [p.send("t", f"new-{i}") for i in range(6)]
        p.flush()
        assert [f.result().offset for f in reused] == [3, 4, 5, 6, 7, 8]  # the lost offsets, written again
        c.run_for(1000)
        assert c.lost_records() == {"t-0": [3, 4, 5, 6]}
        details = {lost.record.offset: lost.record.value for lost in c.ledger.losses[_tp()].newest}
        assert details == {3: b"after-0", 4: b"after-1", 5: b"after-2", 6: b"after-3"}
        assert c.snapshot()["lost_records"][0]["count"] == 4
        assert len(texts(c, "records_lost")) == 1  # found once, said once
    finally:
        c.close()


def test_jepsen_fix_min_insync_2_and_clean_election_lose_nothing() -> None:
    c = _jepsen(unclean=False, min_isr=2)
    try:
        assert c.acked_after_shrink == []  # type: ignore[attr-defined]  # NOT_ENOUGH_REPLICAS_AFTER_APPEND
        assert part(c, "t", 0)["leader"] == -1  # offline rather than wrong
        assert c.lost_records() == {}
        c.restart_broker(1)
        c.wait_for(lambda: part(c, "t", 0)["leader"] == 1, 20_000)
        assert c.lost_records() == {}
    finally:
        c.close()


def _kip101_case1(*, epochs: bool) -> Cluster:
    """Leader A=2 and follower B=1 (the controller) hold m1, m2; A's HW is 2, B learned only 1.

    B restarts and becomes A's follower again (truncating to its HW without epochs);
    A dies before B fetches again; B becomes leader.
    """
    c = Cluster.create(brokers=3, seed=3, config={"lab.leader.epochs": str(epochs).lower()})
    assert c.controller_id() == 1
    c.create_topic("t", assignment={0: [2, 1]})
    c.kill_broker(3)  # out of the way: the two-broker story
    p = c.producer(acks="all")
    p.send("t", "m1")
    p.flush()
    c.run_for(2000)  # B learns HW 1 and checkpoints it
    p.send("t", "m2")
    p.flush()
    assert (hw(c, 2, "t"), hw(c, 1, "t")) == (2, 1)
    c.kill_broker(1)
    c.restart_broker(1)  # it re-registers the moment ZooKeeper expires its old session
    c.wait_for(
        lambda: (
            c.controller_id() == 2 and c.brokers[1].partitions and c.brokers[1].partitions[_tp()].leader == 2
        ),
        20_000,
    )
    # B now follows A again. Kill A before B's next fetch can reach it.
    c.kill_broker(2)
    c.wait_for(lambda: c.leader_of("t", 0) == 1, 20_000)
    return c


def _tp():  # type: ignore[no-untyped-def]
    from lab.engine.ids import TopicPartition

    return TopicPartition("t", 0)


def test_kip101_case1_without_leader_epochs_hw_truncation_loses_m2() -> None:
    c = _kip101_case1(epochs=False)
    try:
        assert any("pre-KIP-101: truncate to own HW" in t for t in texts(c, "truncated"))
        assert values(c, 1, "t") == [b"m1"]
        assert c.lost_records() == {"t-0": [1]}
    finally:
        c.close()


def test_kip101_case1_with_leader_epochs_keeps_m2() -> None:
    c = _kip101_case1(epochs=True)
    try:
        assert values(c, 1, "t") == [b"m1", b"m2"]
        assert c.lost_records() == {}
    finally:
        c.close()


def _kip101_case2(*, epochs: bool) -> Cluster:
    """A=2 holds m1, m2 (flushed); B=3 holds m1, m2 but loses m2 in a power cut. B comes back first and
    writes m3 at offset 1; then A comes back."""
    c = Cluster.create(brokers=3, seed=5, config={"lab.leader.epochs": str(epochs).lower()})
    c.create_topic("t", assignment={0: [2, 3]})
    p = c.producer(acks="all")
    p.send("t", "m1")
    p.flush()
    for b in (2, 3):
        c.brokers[b].flush_logs()
    p.send("t", "m2")
    p.flush()
    c.run_for(2000)
    c.brokers[2].flush_logs()  # A has m2 on disk; B only in its page cache
    c.brokers[2].checkpoint()
    c.kill_broker(2)
    c.wait_for(lambda: c.leader_of("t", 0) == 3, 20_000)
    c.kill_broker(3, lose_unflushed=True)
    c.wait_for(lambda: part(c, "t", 0)["leader"] == -1, 20_000)
    c.restart_broker(3)
    c.wait_for(lambda: c.leader_of("t", 0) == 3, 20_000)
    p2 = c.producer(acks="1")
    m3 = p2.send("t", "m3")
    p2.flush()
    assert m3.result().offset == 1
    c.restart_broker(2)
    c.wait_for(lambda: 2 in part(c, "t", 0)["isr"], 30_000)
    return c


def test_kip101_case2_without_leader_epochs_the_replicas_diverge() -> None:
    c = _kip101_case2(epochs=False)
    try:
        assert values(c, 3, "t") == [b"m1", b"m3"]
        assert values(c, 2, "t") == [b"m1", b"m2"]  # same offset, different record: divergence
    finally:
        c.close()


def test_kip101_case2_with_leader_epochs_the_follower_truncates_to_the_leader() -> None:
    c = _kip101_case2(epochs=True)
    try:
        assert values(c, 2, "t") == [b"m1", b"m3"]
        assert any("KIP-101" in t for t in texts(c, "truncated"))
    finally:
        c.close()


def test_kip966_last_replica_standing_loses_committed_data_everywhere() -> None:
    c = Cluster.create(brokers=3, seed=9)
    try:
        c.create_topic("t", replication_factor=3, config={"min.insync.replicas": "2"})
        p = c.producer(acks="all")
        for i in range(3):
            p.send("t", f"early-{i}")
        p.flush()
        for b in (1, 2, 3):
            c.brokers[b].flush_logs()
        committed = [p.send("t", f"late-{i}") for i in range(3)]
        p.flush()
        assert [f.result().offset for f in committed] == [3, 4, 5]
        c.isolate_broker(2, from_="brokers")
        c.isolate_broker(3, from_="brokers")
        refused = p.send("t", "refused")  # nobody fetches it: the ISR shrinks to {1}
        c.wait_for(lambda: part(c, "t", 0)["isr"] == [1], 20_000)
        p.flush()
        assert refused.exception() is not None
        c.kill_broker(1, lose_unflushed=True)  # its unflushed tail (offsets 3..5) is gone
        c.heal(2)
        c.heal(3)
        c.run_for(8000)
        assert part(c, "t", 0)["leader"] == -1  # 2 and 3 are not in the ISR: no clean leader
        c.restart_broker(1)
        c.wait_for(lambda: part(c, "t", 0)["isr"] == [1, 2, 3], 40_000)
        for b in (1, 2, 3):
            assert values(c, b, "t") == [b"early-0", b"early-1", b"early-2"]
        assert lost_acknowledged(c)
        assert c.lost_records() == {"t-0": [3, 4, 5]}
        assert leo(c, 2, "t") == 3
    finally:
        c.close()
