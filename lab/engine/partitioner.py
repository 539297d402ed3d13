"""Kafka's built-in partitioner (Kafka 3.3+): murmur2 for keys, KIP-794's uniform sticky partitioner without.

A keyed record lands on ``murmur2(key) & 0x7fffffff % partitions``, where a real Kafka client
would put it, so a student can predict it. Records without a key stick to one partition until
``batch.size`` bytes went to it, then move to another chosen at random (KIP-794; before Kafka 3.3
KIP-480's sticky partitioner moved on at every new batch, which sent more records to slower
brokers). With adaptive partitioning the choice leans away from partitions whose queues are long,
and ``partitioner.availability.timeout.ms`` leaves out partitions whose leader stopped draining.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from random import Random

_MASK = 0xFFFFFFFF
_M = 0x5BD1E995
_SEED = 0x9747B28C


def murmur2(data: bytes) -> int:
    """Kafka's ``Utils.murmur2``: a signed 32-bit hash."""
    length = len(data)
    h = (_SEED ^ length) & _MASK
    whole = length - length % 4
    for i in range(0, whole, 4):
        k = data[i] | (data[i + 1] << 8) | (data[i + 2] << 16) | (data[i + 3] << 24)
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = (h * _M) & _MASK
        h ^= k
    rest = length % 4
    if rest == 3:
        h ^= data[whole + 2] << 16
    if rest >= 2:
        h ^= data[whole + 1] << 8
    if rest >= 1:
        h ^= data[whole]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def to_positive(number: int) -> int:
    return number & 0x7FFFFFFF


def partition_for_key(key: bytes, num_partitions: int) -> int:
    return to_positive(murmur2(key)) % num_partitions


@dataclass(frozen=True, slots=True)
class PartitionLoadStats:
    """A cumulative frequency table over the partitions a record without a key may go to.

    Each partition weighs (longest queue + 1 - its queue): the shorter its queue of batches, the
    likelier it is chosen.
    """

    cumulative: tuple[int, ...]
    partitions: tuple[int, ...]

    def pick(self, rng: Random) -> int:
        return self.partitions[bisect_right(self.cumulative, rng.randrange(self.cumulative[-1]))]


def load_stats(
    queue_sizes: Sequence[int], partitions: Sequence[int], total: int
) -> PartitionLoadStats | None:
    """Kafka's BuiltInPartitioner.updatePartitionLoadStats; None means "choose uniformly".

    ``queue_sizes`` and ``partitions`` cover the available partitions (a leader, and not left out by
    the availability timeout) of a topic of ``total`` partitions.
    """
    if not partitions or total < 2:
        return None
    if len(set(queue_sizes)) == 1 and len(partitions) == total:
        return None  # all alike and none left out: uniform
    top = max(queue_sizes) + 1
    cumulative: list[int] = []
    running = 0
    for size in queue_sizes:
        running += top - size
        cumulative.append(running)
    return PartitionLoadStats(tuple(cumulative), tuple(partitions))


class StickyPartitioner:
    """One topic's partition for records without a key (Kafka's BuiltInPartitioner, KIP-794).

    ``partition`` is where such records go now (-1: none chosen yet) and ``produced_bytes`` what
    went to it since. After each append the producer calls ``update``: past ``batch.size`` bytes
    the partition switches, but only once its last batch is full, so no batch is left half empty
    by the switch; at twice ``batch.size`` it switches whatever the batch.
    """

    __slots__ = ("batch_size", "partition", "produced_bytes", "rng", "stats")

    def __init__(self, rng: Random, batch_size: int) -> None:
        self.rng = rng
        self.batch_size = batch_size
        self.partition = -1
        self.produced_bytes = 0
        self.stats: PartitionLoadStats | None = None  # set by the producer under adaptive partitioning

    def update(self, appended_bytes: int, *, all_batches_full: bool) -> None:
        produced = self.produced_bytes + appended_bytes
        if (produced >= self.batch_size and all_batches_full) or produced >= 2 * self.batch_size:
            self.partition = -1  # the next record chooses again
            produced = 0
        self.produced_bytes = produced

    def switch(self, available: Sequence[int], total: int) -> int:
        """Kafka's nextPartition: weighted by queue length when there are stats, else uniform over
        the partitions that have a leader (over all of them when none has)."""
        if self.stats is not None:
            self.partition = self.stats.pick(self.rng)
        elif available:
            self.partition = available[self.rng.randrange(len(available))]
        else:
            self.partition = self.rng.randrange(total)
        self.produced_bytes = 0
        return self.partition
