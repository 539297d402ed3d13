"""Kafka's built-in partitioner: murmur2 for keys, the uniform sticky partitioner (KIP-794) without."""

from __future__ import annotations

from random import Random

import pytest

from lab.engine.partitioner import (
    PartitionLoadStats,
    StickyPartitioner,
    load_stats,
    murmur2,
    partition_for_key,
)

# Kafka's own murmur2 test vectors (KAFKA-FACTS.md), and where the keys land with 6 partitions.
VECTORS = [
    ("21", -973932308, 0),
    ("foobar", -790332482, 0),
    ("a-little-bit-long-string", -985981536, 2),
    ("a-little-bit-longer-string", -1486304829, 5),
    ("lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971, 5),
    ("abc", 479470107, 3),
]


@pytest.mark.parametrize(("key", "hashed", "partition"), VECTORS)
def test_murmur2_matches_kafka(key: str, hashed: int, partition: int) -> None:
    assert murmur2(key.encode()) == hashed
    assert partition_for_key(key.encode(), 6) == partition


class _Draws(Random):
    """A Random whose randrange answers from a script, to see where each draw lands."""

    def __init__(self, draws: list[int]) -> None:
        super().__init__(0)
        self.draws = draws
        self.bounds: list[int] = []

    def randrange(self, start: int, stop: int | None = None, step: int = 1) -> int:  # type: ignore[override]
        self.bounds.append(start if stop is None else stop)
        return self.draws.pop(0)


def test_load_stats_is_kafkas_cumulative_frequency_table() -> None:
    # BuiltInPartitioner's own example: queue sizes 0 3 1 -> weights 4 1 3 -> table 4 5 8.
    stats = load_stats([0, 3, 1], [0, 1, 2], total=3)
    assert stats == PartitionLoadStats((4, 5, 8), (0, 1, 2))
    assert stats is not None
    rng = _Draws(list(range(8)))
    assert [stats.pick(rng) for _ in range(8)] == [0, 0, 0, 0, 1, 2, 2, 2]
    assert rng.bounds == [8] * 8


def test_load_stats_are_left_out_when_they_change_nothing() -> None:
    assert load_stats([2, 2, 2], [0, 1, 2], total=3) is None  # all alike: uniform
    assert load_stats([5], [0], total=1) is None  # one partition: nothing to weigh
    assert load_stats([], [], total=3) is None  # none available
    # All alike, but partition 1 is left out (no leader, or the availability timeout): only 0 and 2.
    assert load_stats([2, 2], [0, 2], total=3) == PartitionLoadStats((1, 2), (0, 2))


def test_the_sticky_partition_holds_until_batch_size_bytes_went_to_it() -> None:
    sticky = StickyPartitioner(_Draws([2, 0]), batch_size=1000)
    assert sticky.switch([0, 1, 2], 3) == 2
    sticky.update(600, all_batches_full=True)
    assert sticky.partition == 2  # 600 < batch.size: it stays, even between batches
    sticky.update(400, all_batches_full=True)
    assert sticky.partition == -1  # 1000 bytes: the next record chooses again
    assert sticky.switch([0, 1, 2], 3) == 0
    assert sticky.produced_bytes == 0


def test_a_switch_waits_for_the_partitions_batch_to_fill_up_to_twice_batch_size() -> None:
    sticky = StickyPartitioner(_Draws([1]), batch_size=1000)
    sticky.switch([0, 1, 2], 3)
    sticky.update(1200, all_batches_full=False)
    assert sticky.partition == 1  # its last batch still has room: no half-empty batch left behind
    sticky.update(0, all_batches_full=True)
    assert sticky.partition == -1  # the batch filled up: the put-off switch happens now
    sticky = StickyPartitioner(_Draws([1]), batch_size=1000)
    sticky.switch([0, 1, 2], 3)
    sticky.update(1999, all_batches_full=False)
    assert sticky.partition == 1
    sticky.update(1, all_batches_full=False)
    assert sticky.partition == -1  # twice batch.size: it switches whatever the batch


def test_switching_chooses_only_partitions_with_a_leader() -> None:
    rng = _Draws([1, 0])
    sticky = StickyPartitioner(rng, batch_size=1000)
    assert sticky.switch([0, 2], 3) == 2  # draw 1 of the two available: partition 2
    assert rng.bounds == [2]
    assert sticky.switch([], 3) == 0  # no partition has a leader: any of them
    assert rng.bounds == [2, 3]


def test_switching_follows_the_load_stats_when_there_are_some() -> None:
    sticky = StickyPartitioner(_Draws([4]), batch_size=1000)
    sticky.stats = PartitionLoadStats((4, 5, 8), (0, 1, 2))
    assert sticky.switch([0, 1, 2], 3) == 1


def test_uniform_switching_spreads_records_evenly() -> None:
    sticky = StickyPartitioner(Random(7), batch_size=1)
    counts = [0, 0, 0, 0]
    for _ in range(4000):
        counts[sticky.switch([0, 1, 2, 3], 4)] += 1
    assert all(900 < count < 1100 for count in counts)
