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

from bisect import bisect_right
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
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


class _Run(NamedTuple):
    """Acknowledged records at consecutive offsets from ``first``: one produce answer, or part of one.

    ``keys`` (None: no key) and ``values`` are the producer's own lists, shared, never copied;
    ``lo`` is where this run starts in them (a run cut by a later write keeps the lists).
    """

    first: int
    length: int
    lo: int
    producer: str
    keys: Sequence[bytes | None] | None
    values: Sequence[bytes | None]
    acks: int
    time_ms: int

    def record(self, tp: TopicPartition, offset: int) -> AckedRecord:
        i = self.lo + offset - self.first
        key = None if self.keys is None else self.keys[i]
        return AckedRecord(self.producer, tp, offset, key, self.values[i], self.acks, self.time_ms)

    def cut(self, start: int, end: int) -> _Run | None:
        """The part of this run from offset ``start`` to ``end`` (exclusive), None if empty."""
        start, end = max(start, self.first), min(end, self.first + self.length)
        if start >= end:
            return None
        return self._replace(first=start, length=end - start, lo=self.lo + start - self.first)


class PartitionAcks(Mapping[int, AckedRecord]):
    """One partition's acknowledged records by offset, kept as runs: one entry per produce answer.

    A mapping of offset to AckedRecord, each made when asked for: acknowledging a batch costs the
    same for one record as for a thousand.
    """

    def __init__(self, tp: TopicPartition) -> None:
        self.tp = tp
        self.runs: list[_Run] = []  # in offset order, disjoint
        self._firsts: list[int] = []  # each run's first offset, to bisect
        self._size = 0

    @property
    def end(self) -> int:
        """One past the highest offset held (0 when empty)."""
        last = self.runs[-1] if self.runs else None
        return 0 if last is None else last.first + last.length

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[int]:
        for run in self.runs:
            yield from range(run.first, run.first + run.length)

    def __contains__(self, offset: object) -> bool:
        return isinstance(offset, int) and self._run_of(offset) is not None

    def __getitem__(self, offset: int) -> AckedRecord:
        run = self._run_of(offset)
        if run is None:
            raise KeyError(offset)
        return run.record(self.tp, offset)

    def records(self) -> Iterator[AckedRecord]:
        """Every record held, in offset order."""
        tp = self.tp
        for run in self.runs:
            for offset in range(run.first, run.first + run.length):
                yield run.record(tp, offset)

    def _run_of(self, offset: int) -> _Run | None:
        i = bisect_right(self._firsts, offset) - 1
        if i < 0:
            return None
        run = self.runs[i]
        return run if offset < run.first + run.length else None

    def add(self, run: _Run) -> None:
        """Hold ``run``, replacing whatever was held at its offsets."""
        if not self.runs or run.first >= self.end:
            self.runs.append(run)
            self._firsts.append(run.first)
            self._size += run.length
            return
        end = run.first + run.length
        kept: list[_Run] = []
        for old in self.runs:
            if old.first + old.length <= run.first or old.first >= end:
                kept.append(old)
                continue
            for part in (old.cut(old.first, run.first), old.cut(end, old.first + old.length)):
                if part is not None:
                    kept.append(part)
        kept.append(run)
        self._set(sorted(kept))

    def keep_last(self, limit: int) -> int:
        """Drop the lowest offsets until at most ``limit`` records are held; the lowest offset kept."""
        drop = self._size - limit
        runs = self.runs
        i = 0
        while drop > 0 and i < len(runs):
            run = runs[i]
            if run.length <= drop:
                drop -= run.length
                i += 1
            else:
                runs[i] = run.cut(run.first + drop, run.first + run.length)  # type: ignore[assignment]
                drop = 0
        kept = runs[i:]
        self._set(kept)
        return kept[0].first if kept else self.end

    def _set(self, runs: list[_Run]) -> None:
        self.runs = runs
        self._firsts = [run.first for run in runs]
        self._size = sum(run.length for run in runs)


class Ledger:
    """What the producers were told is stored, and what of it was lost."""

    LIMIT_PER_PARTITION = ACKED_PER_PARTITION

    def __init__(self) -> None:
        self.acked: dict[TopicPartition, PartitionAcks] = {}
        self.highest_acks_all: dict[TopicPartition, int] = {}
        self.count = 0
        self.losses: dict[TopicPartition, PartitionLosses] = {}
        self._noted: dict[TopicPartition, set[int]] = {}  # offsets whose acked record is already lost
        self.unannounced: list[LostRecord] = []  # found, not yet in the journal

    def _partition(self, tp: TopicPartition) -> PartitionAcks:
        acked = self.acked.get(tp)
        if acked is None:
            acked = self.acked[tp] = PartitionAcks(tp)
        return acked

    def record(self, rec: AckedRecord) -> None:
        """A producer was told ``rec`` is stored. If its offset held another acknowledged record, that
        one is lost: the log cannot hold both at one offset."""
        keys = None if rec.key is None else [rec.key]
        self._add(rec.tp, _Run(rec.offset, 1, 0, rec.producer, keys, [rec.value], rec.acks, rec.time_ms))

    def record_batch(
        self,
        producer: str,
        tp: TopicPartition,
        base_offset: int,
        keys: Sequence[bytes | None] | None,
        values: Sequence[bytes | None],
        *,
        acks: int,
        time_ms: int,
    ) -> None:
        """One acknowledged batch, its records from ``base_offset`` on (``keys`` None: none has a key):
        one call per produce answer, whatever the number of records. The lists are kept as they are."""
        self._add(tp, _Run(base_offset, len(values), 0, producer, keys, values, acks, time_ms))

    def _add(self, tp: TopicPartition, run: _Run) -> None:
        acked = self._partition(tp)
        if acked.runs and run.first < acked.end:
            # Offsets written again (after a truncation): a record they held that differs is lost.
            noted = self._noted.setdefault(tp, set())
            for offset in range(run.first, run.first + run.length):
                if offset not in acked:
                    continue
                old, new = acked[offset], run.record(tp, offset)
                if (old.key, old.value) != (new.key, new.value) and offset not in noted:
                    self.lose(
                        old,
                        detected_ms=run.time_ms,
                        why=f"offset {offset} now holds another record, acknowledged to {run.producer}",
                    )
                noted.discard(offset)
        acked.add(run)
        self.count += run.length
        if len(acked) > self.LIMIT_PER_PARTITION * 5 // 4:
            # Keep the newest LIMIT in one go, not one at a time: a lab can run for hours.
            start = acked.keep_last(self.LIMIT_PER_PARTITION)
            forgotten = self._noted.get(tp)
            if forgotten:
                forgotten.difference_update([o for o in forgotten if o < start])
        last = run.first + run.length - 1
        if run.acks == -1 and last > self.highest_acks_all.get(tp, -1):
            self.highest_acks_all[tp] = last

    def of(self, tp: TopicPartition) -> Mapping[int, AckedRecord]:
        return self.acked.get(tp) or {}

    def lose(self, rec: AckedRecord, *, detected_ms: int, why: str) -> LostRecord | None:
        """Note ``rec`` as lost, for good; None if it already was."""
        noted = self._noted.setdefault(rec.tp, set())
        current = self.of(rec.tp).get(rec.offset) == rec
        if current and rec.offset in noted:
            return None
        if current:
            noted.add(rec.offset)
        lost = LostRecord(record=rec, detected_ms=detected_ms, why=why)
        self.losses.setdefault(rec.tp, PartitionLosses()).add(lost)
        self.unannounced.append(lost)
        return lost

    def is_noted(self, rec: AckedRecord) -> bool:
        return rec.offset in self._noted.get(rec.tp, ()) and self.of(rec.tp).get(rec.offset) == rec

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
