"""One replica of one partition, as Kafka's Partition keeps it: HW, ISR and leader epoch over a real log."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.engine.errors import (
    FencedLeaderEpoch,
    NotEnoughReplicas,
    NotEnoughReplicasAfterAppend,
    NotLeaderOrFollower,
    OffsetOutOfRange,
    UnknownLeaderEpoch,
)
from lab.engine.ids import TopicPartition
from lab.engine.partition import UNKNOWN, FollowerState, Partition
from lab.engine.protocol import PartitionStateInfo
from lab.engine.records import build_batch
from lab.engine.storage import LogConfig, PartitionLog

TP = TopicPartition("orders", 0)
LAG = 10_000  # replica.lag.time.max.ms in the lab


def _log(tmp_path: Path, broker: int = 1) -> PartitionLog:
    return PartitionLog.open(tmp_path / f"broker-{broker}" / "orders-0", LogConfig(), now_ms=0)


def _state(
    *,
    leader: int = 1,
    epoch: int = 0,
    isr: tuple[int, ...] = (1, 2, 3),
    replicas: tuple[int, ...] = (1, 2, 3),
    zk_version: int = 0,
) -> PartitionStateInfo:
    return PartitionStateInfo(
        tp=TP,
        leader=leader,
        leader_epoch=epoch,
        isr=isr,
        zk_version=zk_version,
        replicas=replicas,
        controller_epoch=1,
    )


def _records(n: int, *, start: int = 0) -> bytes:
    return build_batch([(None, b"v%d" % (start + i)) for i in range(n)], timestamp_ms=0)


def _leader(
    tmp_path: Path,
    *,
    isr: tuple[int, ...] = (1, 2, 3),
    replicas: tuple[int, ...] = (1, 2, 3),
    epoch: int = 0,
    zk_version: int = 0,
) -> Partition:
    p = Partition(TP, 1, _log(tmp_path))
    assert p.make_leader(_state(isr=isr, replicas=replicas, epoch=epoch, zk_version=zk_version), now_ms=0)
    return p


def _fetch(p: Partition, follower: int, offset: int, now_ms: int) -> None:
    p.update_follower_fetch_state(follower, fetch_offset=offset, log_start_offset=0, now_ms=now_ms)


# Becoming leader or follower


def test_make_leader_takes_the_controllers_state_and_tracks_the_other_replicas(tmp_path: Path) -> None:
    p = _leader(tmp_path, epoch=3, zk_version=7)
    assert p.is_leader
    assert (p.leader, p.leader_epoch, p.isr, p.replicas, p.zk_version) == (1, 3, (1, 2, 3), (1, 2, 3), 7)
    assert sorted(p.followers) == [2, 3]
    assert all(f.log_end_offset == UNKNOWN for f in p.followers.values())


def test_a_new_leader_records_where_its_epoch_starts(tmp_path: Path) -> None:
    p = Partition(TP, 1, _log(tmp_path))
    p.make_follower(_state(leader=2, epoch=0))
    p.append_as_follower(
        build_batch([(None, b"a"), (None, b"b")], timestamp_ms=0, partition_leader_epoch=0),
        leader_high_watermark=2,
        leader_log_start_offset=0,
        now_ms=0,
    )
    assert p.make_leader(_state(leader=1, epoch=1), now_ms=10)
    assert p.leader_epoch_start_offset == 2  # KIP-101: epoch 1 starts at the log end offset
    assert p.log.leader_epoch_cache.latest_epoch == 1
    assert p.log.epoch_for_offset(2) == 1


def test_make_leader_again_at_the_same_epoch_is_not_a_new_leadership(tmp_path: Path) -> None:
    p = _leader(tmp_path, epoch=2)
    _fetch(p, 2, 0, 5)
    assert p.make_leader(_state(epoch=2, zk_version=4), now_ms=10) is False
    assert p.zk_version == 4  # the state is taken...
    assert p.followers[2].last_fetch_time_ms == 5  # ...but what it knew of its followers stays
    assert p.make_leader(_state(epoch=3), now_ms=20) is True


def test_make_follower_says_whether_the_leader_or_epoch_changed(tmp_path: Path) -> None:
    p = _leader(tmp_path)
    assert p.make_follower(_state(leader=2, epoch=1)) is True
    assert not p.is_leader
    assert p.followers == {}
    assert p.pending_isr is None
    assert p.make_follower(_state(leader=2, epoch=1, zk_version=3)) is False
    assert p.make_follower(_state(leader=3, epoch=2)) is True


# The high watermark


def test_the_high_watermark_is_the_smallest_log_end_offset_in_the_isr(tmp_path: Path) -> None:
    p = _leader(tmp_path)
    p.append_records_to_leader(_records(5), acks=1, now_ms=0)
    assert p.log_end_offset == 5
    _fetch(p, 2, 5, 10)
    _fetch(p, 3, 3, 10)
    assert p.maybe_increment_high_watermark()
    assert p.high_watermark == 3
    _fetch(p, 3, 5, 20)
    assert p.maybe_increment_high_watermark()
    assert p.high_watermark == 5
    assert not p.maybe_increment_high_watermark()  # nothing new: no change


def test_a_follower_outside_the_isr_does_not_hold_the_high_watermark(tmp_path: Path) -> None:
    p = _leader(tmp_path, isr=(1, 2))
    p.append_records_to_leader(_records(4), acks=1, now_ms=0)
    _fetch(p, 2, 4, 10)
    _fetch(p, 3, 0, 10)  # far behind, but not in the ISR
    p.maybe_increment_high_watermark()
    assert p.high_watermark == 4


def test_a_follower_whose_log_end_is_unknown_holds_the_high_watermark(tmp_path: Path) -> None:
    # A broker restarts with 5 records and a checkpointed HW of 2, and becomes leader.
    log = _log(tmp_path)
    log.append_as_leader(_records(5), leader_epoch=0, now_ms=0)
    p = Partition(TP, 1, log, high_watermark=2)
    p.make_leader(_state(epoch=1), now_ms=0)
    assert p.high_watermark == 2  # its followers have not fetched yet: nothing proves they have 2..4
    _fetch(p, 2, 5, 10)
    p.maybe_increment_high_watermark()
    assert p.high_watermark == 2  # follower 3 is still unknown
    _fetch(p, 3, 4, 10)
    p.maybe_increment_high_watermark()
    assert p.high_watermark == 4


def test_the_high_watermark_never_moves_back(tmp_path: Path) -> None:
    p = _leader(tmp_path, isr=(1, 2))
    p.append_records_to_leader(_records(5), acks=1, now_ms=0)
    _fetch(p, 2, 5, 10)
    p.maybe_increment_high_watermark()
    assert p.high_watermark == 5
    _fetch(p, 2, 3, 20)  # a follower that fetches from lower down (it truncated)
    assert not p.maybe_increment_high_watermark()
    assert p.high_watermark == 5


def test_a_restored_high_watermark_stays_within_the_log(tmp_path: Path) -> None:
    log = _log(tmp_path)
    log.append_as_leader(_records(3), leader_epoch=0, now_ms=0)
    assert Partition(TP, 1, log, high_watermark=99).high_watermark == 3


def test_a_follower_never_moves_the_high_watermark_itself(tmp_path: Path) -> None:
    p = Partition(TP, 2, _log(tmp_path))
    p.make_follower(_state(leader=1))
    assert not p.maybe_increment_high_watermark()


# Shrinking the ISR


def test_a_follower_that_stops_fetching_leaves_the_isr_after_replica_lag_time_max_ms(tmp_path: Path) -> None:
    p = _leader(tmp_path)
    p.append_records_to_leader(_records(3), acks=1, now_ms=0)
    _fetch(p, 2, 3, 100)
    _fetch(p, 3, 3, 100)  # both caught up at t=100
    p.append_records_to_leader(_records(2, start=3), acks=1, now_ms=200)
    _fetch(p, 2, 5, 300)  # broker 2 keeps up; broker 3 goes quiet
    assert p.maybe_shrink_isr(now_ms=100 + LAG, max_lag_ms=LAG) is None  # exactly the limit: still in
    change = p.maybe_shrink_isr(now_ms=100 + LAG + 1, max_lag_ms=LAG)
    assert change is not None
    assert (change.old_isr, change.new_isr) == ((1, 2, 3), (1, 2))
    assert "replica.lag.time.max.ms=10000" in change.reason
    assert "broker 3" in change.reason
    assert p.isr == (1, 2, 3)  # proposed, not adopted until ZooKeeper has it
    assert p.pending_isr == (1, 2)


def test_a_follower_at_the_leaders_end_stays_in_sync_however_long_it_is_quiet(tmp_path: Path) -> None:
    p = _leader(tmp_path)
    p.append_records_to_leader(_records(3), acks=1, now_ms=0)
    _fetch(p, 2, 3, 10)
    _fetch(p, 3, 3, 10)
    assert p.maybe_shrink_isr(now_ms=10 * LAG, max_lag_ms=LAG) is None  # nothing new was written


def test_a_follower_that_reaches_the_leaders_end_as_of_its_previous_fetch_is_caught_up(
    tmp_path: Path,
) -> None:
    # The leader takes a record every second; broker 2 always fetches up to where the leader's end was at its
    # previous fetch, never the end itself: Kafka counts it caught up as of that previous fetch.
    p = _leader(tmp_path, isr=(1, 2))
    for second in range(1, 40):
        now = second * 1000
        previous_end = p.log_end_offset
        p.append_records_to_leader(_records(1, start=previous_end), acks=1, now_ms=now)
        _fetch(p, 2, previous_end, now)
        assert p.followers[2].log_end_offset < p.log_end_offset
        assert p.maybe_shrink_isr(now_ms=now, max_lag_ms=1500) is None
    assert p.followers[2].last_caught_up_time_ms == 38_000


def test_a_follower_that_falls_further_behind_leaves_the_isr(tmp_path: Path) -> None:
    # Fetching all the time is not enough: it must reach the leader's end (now, or as of its previous fetch).
    p = _leader(tmp_path, isr=(1, 2))
    for second in range(1, 40):
        now = second * 1000
        p.append_records_to_leader(_records(2, start=2 * second), acks=1, now_ms=now)
        _fetch(p, 2, second, now)  # one record a second, while the leader takes two
        change = p.maybe_shrink_isr(now_ms=now, max_lag_ms=1500)
        if change is not None:
            break
    assert change is not None
    assert change.new_isr == (1,)
    assert now - p.followers[2].last_caught_up_time_ms > 1500


@pytest.mark.parametrize(
    ("fetch_offset", "caught_up_at"),
    [
        (10, 2000),  # reached the leader's end now
        (7, 1000),  # reached the end as of its previous fetch (7): caught up as of that fetch
        (6, 0),  # neither: unchanged
    ],
)
def test_follower_state_caught_up_rule(fetch_offset: int, caught_up_at: int) -> None:
    f = FollowerState(2)
    f.update_fetch_state(fetch_offset=7, log_start_offset=0, now_ms=1000, leader_end_offset=7)
    f.last_caught_up_time_ms = 0  # forget the first fetch's own catch-up, to see the second rule alone
    f.update_fetch_state(fetch_offset=fetch_offset, log_start_offset=0, now_ms=2000, leader_end_offset=10)
    assert f.last_caught_up_time_ms == caught_up_at
    assert f.log_end_offset == fetch_offset
    assert f.last_fetch_leader_log_end_offset == 10


def test_the_hw_waits_for_the_new_isr_to_be_written(tmp_path: Path) -> None:
    p = _leader(tmp_path)
    p.append_records_to_leader(_records(5), acks=1, now_ms=0)
    _fetch(p, 2, 5, 10)
    _fetch(p, 3, 0, 10)
    change = p.maybe_shrink_isr(now_ms=LAG + 1, max_lag_ms=LAG)
    assert change is not None
    assert p.maximal_isr == frozenset({1, 2, 3})
    p.maybe_increment_high_watermark()
    assert p.high_watermark == 0  # computed over old and new ISR together
    assert p.complete_isr_change(change, zk_version=1)
    assert p.isr == (1, 2)
    assert p.zk_version == 1
    assert p.maybe_increment_high_watermark()
    assert p.high_watermark == 5


def test_a_pending_isr_change_blocks_other_changes(tmp_path: Path) -> None:
    p = _leader(tmp_path, isr=(1, 2))
    _fetch(p, 2, 0, 0)
    p.append_records_to_leader(_records(2), acks=1, now_ms=1)
    change = p.maybe_shrink_isr(now_ms=LAG + 1, max_lag_ms=LAG)
    assert change is not None
    _fetch(p, 3, 2, LAG + 2)
    assert p.maybe_expand_isr(3) is None  # one change at a time
    assert p.maybe_shrink_isr(now_ms=10 * LAG, max_lag_ms=LAG) is None
    assert p.complete_isr_change(change, zk_version=1)
    p.maybe_increment_high_watermark()
    assert p.maybe_expand_isr(3) is not None


def test_a_failed_isr_write_drops_the_proposal(tmp_path: Path) -> None:
    p = _leader(tmp_path)
    p.append_records_to_leader(_records(1), acks=1, now_ms=0)
    change = p.maybe_shrink_isr(now_ms=LAG + 1, max_lag_ms=LAG)
    assert change is not None
    assert change.new_isr == (1,)
    assert not p.complete_isr_change(change, zk_version=None)  # the conditional write lost
    assert p.isr == (1, 2, 3)
    assert p.pending_isr is None
    assert p.maybe_shrink_isr(now_ms=LAG + 2, max_lag_ms=LAG) is not None  # it may try again


def test_a_stale_isr_change_is_not_adopted(tmp_path: Path) -> None:
    p = _leader(tmp_path)
    p.append_records_to_leader(_records(1), acks=1, now_ms=0)
    change = p.maybe_shrink_isr(now_ms=LAG + 1, max_lag_ms=LAG)
    assert change is not None
    p.make_leader(_state(epoch=1, zk_version=5), now_ms=LAG + 2)  # a new epoch came meanwhile
    assert not p.complete_isr_change(change, zk_version=6)
    assert p.isr == (1, 2, 3)
    assert p.zk_version == 5


# Expanding the ISR


def test_a_follower_rejoins_the_isr_once_it_reaches_the_high_watermark(tmp_path: Path) -> None:
    p = _leader(tmp_path, isr=(1, 2))
    p.append_records_to_leader(_records(6), acks=1, now_ms=0)
    _fetch(p, 2, 6, 10)
    p.maybe_increment_high_watermark()
    assert p.high_watermark == 6
    _fetch(p, 3, 5, 20)
    assert p.maybe_expand_isr(3) is None  # below the HW
    _fetch(p, 3, 6, 30)
    change = p.maybe_expand_isr(3)
    assert change is not None
    assert change.new_isr == (1, 2, 3)
    assert "broker 3 caught up" in change.reason
    assert p.complete_isr_change(change, zk_version=1)
    assert p.isr == (1, 2, 3)


def test_a_follower_must_also_reach_the_start_of_the_leaders_epoch(tmp_path: Path) -> None:
    # The new leader has 10 records, but only a checkpointed HW of 6: a follower at 8 has reached the HW
    # but not what this leader may have written in its epoch.
    log = _log(tmp_path)
    log.append_as_leader(_records(10), leader_epoch=0, now_ms=0)
    p = Partition(TP, 1, log, high_watermark=6)
    p.make_leader(_state(epoch=1, isr=(1, 2)), now_ms=0)
    assert p.leader_epoch_start_offset == 10
    _fetch(p, 3, 8, 10)
    assert p.maybe_expand_isr(3) is None
    _fetch(p, 3, 10, 20)
    assert p.maybe_expand_isr(3) is not None


def test_the_expanded_isr_keeps_the_replicas_order(tmp_path: Path) -> None:
    p = _leader(tmp_path, isr=(1, 3), replicas=(1, 2, 3))
    _fetch(p, 2, 0, 10)
    change = p.maybe_expand_isr(2)
    assert change is not None
    assert change.new_isr == (1, 2, 3)


def test_expansion_is_only_for_known_followers_outside_the_isr(tmp_path: Path) -> None:
    p = _leader(tmp_path, isr=(1, 2))
    _fetch(p, 2, 0, 10)
    assert p.maybe_expand_isr(2) is None  # already in
    assert p.maybe_expand_isr(7) is None  # not a replica
    follower = Partition(TP, 2, _log(tmp_path, broker=2))
    follower.make_follower(_state(leader=1, isr=(1,)))
    assert follower.maybe_expand_isr(3) is None  # only the leader changes the ISR


# Produce at the leader


def test_acks_all_is_refused_below_min_insync_replicas_and_nothing_is_written(tmp_path: Path) -> None:
    p = _leader(tmp_path, isr=(1,))
    p.min_insync_replicas = 2
    with pytest.raises(NotEnoughReplicas, match=r"min\.insync\.replicas=2") as info:
        p.append_records_to_leader(_records(1), acks=-1, now_ms=0)
    assert info.value.name == "NOT_ENOUGH_REPLICAS"
    assert p.log_end_offset == 0
    assert (
        p.append_records_to_leader(_records(1), acks=1, now_ms=0).first_offset == 0
    )  # acks=1 is not checked
    assert p.append_records_to_leader(_records(1), acks=0, now_ms=0).first_offset == 1


def test_only_the_leader_appends(tmp_path: Path) -> None:
    p = Partition(TP, 2, _log(tmp_path))
    p.make_follower(_state(leader=1))
    with pytest.raises(NotLeaderOrFollower):
        p.append_records_to_leader(_records(1), acks=1, now_ms=0)
    assert p.log_end_offset == 0


def test_acks_all_completes_when_the_high_watermark_passes_the_batch(tmp_path: Path) -> None:
    p = _leader(tmp_path, isr=(1, 2))
    p.min_insync_replicas = 2
    info = p.append_records_to_leader(_records(3), acks=-1, now_ms=0)
    required = info.last_offset + 1
    assert p.check_enough_replicas_reached(required) == (False, None)
    _fetch(p, 2, 2, 10)
    p.maybe_increment_high_watermark()
    assert p.check_enough_replicas_reached(required) == (False, None)
    _fetch(p, 2, 3, 20)
    p.maybe_increment_high_watermark()
    assert p.check_enough_replicas_reached(required) == (True, None)


def test_an_isr_that_shrank_below_min_insync_while_waiting_gives_not_enough_replicas_after_append(
    tmp_path: Path,
) -> None:
    p = _leader(tmp_path)
    p.min_insync_replicas = 2
    info = p.append_records_to_leader(_records(1), acks=-1, now_ms=0)
    change = p.maybe_shrink_isr(now_ms=LAG + 1, max_lag_ms=LAG)  # neither follower ever fetched it
    assert change is not None
    assert p.complete_isr_change(change, zk_version=1)
    p.maybe_increment_high_watermark()
    done, error = p.check_enough_replicas_reached(info.last_offset + 1)
    assert done
    assert isinstance(error, NotEnoughReplicasAfterAppend)
    assert error.name == "NOT_ENOUGH_REPLICAS_AFTER_APPEND"
    assert p.log_end_offset == 1  # written, as Kafka does: the error says it was not replicated enough


def test_losing_leadership_while_waiting_ends_the_wait_with_not_leader(tmp_path: Path) -> None:
    p = _leader(tmp_path)
    info = p.append_records_to_leader(_records(1), acks=-1, now_ms=0)
    p.make_follower(_state(leader=2, epoch=1))
    done, error = p.check_enough_replicas_reached(info.last_offset + 1)
    assert done
    assert isinstance(error, NotLeaderOrFollower)


# Leader epochs


def test_requests_with_an_older_leader_epoch_are_fenced_and_newer_ones_unknown(tmp_path: Path) -> None:
    p = _leader(tmp_path, epoch=5)
    p.check_leader_epoch(5)
    p.check_leader_epoch(-1)  # a client that does not say its epoch is not checked
    with pytest.raises(FencedLeaderEpoch) as fenced:
        p.check_leader_epoch(4)
    assert fenced.value.name == "FENCED_LEADER_EPOCH"
    with pytest.raises(UnknownLeaderEpoch) as unknown:
        p.check_leader_epoch(6)
    assert unknown.value.name == "UNKNOWN_LEADER_EPOCH"


# Follower fetch state at the leader


def test_a_fetch_from_a_broker_that_is_not_a_replica_is_refused(tmp_path: Path) -> None:
    p = _leader(tmp_path)
    with pytest.raises(NotLeaderOrFollower):
        _fetch(p, 9, 0, 0)


def test_a_follower_fetch_outside_the_leaders_log_is_out_of_range(tmp_path: Path) -> None:
    p = _leader(tmp_path)
    p.append_records_to_leader(_records(2), acks=1, now_ms=0)
    with pytest.raises(OffsetOutOfRange):
        _fetch(p, 2, 3, 10)
    assert p.followers[2].log_end_offset == UNKNOWN  # nothing learned from a bad fetch
    _fetch(p, 2, 2, 10)
    assert p.followers[2].log_end_offset == 2


# The follower side


def _follower(tmp_path: Path) -> Partition:
    p = Partition(TP, 2, _log(tmp_path, broker=2))
    p.make_follower(_state(leader=1, epoch=0))
    return p


def _leader_batch(base: int, n: int, epoch: int = 0) -> bytes:
    return build_batch(
        [(None, b"r%d" % (base + i)) for i in range(n)],
        base_offset=base,
        timestamp_ms=0,
        partition_leader_epoch=epoch,
    )


def test_a_follower_takes_the_leaders_hw_but_never_above_its_own_log_end(tmp_path: Path) -> None:
    p = _follower(tmp_path)
    appended = p.append_as_follower(
        _leader_batch(0, 3), leader_high_watermark=10, leader_log_start_offset=0, now_ms=0
    )
    assert appended == 3
    assert p.high_watermark == 3  # the leader is at 10, this replica has only 3
    p.append_as_follower(_leader_batch(3, 4), leader_high_watermark=5, leader_log_start_offset=0, now_ms=0)
    assert p.log_end_offset == 7
    assert p.high_watermark == 5
    assert p.append_as_follower(b"", leader_high_watermark=7, leader_log_start_offset=0, now_ms=0) == 0
    assert p.high_watermark == 7  # an empty fetch answer still brings the HW
    assert p.log.epoch_for_offset(4) == 0


def test_a_follower_follows_the_leaders_log_start_offset(tmp_path: Path) -> None:
    p = _follower(tmp_path)
    p.append_as_follower(_leader_batch(0, 5), leader_high_watermark=5, leader_log_start_offset=2, now_ms=0)
    assert p.log_start_offset == 2


def _one_batch_per_record(p: Partition, n: int, *, leader_high_watermark: int) -> None:
    for offset in range(n):
        p.append_as_follower(
            _leader_batch(offset, 1),
            leader_high_watermark=leader_high_watermark,
            leader_log_start_offset=0,
            now_ms=0,
        )


def test_truncate_to_drops_the_tail_and_lowers_the_hw_with_it(tmp_path: Path) -> None:
    p = _follower(tmp_path)
    _one_batch_per_record(p, 6, leader_high_watermark=6)
    assert p.high_watermark == 6
    assert p.truncate_to(4) == 2
    assert p.log_end_offset == 4
    assert p.high_watermark == 4
    assert p.truncate_to(4) == 0  # already there
    assert p.truncate_to(9) == 0  # nothing above the end to drop
    assert p.log_end_offset == 4


def test_truncate_to_keeps_a_lower_hw(tmp_path: Path) -> None:
    p = _follower(tmp_path)
    _one_batch_per_record(p, 6, leader_high_watermark=2)
    assert p.truncate_to(4) == 2
    assert p.high_watermark == 2


def test_truncating_inside_a_batch_drops_the_whole_batch_and_says_so(tmp_path: Path) -> None:
    p = _follower(tmp_path)
    p.append_as_follower(_leader_batch(0, 2), leader_high_watermark=0, leader_log_start_offset=0, now_ms=0)
    p.append_as_follower(_leader_batch(2, 4), leader_high_watermark=0, leader_log_start_offset=0, now_ms=0)
    assert p.truncate_to(4) == 4  # offsets 2..5 are one batch: it goes whole
    assert p.log_end_offset == 2


def test_lowest_isr_log_end_offset_is_what_the_hw_may_not_pass(tmp_path: Path) -> None:
    p = _leader(tmp_path)
    p.append_records_to_leader(_records(4), acks=1, now_ms=0)
    _fetch(p, 2, 4, 10)
    _fetch(p, 3, 1, 10)
    assert p.lowest_isr_log_end_offset() == 1
    p.maybe_increment_high_watermark()
    assert p.high_watermark <= p.lowest_isr_log_end_offset()
