"""A partition's log: a directory ``<topic>-<partition>`` of segments, as Kafka lays it out.

``PartitionLog`` plays Kafka's UnifiedLog and LocalLog together: appends (as leader, which
assigns offsets, or as follower, which keeps the leader's), reads through the sparse offset
index, rolls, truncation, retention, compaction, flushing and recovery after a crash.

Batches stay bytes on the hot path: an append checks each header and CRC, patches the base
offset and leader epoch into a 16-byte prefix and writes with ``os.writev`` (no copy); a read
returns the file's bytes. Records are decoded only for compacted topics (null keys are
refused), by the cleaner, and by ``offset_for_timestamp``.

Durability follows Kafka's default of never calling fsync: ``flush`` marks everything below
an offset as durable (it moves the recovery point), and a roll flushes the segments before the
new one, as Kafka schedules on every roll. ``crash(lose_unflushed=True)`` models a power cut:
whatever was not flushed is gone. ``open`` then recovers: it re-validates every segment from
the one holding the recovery point, cuts a torn tail, and rebuilds the indexes.
"""

from __future__ import annotations

import shutil
import struct
from bisect import bisect_right
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from lab.engine.control_records import Marker, NotAMarker, decode_marker, encode_marker
from lab.engine.errors import (
    CorruptRecord,
    IllegalArgument,
    InvalidRecord,
    KafkaStorageError,
    OffsetOutOfRange,
    OffsetsOutOfOrder,
    RecordTooLarge,
    UnexpectedAppendOffset,
)
from lab.engine.records import (
    CONTROL_MASK,
    LOG_OVERHEAD,
    MAGIC_POS,
    NO_SEQUENCE,
    NO_TIMESTAMP,
    TRANSACTIONAL_MASK,
    Record,
    check_batch,
    decode_records,
    encode_batch,
    read_header,
)
from lab.engine.storage.config import LogConfig
from lab.engine.storage.epochs import LeaderEpochCache
from lab.engine.storage.index import CorruptIndex
from lab.engine.storage.producer_state import ProducerStateEntry, ProducerStateManager, increment_sequence
from lab.engine.storage.segment import (
    CLEANED_SUFFIX,
    DELETED_SUFFIX,
    INDEX_SUFFIX,
    INT32_MAX,
    LOG_SUFFIX,
    SWAP_SUFFIX,
    TIME_INDEX_SUFFIX,
    LogSegment,
    SegmentInfo,
    filename_prefix,
    offset_from_filename,
)
from lab.engine.storage.txn_index import TXN_INDEX_SUFFIX, AbortedTxn

MARKERS_KEPT = 64
EARLIEST_TIMESTAMP = -2  # ListOffsets' special timestamps
LATEST_TIMESTAMP = -1
# baseOffset, batchLength, partitionLeaderEpoch: the prefix a leader rewrites, up to the magic byte.
_LEADER_PREFIX = struct.Struct(">qii")
_BASE_OFFSET = struct.Struct(">q")


@dataclass(frozen=True, slots=True, kw_only=True)
class AppendInfo:
    """What an append wrote (first_offset is -1 when there was nothing to append)."""

    first_offset: int
    last_offset: int
    max_timestamp: int
    offset_of_max_timestamp: int
    record_count: int
    batch_count: int
    size_in_bytes: int
    log_append_time: int = NO_TIMESTAMP  # the lab keeps CreateTime; LogAppendTime is not modelled
    duplicate: bool = False  # an idempotent producer's retry: nothing appended, the original's offsets


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchData:
    """Whole batches read from the log.

    ``records`` is bytes-like (bytes or a memoryview over bytes; ``bytes(records)`` if you need
    bytes). The first batch may start below ``fetch_offset``: it is the batch holding that offset.
    """

    fetch_offset: int
    records: bytes | memoryview
    first_offset: int  # base offset of the first batch (fetch_offset when empty)
    next_offset: int  # one past the last offset returned (fetch_offset when empty)

    @property
    def size_in_bytes(self) -> int:
        return len(self.records)

    @property
    def is_empty(self) -> bool:
        return len(self.records) == 0


@dataclass(frozen=True, slots=True, kw_only=True)
class CleanerStats:
    """One run of the log cleaner over a partition (``skipped_reason`` says why it did nothing)."""

    skipped_reason: str | None
    dirty_ratio: float
    first_dirty_offset: int
    first_uncleanable_offset: int
    segments_read: int = 0
    segments_written: int = 0
    bytes_read: int = 0
    bytes_written: int = 0
    records_read: int = 0
    records_retained: int = 0
    records_removed: int = 0  # superseded by a later record with the same key, or without a key
    tombstones_removed: int = 0  # past their batch's delete horizon (KIP-534)
    tombstones_retained: int = 0
    delete_horizons_set: int = 0  # batches whose tombstones the cleaner saw for the first time
    for_delete_horizon: bool = False  # cleaned below min.cleanable.dirty.ratio: a horizon had passed
    next_delete_horizon_ms: int | None = None  # the earliest horizon still ahead, if any


@dataclass(frozen=True, slots=True, kw_only=True)
class RetentionStats:
    """One retention pass over a partition: the segments deleted, by Kafka's three reasons."""

    by_log_start_offset: int  # wholly below the log start offset (DeleteRecords, a leader's start)
    by_retention_bytes: int
    by_retention_ms: int
    log_start_offset_before: int
    log_start_offset: int

    @property
    def segments_deleted(self) -> int:
        return self.by_log_start_offset + self.by_retention_bytes + self.by_retention_ms


def parse_partition_dir(name: str) -> tuple[str, int]:
    """``orders-3`` -> ("orders", 3): the topic may hold dashes, the partition follows the last one."""
    topic, sep, partition = name.rpartition("-")
    if not sep or not topic or not partition.isdigit():
        raise IllegalArgument(f"{name!r} is not a partition directory name of the form <topic>-<partition>")
    return topic, int(partition)


class _LastAppend:
    """What the last append wrote, for the reads that come right after it (a leader's followers
    fetching what it just took): found without looking the batch up in the segment again, its
    pieces joined once, on the first read, and that read's answer given to the next ones too."""

    __slots__ = ("batches", "end", "fetched", "first_offset", "next_offset", "pieces", "segment")

    def __init__(
        self,
        segment: LogSegment,
        pieces: Sequence[bytes | memoryview],
        first_offset: int,
        next_offset: int,
        batches: int,
    ) -> None:
        self.segment = segment
        self.end = segment.size  # while the segment ends here, nothing was cut or rewritten since
        self.pieces = pieces
        self.first_offset = first_offset
        self.next_offset = next_offset
        self.batches = batches
        self.fetched: FetchData | None = None

    def read(self, max_bytes: int) -> FetchData | None:
        """What ``PartitionLog.read`` of the first offset would answer; None when it would cut it."""
        fetched = self.fetched
        if fetched is None:
            records = b"".join(self.pieces)
            fetched = self.fetched = FetchData(
                fetch_offset=self.first_offset,
                records=records,
                first_offset=self.first_offset,
                next_offset=self.next_offset,
            )
            self.pieces = ()
        if len(fetched.records) <= max_bytes or self.batches == 1:
            return fetched
        return None


class PartitionLog:
    """One replica's log of one partition. Build it with ``PartitionLog.open``."""

    def __init__(
        self,
        directory: Path,
        config: LogConfig,
        segments: list[LogSegment],
        epoch_cache: LeaderEpochCache,
        *,
        log_start_offset: int,
        recovery_point: int,
        cleaner_checkpoint: int,
    ) -> None:
        self._dir = directory
        self._topic, self._partition = parse_partition_dir(directory.name)
        self._config = config
        self._segments = segments
        self._bases = [s.base_offset for s in segments]
        self._epoch_cache = epoch_cache
        self._log_start_offset = log_start_offset
        self._recovery_point = recovery_point
        self._cleaner_checkpoint = cleaner_checkpoint
        # KIP-534: the earliest delete horizon of a kept tombstone, None when there is none; read
        # from the batches the first time the cleaner asks after opening.
        self._delete_horizon: int | None = None
        self._delete_horizon_known = False
        self._closed = False
        self._last_append: _LastAppend | None = None
        self._segments[-1].open_handle()
        self._producer_state = ProducerStateManager(directory, directory.name)
        # The last markers this replica wrote or read (offset, commit?, producer id), for the pictures:
        # since the log was opened, at most MARKERS_KEPT.
        self.recent_markers: deque[tuple[int, bool, int]] = deque(maxlen=MARKERS_KEPT)

    # --- opening and recovery -----------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        directory: Path,
        config: LogConfig,
        *,
        now_ms: int,
        recovery_point: int | None = None,
        log_start_offset: int | None = None,
        cleaner_checkpoint: int | None = None,
    ) -> PartitionLog:
        """Open (or create) the log in ``directory``, recovering what a crash left.

        ``recovery_point`` is the checkpointed offset below which the log was flushed (None:
        recover every segment); ``log_start_offset`` and ``cleaner_checkpoint`` are the
        checkpointed values, when the broker has them.
        """
        directory = Path(directory)
        parse_partition_dir(directory.name)
        directory.mkdir(parents=True, exist_ok=True)
        epoch_cache = LeaderEpochCache.for_partition_dir(directory)
        segments = _load_segments(
            directory, config, epoch_cache, now_ms=now_ms, recovery_point=recovery_point or 0
        )
        if not segments:
            segments = [_new_segment(directory, log_start_offset or 0, config, now_ms)]
        log_end_offset = segments[-1].next_offset
        start = max(segments[0].base_offset, log_start_offset or 0)
        start = min(start, log_end_offset)
        epoch_cache.truncate_from_end(log_end_offset)
        epoch_cache.truncate_from_start(start)
        log = cls(
            directory,
            config,
            segments,
            epoch_cache,
            log_start_offset=start,
            recovery_point=min(max(recovery_point or 0, start), log_end_offset),
            cleaner_checkpoint=min(max(cleaner_checkpoint or start, start), log_end_offset),
        )
        log._load_producer_state()
        return log

    # --- properties -----------------------------------------------------------------------------------

    @property
    def dir(self) -> Path:
        return self._dir

    @property
    def topic(self) -> str:
        return self._topic

    @property
    def partition(self) -> int:
        return self._partition

    @property
    def config(self) -> LogConfig:
        return self._config

    def update_config(self, config: LogConfig) -> None:
        """New settings apply from the next append (the active segment's index interval too)."""
        self._config = config
        self._segments[-1].index_interval_bytes = config.index_interval_bytes

    @property
    def log_start_offset(self) -> int:
        return self._log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self._segments[-1].next_offset

    @property
    def recovery_point(self) -> int:
        return self._recovery_point

    @property
    def cleaner_checkpoint(self) -> int:
        """The first dirty offset: the cleaner has compacted everything below it."""
        return self._cleaner_checkpoint

    @property
    def size_in_bytes(self) -> int:
        return sum(s.size for s in self._segments)

    @property
    def segments(self) -> tuple[SegmentInfo, ...]:
        last = len(self._segments) - 1
        return tuple(s.info(active=i == last) for i, s in enumerate(self._segments))

    @property
    def leader_epoch_cache(self) -> LeaderEpochCache:
        return self._epoch_cache

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def producer_state(self) -> ProducerStateManager:
        return self._producer_state

    def _load_producer_state(self) -> None:
        """Kafka's loadProducerState: the latest snapshot at or below the log end, then the batches after it.

        The replay rebuilds the aborted-transaction index from ``start`` on too: the entries of
        markers it will see again are dropped first, then written back as it meets them.
        """
        state = self._producer_state
        start = state.reload(self._log_start_offset, self.log_end_offset)
        for segment in self._segments:
            if segment.next_offset > start:
                segment.txn_index.truncate_to(start)
        for segment in self._segments:
            if segment.next_offset <= start or segment.size == 0:
                continue
            for fields, view in segment.batches_from(start):
                if fields[0] + fields[6] < start:
                    continue
                if fields[5] & CONTROL_MASK:
                    self._learn_marker(fields, view, segment)
                else:
                    state.update(fields)

    def _learn_marker(self, fields: tuple[int, ...], batch: bytes | memoryview, segment: LogSegment) -> None:
        try:
            marker = decode_marker(fields, batch)
        except NotAMarker:
            return  # not a marker Kafka writes: nothing to learn
        aborted = self._producer_state.complete_txn(marker, fields[0])
        self.recent_markers.append((fields[0], marker.commit, marker.producer_id))
        if aborted is not None:
            segment.txn_index.append(aborted)

    # --- transactions ---------------------------------------------------------------------------------

    def append_marker(self, marker: Marker, *, leader_epoch: int, now_ms: int) -> AppendInfo:
        """Write a commit or abort marker at the log end (the leader's side of WriteTxnMarkers)."""
        self._check_open()
        self._producer_state.check_marker(marker)
        offset = self.log_end_offset
        batch = encode_marker(
            marker, base_offset=offset, timestamp_ms=now_ms, partition_leader_epoch=leader_epoch
        )
        self._maybe_roll(len(batch), now_ms, offset, offset, now_ms)
        segment = self._segments[-1]
        segment.append([batch], [(len(batch), offset, now_ms)])
        self._epoch_cache.assign(leader_epoch, offset)
        aborted = self._producer_state.complete_txn(marker, offset)
        self.recent_markers.append((offset, marker.commit, marker.producer_id))
        if aborted is not None:
            segment.txn_index.append(aborted)
        return AppendInfo(
            first_offset=offset,
            last_offset=offset,
            max_timestamp=now_ms,
            offset_of_max_timestamp=offset,
            record_count=1,
            batch_count=1,
            size_in_bytes=len(batch),
        )

    def first_unstable_offset(self, high_watermark: int) -> int | None:
        return self._producer_state.first_unstable_offset(high_watermark)

    def collect_aborted_transactions(self, fetch_offset: int, upper_bound: int) -> list[AbortedTxn]:
        """Kafka's collectAbortedTransactions: from the segment holding ``fetch_offset`` on."""
        out: list[AbortedTxn] = []
        first = max(0, bisect_right(self._bases, fetch_offset) - 1)
        for segment in self._segments[first:]:
            out += segment.txn_index.collect(fetch_offset, upper_bound)
        return out

    def aborted_transactions(self) -> list[AbortedTxn]:
        """Every entry of every segment's ``.txnindex`` (for the pictures and tests)."""
        return [txn for segment in self._segments for txn in segment.txn_index.entries]

    def __repr__(self) -> str:
        return (
            f"PartitionLog({self._dir.name}, log_start_offset={self._log_start_offset}, "
            f"log_end_offset={self.log_end_offset}, segments={len(self._segments)})"
        )

    def _check_open(self) -> None:
        if self._closed:
            raise KafkaStorageError(f"the log of {self._dir.name} is closed")

    # --- appends ----------------------------------------------------------------------------------------

    def append_as_leader(
        self, batches: bytes | bytearray | memoryview, *, leader_epoch: int, now_ms: int
    ) -> AppendInfo:
        """Validate every batch, give them offsets from the log end offset, write them.

        CorruptRecord for a bad byte, RecordTooLarge above max.message.bytes, InvalidRecord for a
        batch whose record count does not match its offsets, a control batch, or (on a compacted
        topic) a record without a key: nothing is appended if any batch is bad.
        """
        self._check_open()
        if leader_epoch < 0:
            raise IllegalArgument(f"leader epoch {leader_epoch} must be non-negative")
        config = self._config
        max_message_bytes = config.max_message_bytes
        view = memoryview(batches)
        total = len(view)
        slots: list[tuple[int, int, int, int]] = []  # position, size, last offset delta, max timestamp
        idempotent: list[tuple[int, tuple[int, ...]]] = []  # slot index, header fields
        pos = 0
        while pos < total:
            fields = check_batch(view, pos)
            size = fields[1] + LOG_OVERHEAD
            if size > max_message_bytes:
                raise RecordTooLarge(
                    f"the batch at position {pos} is {size} bytes, larger than max.message.bytes "
                    f"{max_message_bytes} of {self._dir.name}"
                )
            count, last_delta = fields[12], fields[6]
            if count <= 0 or last_delta + 1 != count:
                raise InvalidRecord(
                    f"the batch at position {pos} holds {count} records but its offsets span {last_delta + 1}"
                )
            if fields[5] & CONTROL_MASK:
                raise InvalidRecord("clients are not allowed to write control batches")
            if config.compact:
                self._check_keys(view[pos : pos + size], pos)
            if fields[9] >= 0:
                idempotent.append((len(slots), fields))
            slots.append((pos, size, last_delta, fields[8]))
            pos += size
        if not slots:
            return _nothing_appended()
        first_offset = self.log_end_offset
        pending: dict[int, ProducerStateEntry] = {}
        if idempotent:
            duplicate = self._check_producers(idempotent, pending, first_offset)
            if duplicate is not None:
                return duplicate
        pieces: list[bytes | memoryview] = []
        batch_infos: list[tuple[int, int, int]] = []
        offset = first_offset
        max_timestamp, offset_of_max = NO_TIMESTAMP, first_offset
        pack = _LEADER_PREFIX.pack
        for pos, size, last_delta, batch_max in slots:
            pieces.append(pack(offset, size - LOG_OVERHEAD, leader_epoch))
            pieces.append(view[pos + MAGIC_POS : pos + size])
            last = offset + last_delta
            batch_infos.append((size, last, batch_max))
            if batch_max > max_timestamp:
                max_timestamp, offset_of_max = batch_max, last
            offset = last + 1
        last_offset = offset - 1
        self._maybe_roll(total, max_timestamp, first_offset, last_offset, now_ms)
        active = self._segments[-1]
        active.append(pieces, batch_infos)
        self._last_append = _LastAppend(active, pieces, first_offset, last_offset + 1, len(slots))
        self._epoch_cache.assign(leader_epoch, first_offset)
        if idempotent:
            for index, fields in idempotent:
                last = batch_infos[index][1]
                if fields[11] == NO_SEQUENCE:
                    pending[fields[9]].add_unsequenced(fields[10], fields[8])
                else:
                    pending[fields[9]].add_batch(
                        fields[10], increment_sequence(fields[11], fields[6]), last, fields[6], fields[8]
                    )
                if fields[5] & TRANSACTIONAL_MASK:
                    entry = pending[fields[9]]
                    if entry.current_txn_first_offset is None:
                        entry.current_txn_first_offset = last - fields[6]
            self._producer_state.commit(pending)
        return AppendInfo(
            first_offset=first_offset,
            last_offset=last_offset,
            max_timestamp=max_timestamp,
            offset_of_max_timestamp=offset_of_max,
            record_count=last_offset - first_offset + 1,
            batch_count=len(slots),
            size_in_bytes=total,
        )

    def _check_producers(
        self,
        idempotent: list[tuple[int, tuple[int, ...]]],
        pending: dict[int, ProducerStateEntry],
        offset: int,
    ) -> AppendInfo | None:
        """The producer state's checks of every idempotent batch; the original's offsets for a duplicate."""
        for _index, fields in idempotent:
            duplicate = self._producer_state.check_append(
                pending, fields[9], fields[10], fields[11], fields[6], offset
            )
            if duplicate is not None:
                return AppendInfo(
                    first_offset=duplicate.first_offset,
                    last_offset=duplicate.last_offset,
                    max_timestamp=duplicate.timestamp,
                    offset_of_max_timestamp=duplicate.last_offset,
                    record_count=0,
                    batch_count=0,
                    size_in_bytes=0,
                    duplicate=True,
                )
        return None

    def _check_keys(self, batch: memoryview, position: int) -> None:
        for index, record in enumerate(decode_records(batch)):
            if record.key is None:
                raise InvalidRecord(
                    f"Compacted topic cannot accept message without key in topic partition {self._dir.name} "
                    f"(record {index} of the batch at position {position})"
                )

    def append_as_follower(self, batches: bytes | bytearray | memoryview, *, now_ms: int) -> AppendInfo:
        """Append batches that already carry the leader's offsets and epochs.

        As Kafka: the first batch may not start below the log end offset (UnexpectedAppendOffset;
        above it is fine, a compacted leader log has gaps) and offsets must increase from batch to
        batch (OffsetsOutOfOrder). The leader epoch cache learns each batch's epoch.
        """
        self._check_open()
        view = memoryview(batches)
        total = len(view)
        batch_infos: list[tuple[int, int, int]] = []
        epochs: list[tuple[int, int]] = []
        producers: list[tuple[int, ...]] = []  # idempotent and control batches' header fields, and position
        pos = 0
        previous_last = self.log_end_offset - 1
        record_count = 0
        max_timestamp, offset_of_max = NO_TIMESTAMP, -1
        while pos < total:
            # No max.message.bytes check: the leader accepted these batches (Kafka skips it for followers too).
            fields = check_batch(view, pos)
            size = fields[1] + LOG_OVERHEAD
            base, last = fields[0], fields[0] + fields[6]
            if base <= previous_last:
                if not batch_infos:
                    raise UnexpectedAppendOffset(
                        f"{self._dir.name}: the first batch starts at offset {base}, "
                        f"below the log end offset "
                        f"{self.log_end_offset}"
                    )
                raise OffsetsOutOfOrder(
                    f"{self._dir.name}: the batch at position {pos} starts at offset {base}, "
                    f"not after the previous batch's last offset {previous_last}"
                )
            batch_infos.append((size, last, fields[8]))
            if fields[2] >= 0:
                epochs.append((fields[2], base))
            if fields[9] >= 0:
                producers.append((*fields, pos))
            if fields[8] > max_timestamp:
                max_timestamp, offset_of_max = fields[8], last
            record_count += fields[12]
            previous_last = last
            pos += size
        if not batch_infos:
            return _nothing_appended()
        first = _BASE_OFFSET.unpack_from(view, 0)[0]
        self._maybe_roll(total, max_timestamp, first, previous_last, now_ms)
        active = self._segments[-1]
        active.append([view], batch_infos)
        self._last_append = _LastAppend(active, [view], first, previous_last + 1, len(batch_infos))
        for epoch, start in epochs:
            self._epoch_cache.assign(epoch, start)
        for fields in producers:
            if fields[5] & CONTROL_MASK:
                at = fields[13]  # where the batch sits in what was appended
                self._learn_marker(fields, view[at : at + fields[1] + LOG_OVERHEAD], self._segments[-1])
            else:
                self._producer_state.update(fields)
        return AppendInfo(
            first_offset=first,
            last_offset=previous_last,
            max_timestamp=max_timestamp,
            offset_of_max_timestamp=offset_of_max,
            record_count=record_count,
            batch_count=len(batch_infos),
            size_in_bytes=total,
        )

    # --- rolling ------------------------------------------------------------------------------------

    def _maybe_roll(
        self, messages_size: int, max_timestamp: int, first_offset: int, last_offset: int, now_ms: int
    ) -> None:
        """Kafka's LogSegment.shouldRoll: full by bytes or index, old by segment.ms, or offsets past int32."""
        segment = self._segments[-1]
        config = self._config
        if segment.rolling_based_timestamp is not None and segment.rolling_based_timestamp >= 0:
            waited = max_timestamp - segment.rolling_based_timestamp
        else:
            waited = now_ms - segment.created_ms
        if (
            (segment.size > 0 and segment.size + messages_size > config.segment_bytes)
            or (segment.size > 0 and waited > config.segment_ms)
            or segment.offset_index.is_full
            or segment.time_index.is_full
            or last_offset - segment.base_offset > INT32_MAX
        ):
            self._roll_to(max(first_offset, self.log_end_offset), now_ms)

    def roll(self, now_ms: int) -> SegmentInfo:
        """Start a new active segment at the log end offset (nothing happens if the active one is empty)."""
        self._check_open()
        self._roll_to(self.log_end_offset, now_ms)
        return self._segments[-1].info(active=True)

    def _roll_to(self, new_base: int, now_ms: int) -> None:
        active = self._segments[-1]
        if active.size == 0:
            if new_base == active.base_offset:
                return
            # An empty active segment cannot hold offsets this far on: replace it.
            active.delete()
            self._segments.pop()
            self._bases.pop()
            if not self._segments:
                self._log_start_offset = max(self._log_start_offset, new_base)
        else:
            active.on_become_inactive()
        segment = _new_segment(self._dir, new_base, self._config, now_ms)
        segment.open_handle()
        self._segments.append(segment)
        self._bases.append(new_base)
        # As Kafka: a producer snapshot at the new segment's base offset on every roll, so that
        # loading the state replays at most the active segment.
        self._producer_state.take_snapshot(new_base)
        # Kafka schedules a flush of everything before the new segment on every roll.
        self.flush(new_base)

    # --- reads ---------------------------------------------------------------------------------------

    def _out_of_range(self, offset: int) -> OffsetOutOfRange:
        return OffsetOutOfRange(
            f"offset {offset} of {self._dir.name} is out of range: the log holds offsets "
            f"{self._log_start_offset} to {self.log_end_offset} (log start offset to log end offset)"
        )

    def read(self, offset: int, max_bytes: int, *, max_offset: int | None = None) -> FetchData:
        """Whole batches from the one holding ``offset``, about ``max_bytes`` of them.

        At least one batch when there is one, even if larger than ``max_bytes`` (as Kafka); never
        a batch whose last offset is >= ``max_offset`` (consumers read below the high watermark).
        OffsetOutOfRange below the log start offset or past the log end offset; at the log end
        offset the result is empty.
        """
        self._check_open()
        if offset < self._log_start_offset or offset > self.log_end_offset:
            raise self._out_of_range(offset)
        last = self._last_append
        if (
            last is not None
            and offset == last.first_offset
            and (max_offset is None or last.next_offset <= max_offset)
            and last.segment is self._segments[-1]
            and last.segment.size == last.end
        ):
            fetched = last.read(max_bytes)
            if fetched is not None:
                return fetched
        if offset != self.log_end_offset and (max_offset is None or offset < max_offset):
            segments = self._segments
            for i in range(max(0, bisect_right(self._bases, offset) - 1), len(segments)):
                found = segments[i].read(offset, max_bytes, max_offset)
                if found is not None:
                    records, first_offset, next_offset = found
                    if records:
                        return FetchData(
                            fetch_offset=offset,
                            records=records,
                            first_offset=first_offset,
                            next_offset=next_offset,
                        )
                    break
        return FetchData(fetch_offset=offset, records=b"", first_offset=offset, next_offset=offset)

    def offset_for_timestamp(self, timestamp_ms: int) -> int | None:
        """The first offset whose record timestamp is >= ``timestamp_ms`` (ListOffsets), None if none.

        The special timestamps -2 (earliest) and -1 (latest) give the log start and end offsets.
        """
        self._check_open()
        if timestamp_ms == EARLIEST_TIMESTAMP:
            return self._log_start_offset
        if timestamp_ms == LATEST_TIMESTAMP:
            return self.log_end_offset
        for segment in self._segments:
            if segment.max_timestamp >= timestamp_ms and segment.next_offset > self._log_start_offset:
                found = segment.find_offset_by_timestamp(timestamp_ms, self._log_start_offset)
                if found is not None:
                    return found
        return None

    def epoch_for_offset(self, offset: int) -> int | None:
        return self._epoch_cache.epoch_for_offset(offset)

    # --- truncation ----------------------------------------------------------------------------------

    def truncate_to(self, offset: int) -> bool:
        """Drop every batch holding an offset >= ``offset`` (a batch is never split); True if anything went.

        Segments, indexes and the leader epoch cache follow; a target below the first segment
        empties the log and starts it at ``offset``.
        """
        self._check_open()
        if offset < 0:
            raise IllegalArgument(f"cannot truncate {self._dir.name} to a negative offset ({offset})")
        if offset >= self.log_end_offset:
            return False
        if offset < self._segments[0].base_offset:
            self.truncate_fully_and_start_at(offset)
            return True
        keep = bisect_right(self._bases, offset)
        for segment in self._segments[keep:]:
            segment.delete()
        del self._segments[keep:]
        del self._bases[keep:]
        active = self._segments[-1]
        active.open_handle()
        active.truncate_to(offset)
        end = self.log_end_offset
        self._epoch_cache.truncate_from_end(end)
        self._log_start_offset = min(self._log_start_offset, end)
        self._recovery_point = min(self._recovery_point, end)
        self._cleaner_checkpoint = min(self._cleaner_checkpoint, end)
        self._load_producer_state()  # Kafka's truncateAndReload
        return True

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Delete every segment and start empty at ``offset`` (a follower far behind a leader's log start)."""
        self._check_open()
        if offset < 0:
            raise IllegalArgument(f"cannot start {self._dir.name} at a negative offset ({offset})")
        for segment in self._segments:
            segment.delete()
        segment = _new_segment(self._dir, offset, self._config, self._segments[-1].created_ms)
        segment.open_handle()
        self._segments = [segment]
        self._bases = [offset]
        self._epoch_cache.clear()
        self._log_start_offset = offset
        self._recovery_point = offset
        self._cleaner_checkpoint = offset
        self._producer_state.clear()

    # --- durability and life cycle ------------------------------------------------------------------

    def flush(self, offset: int | None = None) -> None:
        """Make everything below ``offset`` (default: the log end offset) durable.

        The recovery point moves there; the index entries of those segments reach their files.
        """
        self._check_open()
        up_to = self.log_end_offset if offset is None else min(offset, self.log_end_offset)
        if up_to <= self._recovery_point:
            return
        for segment in self._segments:
            if segment.base_offset < up_to:
                segment.flush()
        self._recovery_point = up_to

    def close(self) -> None:
        """A clean shutdown: flush everything, close the files."""
        if self._closed:
            return
        self.flush()
        self._producer_state.take_snapshot(self.log_end_offset)  # a clean shutdown leaves one, as Kafka's
        for segment in self._segments:
            segment.close()
        self._closed = True

    def crash(self, lose_unflushed: bool) -> None:
        """The broker process dies. With ``lose_unflushed`` the machine loses power too: every byte
        above the recovery point (the page cache) is gone. Reopen with ``PartitionLog.open``.
        """
        if self._closed:
            return
        point = self._recovery_point
        for i, segment in enumerate(self._segments):
            segment.close_handle()
            if not lose_unflushed or segment.next_offset <= point:
                continue
            if segment.base_offset >= point and i > 0:
                segment.delete()  # created after the last flush: never made durable
                continue
            slot = segment.translate_offset(point)
            if slot is not None:
                segment.cut_to_position(slot.position)
        self._closed = True

    def delete(self) -> None:
        """Remove the partition's directory and everything in it."""
        for segment in self._segments:
            segment.close_handle()
        self._closed = True
        shutil.rmtree(self._dir, ignore_errors=True)

    # --- retention ------------------------------------------------------------------------------------

    def delete_old_segments(self, now_ms: int, *, high_watermark: int | None = None) -> RetentionStats:
        """Kafka's UnifiedLog.deleteOldSegments: delete whole segments, oldest first.

        Segments wholly below the log start offset go under any policy; with cleanup.policy
        delete, so do segments beyond retention.bytes and segments whose newest record is older
        than retention.ms. A segment goes only if every offset in it is below ``high_watermark``
        (when given), so the log start offset never passes it. The active segment is no
        exception: when every segment is deletable the log first rolls a new, empty one at the
        log end offset, and the log start offset reaches the log end offset (an idle partition
        whose data all expired holds nothing).
        """
        self._check_open()
        config = self._config
        start = self._log_start_offset
        by_start = self._delete_segments(
            lambda _s, nxt: nxt is not None and nxt.base_offset <= self._log_start_offset,
            high_watermark,
            now_ms,
        )
        by_size = by_time = 0
        if config.delete and config.retention_bytes >= 0 and self.size_in_bytes >= config.retention_bytes:
            excess = self.size_in_bytes - config.retention_bytes

            def over_size(segment: LogSegment, _next: LogSegment | None) -> bool:
                nonlocal excess
                if excess - segment.size >= 0:
                    excess -= segment.size
                    return True
                return False

            by_size = self._delete_segments(over_size, high_watermark, now_ms)
        if config.delete and config.retention_ms >= 0:
            by_time = self._delete_segments(
                lambda s, _nxt: now_ms - _largest_timestamp(s) > config.retention_ms, high_watermark, now_ms
            )
        return RetentionStats(
            by_log_start_offset=by_start,
            by_retention_bytes=by_size,
            by_retention_ms=by_time,
            log_start_offset_before=start,
            log_start_offset=self._log_start_offset,
        )

    def _delete_segments(
        self,
        predicate: Callable[[LogSegment, LogSegment | None], bool],
        high_watermark: int | None,
        now_ms: int,
    ) -> int:
        """Kafka's deletableSegments then deleteSegments: the leading run of segments ``predicate``
        accepts, each wholly below the high watermark; the last segment only if it holds data."""
        segments = self._segments
        count = 0
        for i, segment in enumerate(segments):
            following = segments[i + 1] if i + 1 < len(segments) else None
            upper = following.base_offset if following is not None else self.log_end_offset
            if high_watermark is not None and high_watermark < upper:
                break
            if following is None and segment.size == 0:
                break
            if not predicate(segment, following):
                break
            count += 1
        if not count:
            return 0
        if count == len(segments):
            # A log always has a segment: roll an empty one at the log end offset first.
            self._roll_to(self.log_end_offset, now_ms)
        for _ in range(count):
            self._delete_first_segment()
        self._advance_log_start(self._segments[0].base_offset)
        return count

    def _delete_first_segment(self) -> None:
        self._segments.pop(0).delete()
        self._bases.pop(0)
        self._producer_state.delete_snapshots_below(self._bases[0])

    def _delete_below_log_start(self) -> int:
        count = 0
        while len(self._segments) > 1 and self._segments[1].base_offset <= self._log_start_offset:
            self._delete_first_segment()
            count += 1
        return count

    def _advance_log_start(self, offset: int) -> None:
        if offset <= self._log_start_offset:
            return
        self._log_start_offset = offset
        self._epoch_cache.truncate_from_start(offset)
        self._recovery_point = max(self._recovery_point, offset)
        self._cleaner_checkpoint = max(self._cleaner_checkpoint, offset)

    def maybe_increment_log_start_offset(self, offset: int, *, high_watermark: int | None = None) -> bool:
        """DeleteRecords: move the log start offset up to ``offset`` and delete segments wholly below it.

        OffsetOutOfRange past the high watermark (or the log end offset when none is given).
        """
        self._check_open()
        limit = self.log_end_offset if high_watermark is None else min(high_watermark, self.log_end_offset)
        if offset > limit:
            raise OffsetOutOfRange(
                f"cannot move the log start offset of {self._dir.name} to {offset}: above "
                f"{'the high watermark' if high_watermark is not None else 'the log end offset'} {limit}"
            )
        if offset <= self._log_start_offset:
            return False
        self._advance_log_start(offset)
        self._delete_below_log_start()
        return True

    # --- compaction ---------------------------------------------------------------------------------

    def compact(self, now_ms: int, *, force: bool = False, high_watermark: int | None = None) -> CleanerStats:
        """The log cleaner (cleanup.policy compact): keep the latest record of each key.

        Cleans the non-active segments below the first uncleanable offset (the active segment,
        ``high_watermark`` when given, and min.compaction.lag.ms bound it). Offsets never change:
        rewritten batches keep their base offset and offset range, removed records leave gaps.
        Records without a key are dropped. Tombstones (null value) follow KIP-534: the first
        cleaning that keeps a tombstone stamps its batch with a delete horizon, now plus
        delete.retention.ms; a cleaning after the horizon drops it. Skipped when the dirty ratio is
        below min.cleanable.dirty.ratio, unless ``force`` or a delete horizon has passed (so an
        idle compacted log still loses its tombstones). Each group of segments is rewritten to
        ``.cleaned`` files, renamed to ``.swap``, then swapped in, so a crash at any point leaves
        either the old segments or the new.
        """
        self._check_open()
        config = self._config
        first_dirty = max(self._cleaner_checkpoint, self._log_start_offset)
        segments = self._segments
        bound = segments[-1].base_offset
        if high_watermark is not None:
            bound = min(bound, high_watermark)
        if config.min_compaction_lag_ms > 0:
            for segment in segments[:-1]:
                if segment.max_timestamp > now_ms - config.min_compaction_lag_ms:
                    bound = min(bound, segment.base_offset)
                    break
        cleanable = [s for i, s in enumerate(segments[:-1]) if segments[i + 1].base_offset <= bound]
        next_bases = {s.base_offset: segments[i + 1].base_offset for i, s in enumerate(segments[:-1])}
        dirty = [s for s in cleanable if next_bases[s.base_offset] > first_dirty]
        clean_bytes = sum(s.size for s in cleanable if s not in dirty)
        dirty_bytes = sum(s.size for s in dirty)
        ratio = dirty_bytes / (clean_bytes + dirty_bytes) if clean_bytes + dirty_bytes else 0.0
        end = next_bases[cleanable[-1].base_offset] if cleanable else first_dirty
        horizon = self._pending_delete_horizon(cleanable)
        horizon_passed = horizon is not None and horizon <= now_ms

        def skipped(reason: str) -> CleanerStats:
            return CleanerStats(
                skipped_reason=reason,
                dirty_ratio=ratio,
                first_dirty_offset=first_dirty,
                first_uncleanable_offset=bound,
                next_delete_horizon_ms=horizon,
            )

        if not config.compact:
            return skipped("cleanup.policy does not include compact")
        if not dirty and not horizon_passed:
            return skipped("no dirty segments below the first uncleanable offset")
        below_ratio = ratio < config.min_cleanable_dirty_ratio
        if not force and below_ratio and not horizon_passed:
            return skipped(
                f"dirty ratio {ratio:.2f} is below "
                f"min.cleanable.dirty.ratio {config.min_cleanable_dirty_ratio}"
            )
        latest: dict[bytes, int] = {}
        for segment in dirty:
            for _slot, batch in segment.batches():
                header = read_header(batch)
                # Transactional records are kept whole and never supersede others: an aborted one
                # must not take the place of a committed record with its key.
                if header.is_control or header.is_transactional:
                    continue
                for record in decode_records(batch):
                    if record.key is not None:
                        latest[record.key] = record.offset
        counters = _CleanerCounters()
        # Segments cleaned before but beyond this round (a lower HW bounds it) keep horizons unseen.
        unseen = any(s.base_offset < self._cleaner_checkpoint for s in segments[len(cleanable) :])
        for group in self._group_for_cleaning(cleanable, next_bases):
            self._clean_group(group, latest, now_ms, counters)
        self._cleaner_checkpoint = max(self._cleaner_checkpoint, end)
        self._delete_horizon, self._delete_horizon_known = counters.next_horizon, not unseen
        return CleanerStats(
            skipped_reason=None,
            dirty_ratio=ratio,
            first_dirty_offset=first_dirty,
            first_uncleanable_offset=bound,
            segments_read=len(cleanable),
            segments_written=counters.segments_written,
            bytes_read=sum(s.size for s in cleanable),
            bytes_written=counters.bytes_written,
            records_read=counters.records_read,
            records_retained=counters.records_retained,
            records_removed=counters.records_removed,
            tombstones_removed=counters.tombstones_removed,
            tombstones_retained=counters.tombstones_retained,
            delete_horizons_set=counters.horizons_set,
            for_delete_horizon=horizon_passed and below_ratio and not force,
            next_delete_horizon_ms=counters.next_horizon,
        )

    def _pending_delete_horizon(self, cleaned: list[LogSegment]) -> int | None:
        """The earliest delete horizon of a batch that still holds tombstones (None: none).

        Known after every cleaning; after a restart, read once from the batches that carry one.
        """
        if not self._delete_horizon_known:
            earliest: int | None = None
            for segment in cleaned:
                for _slot, batch in segment.batches():
                    found = read_header(batch).delete_horizon_ms
                    if found is None or (earliest is not None and found >= earliest):
                        continue
                    if any(r.value is None for r in decode_records(batch)):
                        earliest = found
            self._delete_horizon, self._delete_horizon_known = earliest, True
        return self._delete_horizon

    def _group_for_cleaning(
        self, segments: list[LogSegment], next_bases: dict[int, int]
    ) -> list[list[LogSegment]]:
        """Kafka's groupSegmentsBySize: neighbours whose sizes and indexes fit one segment together."""
        config = self._config
        groups: list[list[LogSegment]] = []
        for segment in segments:
            if groups:
                group = groups[-1]
                fits = (
                    sum(s.size for s in group) + segment.size <= config.segment_bytes
                    and sum(len(s.offset_index) for s in group) + len(segment.offset_index)
                    < segment.offset_index.max_entries
                    and sum(len(s.time_index) for s in group) + len(segment.time_index)
                    < segment.time_index.max_entries
                    and next_bases[segment.base_offset] - 1 - group[0].base_offset <= INT32_MAX
                )
                if fits:
                    group.append(segment)
                    continue
            groups.append([segment])
        return groups

    def _clean_group(
        self, group: list[LogSegment], latest: dict[bytes, int], now_ms: int, counters: _CleanerCounters
    ) -> None:
        config = self._config
        base = group[0].base_offset
        cleaned = LogSegment.create(
            self._dir,
            base,
            index_interval_bytes=config.index_interval_bytes,
            max_index_size=config.segment_index_bytes,
            now_ms=now_ms,
            suffix=CLEANED_SUFFIX,
        )
        for segment in group:
            for _slot, batch in segment.batches():
                header = read_header(batch)
                if header.is_control or header.is_transactional:
                    cleaned.append([batch], [(len(batch), header.last_offset, header.max_timestamp)])
                    continue
                records = decode_records(batch)
                horizon = header.delete_horizon_ms
                kept = [r for r in records if _retain(r, latest, now_ms, horizon, counters)]
                counters.records_read += len(records)
                counters.records_retained += len(kept)
                if not kept:
                    continue
                tombstones = sum(1 for r in kept if r.value is None)
                counters.tombstones_retained += tombstones
                if tombstones and horizon is None:
                    # KIP-534: the first cleaning to keep a tombstone starts its delete.retention.ms.
                    horizon = now_ms + config.delete_retention_ms
                    counters.horizons_set += 1
                elif not tombstones:
                    horizon = None  # nothing left for a horizon to govern
                if tombstones:
                    counters.note_horizon(horizon)
                if len(kept) == len(records) and horizon == header.delete_horizon_ms:
                    out = batch
                    max_timestamp = header.max_timestamp
                else:
                    out = encode_batch(
                        kept,
                        base_offset=header.base_offset,
                        last_offset_delta=header.last_offset_delta,
                        compression=header.compression,
                        producer_id=header.producer_id,
                        producer_epoch=header.producer_epoch,
                        base_sequence=header.base_sequence,
                        partition_leader_epoch=header.partition_leader_epoch,
                        is_transactional=header.is_transactional,
                        delete_horizon_ms=horizon,
                    )
                    max_timestamp = max(r.timestamp for r in kept)
                cleaned.append([out], [(len(out), header.last_offset, max_timestamp)])
        for segment in group:  # the aborted transactions whose markers the group holds stay indexed
            for txn in segment.txn_index.entries:
                cleaned.txn_index.append(txn)
        cleaned.on_become_inactive()
        counters.segments_written += 1
        counters.bytes_written += cleaned.size
        # The swap: .cleaned -> .swap (the commit point), delete the old segments, .swap -> .log.
        cleaned.change_suffix(SWAP_SUFFIX)
        first = self._segments.index(group[0])
        for segment in group:
            segment.delete()
        cleaned.change_suffix("")
        self._segments[first : first + len(group)] = [cleaned]
        self._bases[first : first + len(group)] = [base]


# --- helpers ------------------------------------------------------------------------------------------


@dataclass(slots=True)
class _CleanerCounters:
    segments_written: int = 0
    bytes_written: int = 0
    records_read: int = 0
    records_retained: int = 0
    records_removed: int = 0
    tombstones_removed: int = 0
    tombstones_retained: int = 0
    horizons_set: int = 0
    next_horizon: int | None = None

    def note_horizon(self, horizon: int | None) -> None:
        if horizon is not None and (self.next_horizon is None or horizon < self.next_horizon):
            self.next_horizon = horizon


def _retain(
    record: Record,
    latest: dict[bytes, int],
    now_ms: int,
    delete_horizon_ms: int | None,
    counters: _CleanerCounters,
) -> bool:
    """Kafka's shouldRetainRecord: the key's latest record, and a tombstone only before its horizon."""
    if record.key is None:
        counters.records_removed += 1
        return False
    newest = latest.get(record.key)
    if newest is not None and record.offset < newest:
        counters.records_removed += 1
        return False
    if record.value is None and delete_horizon_ms is not None and now_ms >= delete_horizon_ms:
        counters.tombstones_removed += 1
        return False
    return True


def _largest_timestamp(segment: LogSegment) -> int:
    """Kafka's LogSegment.largestTimestamp: the newest record's, else when the segment was made."""
    return segment.max_timestamp if segment.max_timestamp != NO_TIMESTAMP else segment.created_ms


def _nothing_appended() -> AppendInfo:
    return AppendInfo(
        first_offset=-1,
        last_offset=-1,
        max_timestamp=NO_TIMESTAMP,
        offset_of_max_timestamp=-1,
        record_count=0,
        batch_count=0,
        size_in_bytes=0,
    )


def _new_segment(directory: Path, base_offset: int, config: LogConfig, now_ms: int) -> LogSegment:
    return LogSegment.create(
        directory,
        base_offset,
        index_interval_bytes=config.index_interval_bytes,
        max_index_size=config.segment_index_bytes,
        now_ms=now_ms,
    )


def _load_segments(
    directory: Path, config: LogConfig, epoch_cache: LeaderEpochCache, *, now_ms: int, recovery_point: int
) -> list[LogSegment]:
    """Kafka's LogLoader: finish an interrupted cleaning, load segments, recover past the recovery point."""
    _complete_swaps(directory, config, now_ms)
    names = {p.name for p in directory.iterdir() if p.is_file()}
    bases = sorted(
        b for name in names if name.endswith(LOG_SUFFIX) and (b := offset_from_filename(name)) is not None
    )
    for name in names:
        base = offset_from_filename(name)
        if (
            base is not None
            and name.endswith((INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX))
            and base not in bases
        ):
            (directory / name).unlink()  # an index without its log
    segments: list[LogSegment] = []
    # Recovery starts at the segment holding the recovery point: it and all later ones may be torn.
    first_unflushed = max(0, bisect_right(bases, recovery_point) - 1)
    for i, base in enumerate(bases):
        segment = LogSegment(
            directory,
            base,
            index_interval_bytes=config.index_interval_bytes,
            max_index_size=config.segment_index_bytes,
        )
        segment.created_ms = now_ms
        if segments and base < segments[-1].next_offset:
            raise KafkaStorageError(
                f"{directory.name}: segment {segment.log_path.name} overlaps the previous one, "
                f"which ends at offset "
                f"{segments[-1].next_offset - 1}"
            )
        if i >= first_unflushed:
            truncated = segment.recover(_EpochLearner(epoch_cache))
            segments.append(segment)
            if truncated:
                # Everything after a torn batch is suspect, as in Kafka: drop the later segments.
                for later in bases[i + 1 :]:
                    _delete_segment_files(directory, later)
                break
            continue
        try:
            segment.load()
        except (CorruptIndex, CorruptRecord, OSError):
            segment.recover(_EpochLearner(epoch_cache))
        segments.append(segment)
    return segments


class _EpochLearner:
    """Recovery's epoch rule (Kafka's): a batch teaches the cache only an epoch above the latest."""

    def __init__(self, cache: LeaderEpochCache) -> None:
        self.cache = cache

    def __call__(self, epoch: int, base_offset: int) -> None:
        latest = self.cache.latest_epoch
        if latest is None or epoch > latest:
            self.cache.assign(epoch, base_offset)


def _complete_swaps(directory: Path, config: LogConfig, now_ms: int) -> None:
    """Finish or undo a cleaning a crash interrupted.

    ``.cleaned`` files were never complete: delete them. A ``.log.swap`` is complete: it replaces
    the segments its offsets cover, then takes the ``.log`` name. Index ``.swap`` files without a
    ``.log.swap`` are leftovers of an interrupted rename: delete them (they are rebuilt).
    """
    for path in list(directory.iterdir()):
        if path.name.endswith((CLEANED_SUFFIX, DELETED_SUFFIX, ".tmp")):
            path.unlink()
    swaps = sorted(p for p in directory.iterdir() if p.name.endswith(LOG_SUFFIX + SWAP_SUFFIX))
    swap_bases = {offset_from_filename(p.name) for p in swaps}
    for path in list(directory.iterdir()):
        if path.name.endswith(SWAP_SUFFIX) and offset_from_filename(path.name) not in swap_bases:
            path.unlink()
    for path in swaps:
        base = offset_from_filename(path.name)
        assert base is not None
        swap = LogSegment(
            directory,
            base,
            index_interval_bytes=config.index_interval_bytes,
            max_index_size=config.segment_index_bytes,
            suffix=SWAP_SUFFIX,
        )
        swap.created_ms = now_ms
        swap.recover()
        end = max(swap.next_offset, base + 1)
        for log_path in list(directory.iterdir()):
            other = offset_from_filename(log_path.name)
            if log_path.name.endswith(LOG_SUFFIX) and other is not None and base <= other < end:
                _delete_segment_files(directory, other)
        swap.change_suffix("")


def _delete_segment_files(directory: Path, base_offset: int) -> None:
    prefix = filename_prefix(base_offset)
    for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX):
        (directory / f"{prefix}{suffix}").unlink(missing_ok=True)
