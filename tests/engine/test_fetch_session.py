"""Incremental fetch sessions (KIP-227), as a student would check them: what followers send and
hear, that idle partitions stay in the ISR, and that a lost session costs nothing acknowledged."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from random import Random

import pytest

from lab.engine.cluster import Cluster
from lab.engine.fetch_session import (
    EVICTION_MS,
    FINAL_EPOCH,
    INITIAL_EPOCH,
    FetchSessionCache,
    FetchSessionHandler,
    next_epoch,
)
from lab.engine.ids import TopicPartition
from lab.engine.network import Envelope
from lab.engine.protocol import FetchPartition, FetchRequest, FetchResponse
from tests.engine.helpers import checked_cluster, hw, kinds, part, values

BUSY = TopicPartition("busy", 0)
IDLE = TopicPartition("idle", 0)


@contextmanager
def two_topics(brokers: int = 2, config: dict[str, object] | None = None) -> Iterator[Cluster]:
    """Topics ``busy`` and ``idle``, both led by broker 1 and followed by the others."""
    with checked_cluster(brokers, config=config) as c:
        replicas = list(range(1, brokers + 1))
        for topic in ("busy", "idle"):
            c.create_topic(topic, replication_factor=brokers, assignment={0: replicas})
        yield c


class Wiretap:
    """Every fetch between brokers, as it is sent (the network itself runs unchanged)."""

    def __init__(self, cluster: Cluster) -> None:
        self.sent: list[Envelope] = []
        network = cluster.network
        send = network.send

        def recording(*args: object, **kw: object) -> Envelope:
            env = send(*args, **kw)  # type: ignore[arg-type]
            if isinstance(env.body, FetchRequest | FetchResponse) and isinstance(env.src, int):
                self.sent.append(env)
            return env

        network.send = recording  # type: ignore[method-assign]

    def requests(self, src: int, dst: int) -> list[FetchRequest]:
        return [
            e.body for e in self.sent if e.src == src and e.dst == dst and isinstance(e.body, FetchRequest)
        ]

    def responses(self, src: int, dst: int) -> list[FetchResponse]:
        return [
            e.body for e in self.sent if e.src == src and e.dst == dst and isinstance(e.body, FetchResponse)
        ]


def test_a_follower_of_an_idle_partition_sends_it_no_more_once_the_session_is_made() -> None:
    with two_topics() as c:
        p = c.producer(acks="all")
        p.send("busy", "b0")
        p.send("idle", "i0")
        p.flush()
        # The follower hears the idle partition's new high watermark with the next answer it gets.
        p.send("busy", "b1")
        p.flush()
        tap = Wiretap(c)
        for i in range(2, 6):
            p.send("busy", f"b{i}")
            assert p.flush()
        c.run_for(100)

        asked = tap.requests(2, 1)
        assert len(asked) >= 4
        session_ids = {r.session_id for r in asked}
        assert len(session_ids) == 1
        assert 0 not in session_ids
        assert all(r.session_epoch > INITIAL_EPOCH for r in asked)
        assert [next_epoch(a.session_epoch) for a in asked[:-1]] == [a.session_epoch for a in asked[1:]]
        assert all(IDLE not in r.partitions for r in asked)  # the idle partition is never named
        assert any(BUSY in r.partitions for r in asked)
        heard = tap.responses(1, 2)
        assert all(IDLE not in r.partitions for r in heard)  # and never answered: nothing new
        assert all(r.session_id in session_ids for r in heard)
        assert values(c, 2, "busy") == [b"b0", b"b1", b"b2", b"b3", b"b4", b"b5"]


def test_an_idle_partition_in_a_session_keeps_its_follower_in_the_isr_and_wakes_on_new_data() -> None:
    with two_topics() as c:
        p = c.producer(acks="all")
        p.send("idle", "i0")
        p.flush()
        # Longer than replica.lag.time.max.ms (10 s here): the leader still counts the follower as
        # fetching the idle partition, from the session's fetch state.
        for i in range(30):
            p.send("busy", f"b{i}")
            c.run_for(1000)
        assert part(c, "idle", 0)["isr"] == [1, 2]
        tap = Wiretap(c)
        # New records on the idle partition wake the follower's waiting fetch at once.
        p.send("idle", "i1")
        assert p.flush(timeout_ms=100)
        assert values(c, 2, "idle") == [b"i0", b"i1"]
        assert any(IDLE in r.partitions for r in tap.responses(1, 2))
        assert all(r.session_epoch > INITIAL_EPOCH for r in tap.requests(2, 1))


def test_a_lost_session_answers_fetch_session_id_not_found_and_the_follower_fetches_in_full() -> None:
    with two_topics() as c:
        p = c.producer(acks="all")
        p.send("busy", "b0")
        p.send("idle", "i0")
        p.flush()
        c.run_for(100)
        leader = c.brokers[1]
        (old,) = leader.fetch_sessions.sessions
        # As the cache's eviction would: the leader forgets the session while a fetch waits on it.
        leader.fetch_sessions.sessions.clear()
        tap = Wiretap(c)
        p.send("busy", "b1")
        assert p.flush()
        c.run_for(100)
        heard = tap.responses(1, 2)
        asked = tap.requests(2, 1)
        first_error = next(i for i, r in enumerate(heard) if r.error is not None)
        assert heard[first_error].error == "FETCH_SESSION_ID_NOT_FOUND"
        assert heard[first_error].partitions == {}
        assert "fetch_session_reset" in kinds(c)
        # The next fetch is a full one (epoch 0: "make me a session"), naming every partition.
        full = next(r for r in asked if r.session_epoch == INITIAL_EPOCH)
        assert set(full.partitions) == {BUSY, IDLE}
        (new,) = leader.fetch_sessions.sessions
        assert new != old
        p.send("idle", "i1")
        p.send("busy", "b2")
        assert p.flush()
        c.run_for(100)
        # The follower goes on in the new session.
        assert tap.requests(2, 1)[-1].session_id == new
        assert tap.requests(2, 1)[-1].session_epoch > INITIAL_EPOCH
        assert values(c, 2, "busy") == [b"b0", b"b1", b"b2"]
        assert values(c, 2, "idle") == [b"i0", b"i1"]
        assert hw(c, 2, "busy") == 3


def test_a_follower_beyond_the_cache_slots_fetches_in_full_and_still_replicates() -> None:
    with two_topics(3, config={"max.incremental.fetch.session.cache.slots": "1"}) as c:
        p = c.producer(acks="all")
        tap = Wiretap(c)
        for i in range(5):
            p.send("busy", f"b{i}")
            assert p.flush()
        c.run_for(100)
        assert len(c.brokers[1].fetch_sessions.sessions) == 1
        (holder,) = (s.replica_id for s in c.brokers[1].fetch_sessions.sessions.values())
        other = 5 - holder  # brokers 2 and 3 follow
        assert all(r.session_epoch == INITIAL_EPOCH for r in tap.requests(other, 1))
        assert all(r.session_id == 0 for r in tap.responses(1, other))  # declined: the cache is full
        assert all(set(r.partitions) == {BUSY, IDLE} for r in tap.requests(other, 1))
        for b in (2, 3):
            assert values(c, b, "busy") == [b"b0", b"b1", b"b2", b"b3", b"b4"]
        assert part(c, "busy", 0)["isr"] == [1, 2, 3]


def test_a_leader_restart_drops_its_sessions_and_nothing_acknowledged_is_lost() -> None:
    with checked_cluster(3) as c:
        c.create_topic("orders", partitions=3, replication_factor=3, config={"min.insync.replicas": "2"})
        p = c.producer(acks="all")
        acked = []
        for i in range(20):
            acked.append(p.send("orders", f"a{i}"))
        assert p.flush()
        leader = c.leader_of("orders", 0)
        assert leader is not None
        assert c.brokers[leader].fetch_sessions.sessions  # its followers fetch in sessions
        c.kill_broker(leader)
        for i in range(20):
            acked.append(p.send("orders", f"b{i}"))
        assert p.flush(timeout_ms=30_000)
        c.restart_broker(leader)
        c.wait_for(lambda: all(len(part(c, "orders", q)["isr"]) == 3 for q in range(3)), 60_000)
        for i in range(20):
            acked.append(p.send("orders", f"c{i}"))
        assert p.flush(timeout_ms=30_000)
        c.run_for(1000)
        for q in range(3):
            want = sorted(f.result().offset for f in acked if f.result().partition == q)
            for b in (1, 2, 3):
                log = values(c, b, "orders", q)
                assert len(log) >= len(want)
                assert all(log[o] is not None for o in want)
            assert values(c, 1, "orders", q) == values(c, 2, "orders", q) == values(c, 3, "orders", q)
        # The restarted broker made its sessions anew (it led nothing for a while, then may again).
        restarted = c.brokers[leader]
        assert all(s.epoch >= 1 for s in restarted.fetch_sessions.sessions.values())


# ---------------------------------------------------------------------------- the cache itself


def _fetch(**kw: object) -> FetchRequest:
    base: dict[str, object] = {"replica_id": 2, "max_wait_ms": 500, "min_bytes": 1, "partitions": {}}
    base.update(kw)
    return FetchRequest(**base)  # type: ignore[arg-type]


def test_the_cache_answers_kafkas_errors_for_an_unknown_id_a_wrong_epoch_and_another_replica() -> None:
    cache = FetchSessionCache(10, Random(1))
    made = cache.new_context(
        _fetch(session_epoch=INITIAL_EPOCH, partitions={BUSY: FetchPartition(fetch_offset=0)}), 0
    )
    assert made.session is not None
    assert made.full
    sid = made.session.id
    unknown = cache.new_context(_fetch(session_id=sid + 1, session_epoch=1), 0)
    assert unknown.error is not None
    assert unknown.error.name == "FETCH_SESSION_ID_NOT_FOUND"
    wrong = cache.new_context(_fetch(session_id=sid, session_epoch=7), 0)
    assert wrong.error is not None
    assert wrong.error.name == "INVALID_FETCH_SESSION_EPOCH"
    stranger = cache.new_context(_fetch(replica_id=3, session_id=sid, session_epoch=1), 0)
    assert stranger.error is not None
    assert stranger.error.name == "FETCH_SESSION_ID_NOT_FOUND"
    # Errors change nothing: the right epoch still works, and reads the whole session.
    ok = cache.new_context(_fetch(session_id=sid, session_epoch=1), 0)
    assert ok.error is None
    assert not ok.full
    assert set(ok.request.partitions) == {BUSY}
    # Epoch -1 with the id closes it: a sessionless fetch.
    closed = cache.new_context(_fetch(session_id=sid, session_epoch=FINAL_EPOCH), 0)
    assert closed.session is None
    assert sid not in cache.sessions


def test_a_full_cache_declines_until_a_session_has_been_unused_for_two_minutes() -> None:
    cache = FetchSessionCache(1, Random(1))
    first = cache.new_context(_fetch(session_epoch=INITIAL_EPOCH), 0)
    assert first.session is not None
    assert (
        cache.new_context(_fetch(replica_id=3, session_epoch=INITIAL_EPOCH), EVICTION_MS - 1).session is None
    )
    later = cache.new_context(_fetch(replica_id=3, session_epoch=INITIAL_EPOCH), EVICTION_MS)
    assert later.session is not None
    assert list(cache.sessions) == [later.session.id]
    assert cache.evictions == 1


def test_an_incremental_answer_names_a_quiet_partition_once_when_its_high_watermark_moves() -> None:
    with two_topics() as c:
        p = c.producer(acks="all")
        p.send("busy", "b0")
        p.send("idle", "i0")
        p.flush()
        p.send("busy", "b1")
        p.flush()
        tap = Wiretap(c)
        p.send("idle", "i1")  # the follower fetches it; its next fetch moves the leader's HW to 2
        p.flush()
        for i in range(2, 5):
            p.send("busy", f"b{i}")
            p.flush()
        told = [r.partitions[IDLE] for r in tap.responses(1, 2) if IDLE in r.partitions]
        # Once with the record, once with the new high watermark alone; then nothing new to say.
        assert [(d.record_count, d.high_watermark) for d in told] == [(1, 1), (0, 2)]
        assert hw(c, 2, "idle") == 2


def test_the_follower_sends_only_what_changed_and_forgets_what_it_stopped_fetching() -> None:
    handler = FetchSessionHandler()
    a, b = FetchPartition(fetch_offset=0), FetchPartition(fetch_offset=0)
    first, reads = handler.request(2, 500, {BUSY: a, IDLE: b}, [BUSY, IDLE])
    assert (first.session_id, first.session_epoch) == (0, INITIAL_EPOCH)
    assert set(first.partitions) == {
        BUSY,
        IDLE,
    }
    assert handler.handle_response(FetchResponse(partitions={}, session_id=42))
    moved = FetchPartition(fetch_offset=5)
    second, reads = handler.request(2, 500, {BUSY: moved}, [BUSY, IDLE])
    assert (second.session_id, second.session_epoch) == (42, 1)
    assert dict(second.partitions) == {BUSY: moved}
    assert second.forgotten == ()
    assert dict(reads) == {BUSY: moved, IDLE: b}
    assert handler.handle_response(FetchResponse(partitions={}, session_id=42))
    third, reads = handler.request(2, 500, {}, [BUSY])
    assert third.session_epoch == 2
    assert third.forgotten == (IDLE,)
    assert dict(reads) == {BUSY: moved}
    assert not handler.handle_response(FetchResponse(partitions={}, error="INVALID_FETCH_SESSION_EPOCH"))
    fourth, _ = handler.request(2, 500, {BUSY: moved}, [BUSY])
    # A full fetch that also closes the old session at the leader.
    assert (fourth.session_id, fourth.session_epoch) == (42, INITIAL_EPOCH)


@pytest.mark.parametrize(("epoch", "after"), [(1, 2), (2**31 - 1, 1)])
def test_epochs_wrap_past_int32_to_one(epoch: int, after: int) -> None:
    assert next_epoch(epoch) == after
