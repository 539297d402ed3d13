"""The leader epoch cache, with Kafka's (KIP-101) semantics."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.engine.errors import IllegalArgument
from lab.engine.storage.epochs import UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET, EpochEntry, LeaderEpochCache

UNDEFINED = (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)


def cache_with(tmp_path: Path, *entries: tuple[int, int]) -> LeaderEpochCache:
    tmp_path.mkdir(parents=True, exist_ok=True)
    cache = LeaderEpochCache.for_partition_dir(tmp_path)
    for epoch, start in entries:
        cache.assign(epoch, start)
    return cache


def pairs(cache: LeaderEpochCache) -> list[tuple[int, int]]:
    return [(e.epoch, e.start_offset) for e in cache.entries]


def test_assign_ignores_repeats_and_persists(tmp_path: Path) -> None:
    cache = LeaderEpochCache.for_partition_dir(tmp_path)
    assert cache.latest_epoch is None
    assert cache.latest_entry is None
    assert cache.assign(0, 0)
    assert not cache.assign(0, 5)  # the same epoch later on: nothing new
    assert cache.assign(2, 10)
    assert not cache.assign(2, 10)
    assert pairs(cache) == [(0, 0), (2, 10)]
    assert cache.latest_epoch == 2
    assert cache.latest_entry == EpochEntry(epoch=2, start_offset=10)
    assert cache.earliest_entry == EpochEntry(epoch=0, start_offset=0)
    assert (tmp_path / "leader-epoch-checkpoint").read_text() == "0\n2\n0 0\n2 10\n"
    assert pairs(LeaderEpochCache.for_partition_dir(tmp_path)) == [(0, 0), (2, 10)]


def test_assign_keeps_epochs_and_offsets_increasing(tmp_path: Path) -> None:
    cache = cache_with(tmp_path, (0, 0), (2, 10), (4, 20))
    assert cache.assign(4, 15)  # the latest epoch starting earlier moves back
    assert pairs(cache) == [(0, 0), (2, 10), (4, 15)]
    assert cache.assign(3, 30)  # a lower epoch replaces the higher ones, as Kafka's assign does
    assert pairs(cache) == [(0, 0), (2, 10), (3, 30)]
    assert cache.assign(5, 5)  # a start offset below existing ones drops them
    assert pairs(cache) == [(0, 0), (5, 5)]


def test_negative_epochs_or_offsets_are_refused(tmp_path: Path) -> None:
    cache = cache_with(tmp_path, (1, 0))
    with pytest.raises(IllegalArgument):
        cache.assign(-1, 5)
    with pytest.raises(IllegalArgument):
        cache.assign(2, -1)
    assert pairs(cache) == [(1, 0)]


def test_end_offset_for_follows_kafka(tmp_path: Path) -> None:
    cache = cache_with(tmp_path, (0, 0), (2, 10), (4, 20))
    log_end_offset = 30
    assert cache.end_offset_for(4, log_end_offset) == (4, 30)  # the latest epoch: the log end offset
    assert cache.end_offset_for(2, log_end_offset) == (2, 20)  # where the next epoch starts
    assert cache.end_offset_for(3, log_end_offset) == (2, 20)  # never seen: the largest epoch below it
    assert cache.end_offset_for(1, log_end_offset) == (0, 10)
    assert cache.end_offset_for(0, log_end_offset) == (0, 10)
    assert cache.end_offset_for(5, log_end_offset) == UNDEFINED  # above the latest
    assert cache.end_offset_for(UNDEFINED_EPOCH, log_end_offset) == UNDEFINED
    assert LeaderEpochCache.for_partition_dir(tmp_path / "empty").end_offset_for(0, 0) == UNDEFINED


def test_an_epoch_older_than_the_cache_ends_where_the_cache_starts(tmp_path: Path) -> None:
    """Old segments were deleted with their epochs: Kafka answers with the first known start offset."""
    cache = cache_with(tmp_path, (3, 100), (5, 150))
    assert cache.end_offset_for(1, 200) == (1, 100)


def test_kip_101_divergence_is_resolved_by_the_leaders_answer(tmp_path: Path) -> None:
    """KIP-101 case 2: A holds m1, m2 (epoch 0); B holds m1; B leads epoch 1 and writes m3 at offset 1."""
    leader_b = cache_with(tmp_path / "b", (0, 0), (1, 1))
    follower_a = cache_with(tmp_path / "a", (0, 0))
    epoch, end = leader_b.end_offset_for(follower_a.latest_epoch or 0, log_end_offset=2)
    assert (epoch, end) == (0, 1)  # A must truncate to offset 1, dropping its m2


def test_truncation_from_either_end(tmp_path: Path) -> None:
    cache = cache_with(tmp_path, (0, 0), (2, 10), (4, 20))
    cache.truncate_from_end(25)  # nothing starts at or after 25
    assert pairs(cache) == [(0, 0), (2, 10), (4, 20)]
    cache.truncate_from_end(20)
    assert pairs(cache) == [(0, 0), (2, 10)]
    cache.truncate_from_start(12)  # the epoch in force at 12 now starts there
    assert pairs(cache) == [(2, 12)]
    cache.truncate_from_start(5)  # below every entry: nothing changes
    assert pairs(cache) == [(2, 12)]
    assert pairs(LeaderEpochCache.for_partition_dir(tmp_path)) == [(2, 12)]
    cache.clear()
    assert cache.entries == ()
    assert (tmp_path / "leader-epoch-checkpoint").read_text() == "0\n0\n"


def test_epoch_for_offset(tmp_path: Path) -> None:
    cache = cache_with(tmp_path, (1, 5), (3, 10))
    assert cache.epoch_for_offset(4) is None
    assert cache.epoch_for_offset(5) == 1
    assert cache.epoch_for_offset(9) == 1
    assert cache.epoch_for_offset(10) == 3
    assert cache.epoch_for_offset(1000) == 3
