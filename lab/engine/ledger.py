"""The ledger: every write a producer was told succeeded, and every one of those found lost.

An acknowledged record is **lost** when the log no longer holds it at its offset with its content:
the partition's leader ends before it, or holds another record there (after a truncation, the
offset is written again). Records Kafka removed on purpose (retention or compaction, below the log
start offset or superseded by a newer record of the same key) are not lost.

A loss, once found, is kept for the life of the cluster: the next write to a reused offset replaces
the acknowledgement, never the report. Memory stays bounded: the ledger keeps the newest
acknowledgements of each partition, and for losses a count, the lost offsets as ranges, and the
details (key, value, acks, producer) of the newest ones.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import islice
from typing import NamedTuple

from lab.engine.ids import TopicPartition

# A lab left running for hours must not grow without bound: the ledger keeps the newest
# acknowledgements of each partition (loss checks cover that window) and the newest lost records in
# full (every loss is still counted, and its offset kept in a range).
ACKED_PER_PARTITION = 50_000
LOST_DETAILS_PER_PARTITION = 1_000


class AckedRecord(NamedTuple):
    """One record a producer was told is written. A NamedTuple: the ledger makes one per acknowledged record."""

    producer: str
    tp: TopicPartition
    offset: int
    key: bytes | None
    value: bytes | None
    acks: int
    time_ms: int


@dataclass(frozen=True, slots=True, kw_only=True)
class LostRecord:
    """An acknowledged record the log no longer holds, and how it was found."""

    record: AckedRecord
    detected_ms: int
    why: str  # "not in the log of the new leader, broker 2", "offset 5 now holds another record"


@dataclass(slots=True)
class PartitionLosses:
    """One partition's losses: all of them counted and their offsets kept as ranges; the newest in full."""

    count: int = 0
    spans: list[tuple[int, int]] = field(default_factory=list)  # sorted, disjoint, inclusive
    newest: deque[LostRecord] = field(default_factory=lambda: deque(maxlen=LOST_DETAILS_PER_PARTITION))

    def add(self, lost: LostRecord) -> None:
        self.count += 1
        self.newest.append(lost)
        offset = lost.record.offset
        spans = self.spans
        i = 0
        while i < len(spans) and spans[i][1] < offset - 1:
            i += 1
        if i == len(spans) or spans[i][0] > offset + 1:
            spans.insert(i, (offset, offset))
            return
        start, end = min(spans[i][0], offset), max(spans[i][1], offset)
        if i + 1 < len(spans) and spans[i + 1][0] <= end + 1:
            end = spans.pop(i + 1)[1]
        spans[i] = (start, end)

    def offsets(self) -> list[int]:
        return [o for start, end in self.spans for o in range(start, end + 1)]


class Ledger:
    """What the producers were told is stored, and what of it was lost."""

    LIMIT_PER_PARTITION = ACKED_PER_PARTITION

    def __init__(self) -> None:
        self.acked: dict[TopicPartition, dict[int, AckedRecord]] = {}
        self.highest_acks_all: dict[TopicPartition, int] = {}
        self.count = 0
        self.losses: dict[TopicPartition, PartitionLosses] = {}
        self._noted: dict[TopicPartition, set[int]] = {}  # offsets whose acked record is already lost
        self.unannounced: list[LostRecord] = []  # found, not yet in the journal

    def record(self, rec: AckedRecord) -> None:
        """A producer was told ``rec`` is stored. If its offset held another acknowledged record, that
        one is lost: the log cannot hold both at one offset."""
        acked = self.acked.setdefault(rec.tp, {})
        noted = self._noted.setdefault(rec.tp, set())
        old = acked.get(rec.offset)
        if old is not None and (old.key, old.value) != (rec.key, rec.value) and rec.offset not in noted:
            self.lose(
                old,
                detected_ms=rec.time_ms,
                why=f"offset {rec.offset} now holds another record, acknowledged to {rec.producer}",
            )
        noted.discard(rec.offset)
        acked[rec.offset] = rec
        self.count += 1
        self._trim(rec.tp, acked)
        if rec.acks == -1 and rec.offset > self.highest_acks_all.get(rec.tp, -1):
            self.highest_acks_all[rec.tp] = rec.offset

    def record_batch(
        self,
        producer: str,
        tp: TopicPartition,
        base_offset: int,
        records: Sequence[tuple[bytes | None, bytes | None]],
        *,
        acks: int,
        time_ms: int,
    ) -> None:
        """One acknowledged batch, its (key, value) pairs from ``base_offset`` on: one call per produce answer."""
        acked = self.acked.setdefault(tp, {})
        make = tuple.__new__  # AckedRecord(...) without its Python-level __new__: one per record
        if acked and next(reversed(acked)) >= base_offset:
            # Offsets written again (after a truncation): each goes through record(), which notes the
            # record it replaces as lost.
            for i, (key, value) in enumerate(records):
                self.record(make(AckedRecord, (producer, tp, base_offset + i, key, value, acks, time_ms)))
            return
        offset = base_offset
        for key, value in records:
            acked[offset] = make(AckedRecord, (producer, tp, offset, key, value, acks, time_ms))
            offset += 1
        self.count += len(records)
        self._trim(tp, acked)
        if acks == -1 and offset - 1 > self.highest_acks_all.get(tp, -1):
            self.highest_acks_all[tp] = offset - 1

    def _trim(self, tp: TopicPartition, acked: dict[int, AckedRecord]) -> None:
        # Dropping the oldest entry of a dict one at a time rescans the deleted slots at its front
        # (quadratic); let it grow a quarter past the limit, then keep the newest LIMIT in one go.
        if len(acked) <= self.LIMIT_PER_PARTITION * 5 // 4:
            return
        cut = len(acked) - self.LIMIT_PER_PARTITION
        noted = self._noted.get(tp)
        if noted:
            noted.difference_update(islice(acked, cut))
        self.acked[tp] = dict(islice(acked.items(), cut, None))

    def of(self, tp: TopicPartition) -> dict[int, AckedRecord]:
        return self.acked.get(tp, {})

    def lose(self, rec: AckedRecord, *, detected_ms: int, why: str) -> LostRecord | None:
        """Note ``rec`` as lost, for good; None if it already was."""
        noted = self._noted.setdefault(rec.tp, set())
        current = self.acked.get(rec.tp, {}).get(rec.offset) is rec
        if current and rec.offset in noted:
            return None
        if current:
            noted.add(rec.offset)
        lost = LostRecord(record=rec, detected_ms=detected_ms, why=why)
        self.losses.setdefault(rec.tp, PartitionLosses()).add(lost)
        self.unannounced.append(lost)
        return lost

    def is_noted(self, rec: AckedRecord) -> bool:
        return rec.offset in self._noted.get(rec.tp, ()) and self.acked.get(rec.tp, {}).get(rec.offset) is rec

    def forget_topic(self, topic: str) -> None:
        """The topic was deleted: its records are gone on purpose. Losses found before stay."""
        for tp in [tp for tp in self.acked if tp.topic == topic]:
            del self.acked[tp]
            self._noted.pop(tp, None)
            self.highest_acks_all.pop(tp, None)

    def lost_offsets(self) -> dict[TopicPartition, list[int]]:
        """Every offset at which an acknowledged record was lost, by partition (each offset once)."""
        return {tp: losses.offsets() for tp, losses in sorted(self.losses.items()) if losses.count}

    def take_unannounced(self) -> list[LostRecord]:
        out, self.unannounced = self.unannounced, []
        return out
