"""Replication as Kafka 3.x does it, checked the way a student would check it."""

from __future__ import annotations

import pytest

from lab.engine.errors import (
    NotEnoughReplicas,
    NotEnoughReplicasAfterAppend,
    RequestTimedOut,
)
from lab.engine.ids import TopicPartition
from lab.engine.network import Endpoint
from lab.engine.protocol import ProduceRequest, ProduceResponse
from lab.engine.records import build_batch
from tests.engine.helpers import checked_cluster, hw, leo, part, texts, values


def test_worked_example_hw_is_the_smallest_leo_in_the_isr() -> None:
    with checked_cluster(3) as c:
        c.create_topic("orders", partitions=1, replication_factor=3)
        p = c.producer(acks="all")
        for i in range(3):
            p.send("orders", f"m{i}")
        p.flush()
        c.run_for(1000)  # followers learn the HW on their next fetch
        for b in (1, 2, 3):
            assert (leo(c, b, "orders"), hw(c, b, "orders")) == (3, 3)

        # Record 3 reaches both followers; then follower 3 is cut off, so record 4 reaches follower 2 only.
        p1 = c.producer(acks="1")
        p1.send("orders", "m3")
        # Both fetched it, and the leader heard so from their next fetches: HW 4.
        c.wait_for(lambda: hw(c, 1, "orders") == 4, 1000)
        c.isolate_broker(3, from_="brokers")
        p1.send("orders", "m4")
        c.wait_for(lambda: leo(c, 2, "orders") == 5, 1000)
        assert [leo(c, b, "orders") for b in (1, 2, 3)] == [5, 5, 4]
        assert hw(c, 1, "orders") == 4
        assert part(c, "orders", 0)["isr"] == [1, 2, 3]

        consumer = c.consumer()
        consumer.assign([("orders", 0)])
        consumer.seek("orders", 0, 0)
        seen = [r.offset for r in consumer.poll(timeout_ms=500)]
        seen += [r.offset for r in consumer.poll(timeout_ms=500)]
        assert seen == [0, 1, 2, 3]  # offset 4 is above the HW: not visible yet

        c.heal(3)
        c.wait_for(lambda: leo(c, 3, "orders") == 5, 15_000)
        c.run_for(10)
        assert hw(c, 1, "orders") == 5
        assert [r.offset for r in consumer.poll(timeout_ms=1000)] == [4]


def test_followers_learn_the_high_watermark_one_round_late() -> None:
    with checked_cluster(2) as c:
        c.create_topic("t", replication_factor=2)
        p = c.producer(acks="all")
        p.send("t", "a")
        p.flush()
        assert hw(c, 1, "t") == 1  # the leader moved it when the follower fetched at offset 1
        assert hw(c, 2, "t") == 0  # the follower hears of it in the next fetch response
        c.run_for(600)  # replica.fetch.wait.max.ms passes: that response arrives
        assert hw(c, 2, "t") == 1


def _raw_produce(c, broker: int, topic: str, *, acks: int = 1) -> ProduceResponse:
    answers: list[object] = []
    ep = Endpoint(c.network, c.scheduler, "tester", lambda env: None)
    batch = build_batch([(None, b"x")], timestamp_ms=c.now_ms)
    ep.request(
        broker,
        ProduceRequest(acks=acks, timeout_ms=1000, partitions={TopicPartition(topic, 0): batch}),
        answers.append,
        timeout_ms=2000,
    )
    c.wait_for(lambda: bool(answers), 3000)
    ep.close()
    assert isinstance(answers[0], ProduceResponse)
    return answers[0]


def test_only_the_leader_takes_writes() -> None:
    with checked_cluster(3) as c:
        c.create_topic("t", replication_factor=3)
        assert part(c, "t", 0)["leader"] == 1
        answer = _raw_produce(c, 2, "t").partitions[TopicPartition("t", 0)]
        assert answer.error == "NOT_LEADER_OR_FOLLOWER"
        assert leo(c, 2, "t") == 0
        assert leo(c, 1, "t") == 0
        assert _raw_produce(c, 1, "t").partitions[TopicPartition("t", 0)].error is None


def test_acks_all_is_refused_when_the_isr_is_below_min_insync_replicas() -> None:
    with checked_cluster(3) as c:
        c.create_topic("t", replication_factor=3, config={"min.insync.replicas": "2"})
        c.kill_broker(2)
        c.kill_broker(3)
        c.wait_for(lambda: part(c, "t", 0)["isr"] == [1], 20_000)
        strict = c.producer(acks="all", retries=0)
        f = strict.send("t", "x")
        c.run_for(100)
        with pytest.raises(NotEnoughReplicas, match=r"min\.insync\.replicas=2"):
            f.result()
        assert leo(c, 1, "t") == 0  # refused before the append
        loose = c.producer(acks="1")
        g = loose.send("t", "y")
        c.run_for(100)
        assert g.result().offset == 0


def test_isr_shrinking_during_the_wait_gives_not_enough_replicas_after_append() -> None:
    with checked_cluster(3) as c:
        c.create_topic("t", replication_factor=3, config={"min.insync.replicas": "2"})
        c.isolate_broker(2, from_="brokers")
        c.isolate_broker(3, from_="brokers")
        p = c.producer(acks="all", retries=0)
        f = p.send("t", "x")
        c.run_for(20_000)  # replica.lag.time.max.ms (10 s in the lab) passes: the leader drops both
        assert part(c, "t", 0)["isr"] == [1]
        with pytest.raises(NotEnoughReplicasAfterAppend):
            f.result()
        assert leo(c, 1, "t") == 1  # it was written, but never acknowledged


def test_a_leader_that_cannot_shrink_its_isr_times_the_request_out() -> None:
    with checked_cluster(3) as c:
        c.create_topic("t", replication_factor=3, config={"min.insync.replicas": "2"})
        c.isolate_broker(2, from_="brokers")
        c.isolate_broker(3, from_="brokers")
        c.isolate_broker(1, from_="zookeeper")  # the ISR write cannot reach ZooKeeper
        p = c.producer(acks="all", retries=0, request_timeout_ms=12_000)
        f = p.send("t", "x")
        c.run_for(13_000)
        with pytest.raises(RequestTimedOut):
            f.result()
        c.run_for(3_000)  # the ISR expiration check tries, and fails, to drop the followers
        assert any(
            "could not write the ISR of t-0 [1, 2, 3] -> [1]" in t for t in texts(c, "isr_update_failed")
        )


def test_a_slow_follower_leaves_the_isr_and_rejoins_when_it_catches_up() -> None:
    with checked_cluster(3) as c:
        c.create_topic("t", replication_factor=3)
        c.slow_broker(3, delay_ms=12_000)
        p = c.producer(acks="1")
        for _ in range(20):
            p.send("t", "x")
            c.run_for(1000)
        assert part(c, "t", 0)["isr"] == [1, 2]
        shrink = texts(c, "isr_shrink")[0]
        assert "broker 3 not caught up" in shrink
        (event,) = [e for e in c.events() if e.kind == "isr_shrink"]
        assert (event.data["old_isr"], event.data["isr"]) == ([1, 2, 3], [1, 2])  # who left, for filters
        assert "replica.lag.time.max.ms=10000" in shrink
        c.heal(3)
        c.wait_for(lambda: part(c, "t", 0)["isr"] == [1, 2, 3], 40_000)
        assert "broker 3 caught up" in texts(c, "isr_expand")[0]


def test_failover_elects_the_first_live_isr_replica_in_assignment_order() -> None:
    with checked_cluster(3) as c:
        c.create_topic("t", partitions=3, replication_factor=3)
        assert part(c, "t", 1)["replicas"] == [2, 3, 1]
        p = c.producer(acks="all")
        sent = [p.send("t", f"v{i}", partition=1) for i in range(5)]
        p.flush()
        c.kill_broker(2)
        c.wait_for(lambda: part(c, "t", 1)["leader"] == 3, 10_000)
        state = part(c, "t", 1)
        assert state["leader_epoch"] == 1
        assert state["isr"] == [3, 1]
        election = [t for t in texts(c, "leader_election") if "t-1 leader 2 -> 3" in t]
        assert election
        (event,) = [e for e in c.events() if e.kind == "leader_election" and e.data.get("old_leader") == 2]
        assert (event.data["leader"], event.data["old_isr"], event.data["isr"]) == (3, [2, 3, 1], [3, 1])
        assert "leader_epoch 0 -> 1" in election[0]
        assert "isr [2, 3, 1] -> [3, 1]" in election[0]
        assert values(c, 3, "t", 1) == [f"v{i}".encode() for i in range(5)]
        assert [f.result().offset for f in sent] == [0, 1, 2, 3, 4]


def test_no_live_isr_member_means_offline_until_it_returns() -> None:
    with checked_cluster(3) as c:
        c.create_topic("t", replication_factor=2, config={"min.insync.replicas": "1"})
        c.isolate_broker(2, from_="brokers")
        p = c.producer(acks="all")
        f = p.send("t", "only-on-1")  # follower 2 cannot fetch it: after the lag time it leaves the ISR
        c.wait_for(lambda: part(c, "t", 0)["isr"] == [1], 20_000)
        p.flush()
        assert f.result().offset == 0
        c.heal(2)
        c.kill_broker(1)
        c.wait_for(lambda: part(c, "t", 0)["leader"] == -1, 10_000)
        state = part(c, "t", 0)
        assert state["offline"]
        assert state["isr"] == [1]
        c.restart_broker(1)
        c.wait_for(lambda: part(c, "t", 0)["leader"] == 1, 20_000)
        assert values(c, 1, "t") == [b"only-on-1"]
        assert c.lost_records() == {}


def test_paced_fetches_let_a_class_watch_the_hw_trail_the_leo() -> None:
    with checked_cluster(3, config={"lab.replica.fetch.pace.ms": "1000"}) as c:
        c.create_topic("t", replication_factor=3)
        c.run_for(1500)  # the followers settle into their paced rhythm
        p = c.producer(acks="1")
        p.send("t", "x")
        p.flush()
        trailing = []
        for _ in range(30):
            c.run_for(50)
            trailing.append(leo(c, 1, "t") - hw(c, 1, "t"))
        assert max(trailing) == 1  # visible for a while: written, not yet committed
        assert trailing[-1] == 0  # then the followers' paced fetches catch up


def test_fast_mode_followers_are_woken_by_new_data() -> None:
    with checked_cluster(3) as c:
        c.create_topic("t", replication_factor=3)
        c.run_for(2000)
        p = c.producer(acks="all")
        f = p.send("t", "x")
        p.flush()
        # acks=all completed within a few milliseconds: the followers' long polls were answered at once.
        assert f.result().offset == 0
        assert c.now_ms - f.result().timestamp < 20


def test_retention_empties_an_idle_partition_on_every_replica() -> None:
    # Kafka rolls the active segment when every segment has expired: an idle partition ends with its
    # log start offset at its log end offset, on the leader and, through the fetch, on the followers.
    from lab.engine.storage.checkpoints import OffsetCheckpointFile

    broker_config = {"log.retention.check.interval.ms": "500"}
    with checked_cluster(3, config=broker_config) as c:
        c.create_topic("t", replication_factor=3, config={"retention.ms": "2000", "segment.bytes": "300"})
        p = c.producer(acks="all")
        for i in range(12):
            p.send("t", f"record-{i:02d}", partition=0)
            p.flush()
        c.run_for(500)
        for b in (1, 2, 3):
            assert len(c.brokers[b].partitions[TopicPartition("t", 0)].log.segments) > 1
        c.run_for(4000)  # nothing new arrives: every record expires
        logs = part(c, "t", 0)["logs"]
        assert {b: (v["log_start_offset"], v["log_end_offset"]) for b, v in logs.items()} == {
            "1": (12, 12),
            "2": (12, 12),
            "3": (12, 12),
        }
        for b in (1, 2, 3):
            log = c.brokers[b].partitions[TopicPartition("t", 0)].log
            assert [(s.base_offset, s.size_in_bytes) for s in log.segments] == [(12, 0)]
            assert values(c, b, "t") == []
            checkpoint = OffsetCheckpointFile(c.brokers[b].log_dir / "log-start-offset-checkpoint").read()
            assert checkpoint[("t", 0)] == 12
        assert any("the log holds no record now" in t for t in texts(c, "retention"))
        reader = c.consumer(auto_offset_reset="earliest")
        reader.assign([("t", 0)])
        assert reader.poll(timeout_ms=500) == []
        assert c.lost_records() == {}  # deleted on purpose, not lost
        p.send("t", "after", partition=0)
        p.flush()
        assert [(r.offset, r.value) for r in reader.poll(timeout_ms=1000)] == [(12, b"after")]


def test_an_idle_compacted_topic_drops_its_tombstone_on_every_replica() -> None:
    # KIP-534: each replica's cleaner stamps the tombstone's batch with a delete horizon when it first
    # keeps it; past the horizon the log is cleanable even with nothing dirty, so the tombstone goes
    # although nothing new is written.
    broker_config = {"log.retention.check.interval.ms": "500"}
    topic_config = {"cleanup.policy": "compact", "segment.bytes": "150", "delete.retention.ms": "3000"}
    with checked_cluster(3, config=broker_config) as c:
        c.create_topic("prices", replication_factor=3, config=topic_config)
        p = c.producer(acks="all")
        for key, value in [("a", "1"), ("b", "1"), ("a", None), ("c", "1"), ("d", "1")]:
            p.send("prices", value, key=key, partition=0)
            p.flush()
        c.run_for(1000)  # the cleaners run: a=1 goes, its tombstone stays
        for b in (1, 2, 3):
            assert values(c, b, "prices") == [b"1", None, b"1", b"1"]
        assert any("stay until" in t for t in texts(c, "compaction"))
        c.run_for(3500)  # no writes at all: only the delete horizons pass
        for b in (1, 2, 3):
            assert values(c, b, "prices") == [b"1", b"1", b"1"]
        assert any("tombstone(s) past their delete horizon removed" in t for t in texts(c, "compaction"))
