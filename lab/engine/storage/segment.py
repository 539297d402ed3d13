"""A log segment: one ``.log`` file of record batches and its ``.index`` and ``.timeindex``.

Files are named by the segment's base offset, 20 digits zero-padded, as in Kafka:
``00000000000000000000.log``. The segment treats batches as bytes: appends write them
whole (``os.writev``, no copy), reads hand back whole batches found through the sparse
offset index and a short scan of headers. Only ``find_offset_by_timestamp`` decodes records,
and only those of one batch.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from lab.engine.errors import CorruptRecord, KafkaStorageError
from lab.engine.records import (
    HEADER_SIZE,
    HEADER_STRUCT,
    LOG_OVERHEAD,
    MIN_BATCH_LENGTH,
    check_batch,
    decode_records,
)
from lab.engine.storage.index import CorruptIndex, OffsetIndex, TimeIndex
from lab.engine.storage.txn_index import TXN_INDEX_SUFFIX, TransactionIndex

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
CLEANED_SUFFIX = ".cleaned"  # a segment the cleaner is still writing
SWAP_SUFFIX = ".swap"  # a finished replacement, waiting to take its place
DELETED_SUFFIX = ".deleted"
NO_TIMESTAMP = -1
INT32_MAX = 2**31 - 1
_READ_CHUNK = 1 << 20
_IOV_MAX = 1024
_TAIL_BYTES = 64 << 10  # the last bytes appended that reads find in memory (LogSegment._tail)
# baseOffset, batchLength, partitionLeaderEpoch, magic, crc, attributes, lastOffsetDelta: enough to know
# where a batch ends and its last offset.
_SHORT_HEADER = struct.Struct(">qiibIhi")
_HEADER = HEADER_STRUCT


def filename_prefix(offset: int) -> str:
    return f"{offset:020d}"


def offset_from_filename(name: str) -> int | None:
    """The base offset in a segment file name, None if the name is not one."""
    stem = name.split(".", 1)[0]
    return int(stem) if len(stem) == 20 and stem.isdigit() else None


@dataclass(frozen=True, slots=True, kw_only=True)
class SegmentInfo:
    """What the dashboard draws for a segment."""

    base_offset: int
    size_in_bytes: int
    next_offset: int
    largest_timestamp: int  # -1 when empty
    index_entries: int
    time_index_entries: int
    active: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class BatchSlot:
    """Where a batch sits in a segment file and the offsets it covers."""

    position: int
    size: int
    base_offset: int
    last_offset: int


class LogSegment:
    """One segment. Only the active segment keeps its file open."""

    def __init__(
        self,
        directory: Path,
        base_offset: int,
        *,
        index_interval_bytes: int,
        max_index_size: int,
        suffix: str = "",
    ) -> None:
        self.dir = Path(directory)
        self.base_offset = base_offset
        self.suffix = suffix
        self.index_interval_bytes = index_interval_bytes
        prefix = filename_prefix(base_offset)
        self.log_path = self.dir / f"{prefix}{LOG_SUFFIX}{suffix}"
        self.offset_index = OffsetIndex(
            self.dir / f"{prefix}{INDEX_SUFFIX}{suffix}", base_offset, max_index_size
        )
        self.time_index = TimeIndex(
            self.dir / f"{prefix}{TIME_INDEX_SUFFIX}{suffix}", base_offset, max_index_size
        )
        # The aborted transactions whose abort markers are in this segment (Kafka's txnIndex).
        self.txn_index = TransactionIndex(self.dir / f"{prefix}{TXN_INDEX_SUFFIX}{suffix}")
        self.size = 0
        self.next_offset = base_offset
        self.max_timestamp = NO_TIMESTAMP
        self.offset_of_max_timestamp = base_offset
        self.rolling_based_timestamp: int | None = None  # the first batch's max timestamp (segment.ms rolls)
        self.created_ms = 0
        self.bytes_since_last_index_entry = 0
        self._fd: int | None = None
        # The last bytes appended (the page cache, as far as reads of them go): followers fetch
        # what the leader just wrote, and reading it back costs a system call per header and batch.
        # Kept while the file is open, from _tail_start to the end of the file; emptied by any
        # change other than an append.
        self._tail = bytearray()
        self._tail_start = 0

    # --- life cycle -------------------------------------------------------------------------------

    @classmethod
    def create(
        cls,
        directory: Path,
        base_offset: int,
        *,
        index_interval_bytes: int,
        max_index_size: int,
        now_ms: int,
        suffix: str = "",
    ) -> LogSegment:
        """A new, empty segment, its three files created (an existing .log of that name is emptied)."""
        segment = cls(
            directory,
            base_offset,
            index_interval_bytes=index_interval_bytes,
            max_index_size=max_index_size,
            suffix=suffix,
        )
        segment.created_ms = now_ms
        fd = os.open(segment.log_path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        os.close(fd)
        segment.offset_index.forget_file()
        segment.time_index.forget_file()
        segment.flush()
        return segment

    def open_handle(self) -> None:
        if self._fd is None:
            self._fd = os.open(self.log_path, os.O_RDWR | os.O_APPEND)

    def close_handle(self) -> None:
        self._forget_tail()
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def _forget_tail(self) -> None:
        self._tail = bytearray()
        self._tail_start = self.size

    def _remember(self, start: int, pieces: Sequence[bytes | bytearray | memoryview]) -> None:
        """What append just wrote at ``start``, kept for reads (at most _TAIL_BYTES of it)."""
        tail = self._tail
        if self._tail_start + len(tail) != start:
            tail.clear()
            self._tail_start = start
        for piece in pieces:
            tail += piece
        if len(tail) > _TAIL_BYTES:
            cut = len(tail) - _TAIL_BYTES // 2
            del tail[:cut]
            self._tail_start += cut

    def _read_at(self, fd: int, n: int, position: int) -> bytes:
        """``os.pread``, from memory when the bytes are among the last appended."""
        rel = position - self._tail_start
        if rel >= 0 and self._tail:
            with memoryview(self._tail) as view:
                return bytes(view[rel : rel + n])
        return os.pread(fd, n, position)

    def flush(self) -> None:
        """Write the index entries that only memory holds (the .log bytes are already written)."""
        self.offset_index.flush()
        self.time_index.flush()

    def on_become_inactive(self) -> None:
        """As Kafka when a segment rolls: a last time-index entry for its largest timestamp, files closed."""
        if self.max_timestamp != NO_TIMESTAMP:
            self.time_index.maybe_append(
                self.max_timestamp, self.offset_of_max_timestamp, skip_full_check=True
            )
        self.flush()
        self.close_handle()

    def close(self) -> None:
        self.on_become_inactive()

    def delete(self) -> None:
        self.close_handle()
        self.log_path.unlink(missing_ok=True)
        self.offset_index.delete()
        self.time_index.delete()
        self.txn_index.delete()

    def change_suffix(self, suffix: str) -> None:
        """Rename the three files (indexes first: the .log's name is what recovery trusts)."""
        prefix = filename_prefix(self.base_offset)
        self.offset_index.rename(self.dir / f"{prefix}{INDEX_SUFFIX}{suffix}")
        self.time_index.rename(self.dir / f"{prefix}{TIME_INDEX_SUFFIX}{suffix}")
        self.txn_index.rename(self.dir / f"{prefix}{TXN_INDEX_SUFFIX}{suffix}")
        new_log = self.dir / f"{prefix}{LOG_SUFFIX}{suffix}"
        os.replace(self.log_path, new_log)
        self.log_path = new_log
        self.suffix = suffix

    # --- loading and recovery -----------------------------------------------------------------------

    def load(self) -> None:
        """Trust the .log (it is below the recovery point), load and sanity-check the indexes.

        Raises CorruptIndex (or CorruptRecord) when anything looks wrong; the caller then recovers.
        """
        self.size = self.log_path.stat().st_size
        try:
            self.offset_index.load()
            self.time_index.load()
        except FileNotFoundError as e:
            raise CorruptIndex(f"{e.filename}: missing") from e
        self.offset_index.sanity_check(self.size)
        self.time_index.sanity_check()
        last_entry = self.time_index.last_entry
        if last_entry is not None:
            self.max_timestamp, self.offset_of_max_timestamp = last_entry
        entries = self.offset_index.entries()
        indexed_offset, position = entries[-1] if entries else (self.base_offset - 1, 0)
        self.next_offset = max(self.base_offset, indexed_offset + 1)
        self.bytes_since_last_index_entry = self.size - position
        # The batches after the last index entry give the next offset and any larger timestamp.
        for slot, fields, _view in self._scan(position, validate=False):
            self._note_batch(fields[0] + fields[6], fields[8])
            if slot.position == 0:
                self.rolling_based_timestamp = fields[8]
        if self.size > 0 and self.rolling_based_timestamp is None:
            self.rolling_based_timestamp = _HEADER.unpack(self._pread(HEADER_SIZE, 0))[8]
        if self.time_index.last_entry is not None and self.time_index.last_entry[1] >= self.next_offset:
            raise CorruptIndex(
                f"{self.time_index.path.name}: points past the log's end offset {self.next_offset}"
            )

    def recover(self, on_batch: Callable[[int, int], None] | None = None) -> int:
        """Re-validate every batch, rebuild both indexes, cut the file at the first bad byte.

        ``on_batch(partition_leader_epoch, base_offset)`` is called for each good batch (the
        leader epoch cache learns epochs from them). Returns the number of bytes cut off.
        """
        file_size = self.log_path.stat().st_size
        self.size = file_size
        self._forget_tail()
        self.offset_index.reset()
        self.time_index.reset()
        self.max_timestamp = NO_TIMESTAMP
        self.offset_of_max_timestamp = self.base_offset
        self.rolling_based_timestamp = None
        self.bytes_since_last_index_entry = 0
        self.next_offset = self.base_offset
        valid = 0
        try:
            for slot, fields, _view in self._scan(0, validate=True):
                if slot.base_offset < self.next_offset or slot.last_offset - self.base_offset > INT32_MAX:
                    raise CorruptRecord(
                        f"{self.log_path.name}: batch at position {slot.position} has offsets "
                        f"{slot.base_offset}..{slot.last_offset}, expected from {self.next_offset}"
                    )
                if valid == 0:
                    self.rolling_based_timestamp = fields[8]
                self._index_batch(slot.position, slot.size, slot.last_offset, fields[8], recovering=True)
                self.next_offset = slot.last_offset + 1
                if on_batch is not None and fields[2] >= 0:
                    on_batch(fields[2], slot.base_offset)
                valid = slot.position + slot.size
        except CorruptRecord:
            pass  # everything from the first bad batch on is cut below
        if valid < file_size:
            fd = os.open(self.log_path, os.O_RDWR)
            try:
                os.ftruncate(fd, valid)
            finally:
                os.close(fd)
        self.size = valid
        if self.max_timestamp != NO_TIMESTAMP:
            self.time_index.maybe_append(
                self.max_timestamp, self.offset_of_max_timestamp, skip_full_check=True
            )
        self.offset_index.forget_file()
        self.time_index.forget_file()
        self.flush()
        return file_size - valid

    # --- append ---------------------------------------------------------------------------------------

    def _note_batch(self, last_offset: int, max_timestamp: int) -> None:
        if max_timestamp > self.max_timestamp:
            self.max_timestamp = max_timestamp
            self.offset_of_max_timestamp = last_offset
        self.next_offset = last_offset + 1

    def _index_batch(
        self, position: int, size: int, last_offset: int, max_timestamp: int, *, recovering: bool
    ) -> None:
        """Kafka's rule, per batch: an index entry once index.interval.bytes were written since the last."""
        if max_timestamp > self.max_timestamp:
            self.max_timestamp = max_timestamp
            self.offset_of_max_timestamp = last_offset
        # While recovering, a full index just stays sparser; an append rolls before it fills.
        full = recovering and (self.offset_index.is_full or self.time_index.is_full)
        if self.bytes_since_last_index_entry > self.index_interval_bytes and not full:
            self.offset_index.append(last_offset, position)
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
            self.bytes_since_last_index_entry = 0
        self.bytes_since_last_index_entry += size

    def append(
        self, pieces: Sequence[bytes | bytearray | memoryview], batches: Sequence[tuple[int, int, int]]
    ) -> None:
        """Write whole batches: ``pieces`` their bytes, ``batches`` (size, last offset, max timestamp) each.

        Either everything is written or, on an I/O error, the file is cut back and KafkaStorageError raised.
        """
        if not batches:
            return
        self.open_handle()
        fd = self._fd
        assert fd is not None
        start = self.size
        total = sum(size for size, _, _ in batches)
        try:
            _write_fully(fd, pieces, total)
        except OSError as e:
            os.ftruncate(fd, start)
            raise KafkaStorageError(f"{self.log_path.name}: write failed: {e}") from e
        self._remember(start, pieces)
        if start == 0:
            self.rolling_based_timestamp = batches[0][2]
        position = start
        for size, last_offset, max_timestamp in batches:
            self._index_batch(position, size, last_offset, max_timestamp, recovering=False)
            position += size
        self.size = position
        self.next_offset = batches[-1][1] + 1

    # --- reading --------------------------------------------------------------------------------------

    @contextmanager
    def _reader(self) -> Iterator[int]:
        """A descriptor to pread from: the active segment's own, or one opened for this operation."""
        if self._fd is not None:
            yield self._fd
            return
        fd = os.open(self.log_path, os.O_RDONLY)
        try:
            yield fd
        finally:
            os.close(fd)

    def _pread(self, n: int, position: int) -> bytes:
        with self._reader() as fd:
            return os.pread(fd, n, position)

    def _scan(
        self, start: int, *, validate: bool, end: int | None = None
    ) -> Iterator[tuple[BatchSlot, tuple[int, ...], memoryview]]:
        """Walk batches from ``start``, reading the file in chunks; CorruptRecord names the file and position.

        Yields each batch's slot, header fields and bytes (a view, valid until the next step).
        """
        stop = self.size if end is None else end
        with self._reader() as fd:
            buf = b""
            buf_start = start
            pos = start
            while pos < stop:
                rel = pos - buf_start
                if len(buf) - rel < HEADER_SIZE:
                    buf, buf_start, rel = os.pread(fd, min(_READ_CHUNK, stop - pos), pos), pos, 0
                    if len(buf) < HEADER_SIZE:
                        raise CorruptRecord(f"{self.log_path.name}: torn batch header at position {pos}")
                length = _SHORT_HEADER.unpack_from(buf, rel)[1]
                size = length + LOG_OVERHEAD
                if length < MIN_BATCH_LENGTH or pos + size > stop:
                    raise CorruptRecord(
                        f"{self.log_path.name}: batch at position {pos} declares {size} bytes, "
                        f"{stop - pos} remain"
                    )
                if rel + size > len(buf):
                    buf, buf_start, rel = os.pread(fd, max(size, min(_READ_CHUNK, stop - pos)), pos), pos, 0
                    if len(buf) < size:
                        raise CorruptRecord(f"{self.log_path.name}: torn batch at position {pos}")
                view = memoryview(buf)[rel : rel + size]
                if validate:
                    try:
                        fields = check_batch(view)
                    except CorruptRecord as e:
                        raise CorruptRecord(f"{self.log_path.name} at position {pos}: {e.message}") from e
                else:
                    fields = _HEADER.unpack_from(view)
                last_offset = fields[0] + fields[6]
                yield (
                    BatchSlot(position=pos, size=size, base_offset=fields[0], last_offset=last_offset),
                    fields,
                    view,
                )
                pos += size

    def batches(self, *, validate: bool = True) -> Iterator[tuple[BatchSlot, bytes]]:
        """Every batch with its bytes (the log cleaner reads segments this way)."""
        for slot, _fields, view in self._scan(0, validate=validate):
            yield slot, bytes(view)

    def batches_from(self, offset: int) -> Iterator[tuple[tuple[int, ...], memoryview]]:
        """Header fields and bytes (valid until the next step) of every batch from the one holding
        ``offset`` on (the producer state's replay, which reads control batches' markers)."""
        slot = self.translate_offset(offset)
        if slot is None:
            return
        for _slot, fields, view in self._scan(slot.position, validate=False):
            yield fields, view

    def headers_from(self, offset: int) -> Iterator[tuple[int, ...]]:
        """The header fields of every batch from the one holding ``offset`` on (producer state's replay)."""
        slot = self.translate_offset(offset)
        if slot is None:
            return
        for _slot, fields, _view in self._scan(slot.position, validate=False):
            yield fields

    def translate_offset(self, offset: int) -> BatchSlot | None:
        """The first batch whose last offset is >= ``offset`` (the one holding it), None if past the end."""
        with self._reader() as fd:
            return self._translate(fd, offset)

    def _translate(self, fd: int, offset: int) -> BatchSlot | None:
        position = self.offset_index.lookup(offset)
        size_of_log = self.size
        while position < size_of_log:
            header = self._read_at(fd, _SHORT_HEADER.size, position)
            if len(header) < _SHORT_HEADER.size:
                break
            fields = _SHORT_HEADER.unpack(header)
            base_offset, size, last_offset = fields[0], fields[1] + LOG_OVERHEAD, fields[0] + fields[6]
            if size < HEADER_SIZE:
                raise CorruptRecord(
                    f"{self.log_path.name}: batch at position {position} declares {size} bytes"
                )
            if last_offset >= offset:
                return BatchSlot(
                    position=position, size=size, base_offset=base_offset, last_offset=last_offset
                )
            position += size
        return None

    def read(
        self, offset: int, max_bytes: int, max_offset: int | None = None
    ) -> tuple[bytes | memoryview, int, int] | None:
        """(whole batches from the one holding ``offset``, first batch's base offset, next offset).

        At least one batch (if any below ``max_offset``) even when it is larger than ``max_bytes``;
        never a batch whose last offset is >= ``max_offset``. None when no batch holds ``offset`` or later.
        """
        fd = self._fd
        if fd is not None:  # the active segment, where followers and consumers read: no context manager
            return self._read(fd, offset, max_bytes, max_offset)
        with self._reader() as fd:
            return self._read(fd, offset, max_bytes, max_offset)

    def _read(
        self, fd: int, offset: int, max_bytes: int, max_offset: int | None
    ) -> tuple[bytes | memoryview, int, int] | None:
        first = self._translate(fd, offset)
        if first is None:
            return None
        if max_offset is not None and first.last_offset >= max_offset:
            return b"", first.base_offset, offset
        chunk = self._read_at(fd, min(max(max_bytes, first.size), self.size - first.position), first.position)
        end = first.size
        next_offset = first.last_offset + 1
        unpack = _SHORT_HEADER.unpack_from
        header_size = _SHORT_HEADER.size
        limit = len(chunk)
        while end + header_size <= limit:
            fields = unpack(chunk, end)
            size = fields[1] + LOG_OVERHEAD
            last = fields[0] + fields[6]
            if end + size > limit or (max_offset is not None and last >= max_offset):
                break
            end += size
            next_offset = last + 1
        records: bytes | memoryview = chunk if end == limit else memoryview(chunk)[:end]
        return records, first.base_offset, next_offset

    def find_offset_by_timestamp(self, timestamp: int, starting_offset: int) -> int | None:
        """The first offset >= ``starting_offset`` whose record timestamp is >= ``timestamp``."""
        _ts, indexed_offset = self.time_index.lookup(timestamp)
        position = self.offset_index.lookup(max(indexed_offset, starting_offset))
        for slot, fields, view in self._scan(position, validate=False):
            if fields[8] < timestamp or slot.last_offset < starting_offset:
                continue
            for record in decode_records(view):
                if record.timestamp >= timestamp and record.offset >= starting_offset:
                    return record.offset
        return None

    # --- truncation -----------------------------------------------------------------------------------

    def truncate_to(self, offset: int) -> int:
        """Drop every batch holding an offset >= ``offset`` (a batch is never split). Returns bytes cut."""
        slot = self.translate_offset(offset)
        if slot is None:
            return 0
        self._forget_tail()
        cut = self.size - slot.position
        self.open_handle()
        assert self._fd is not None
        os.ftruncate(self._fd, slot.position)
        self.offset_index.truncate_to(offset)
        self.time_index.truncate_to(offset)
        self.txn_index.truncate_to(offset)
        self.size = slot.position
        # Recompute what the cut batches may have changed: from the last index entry that is left.
        entries = self.offset_index.entries()
        indexed_offset, indexed_position = entries[-1] if entries else (self.base_offset - 1, 0)
        self.bytes_since_last_index_entry = self.size - indexed_position
        self.next_offset = max(self.base_offset, indexed_offset + 1)
        last_entry = self.time_index.last_entry
        self.max_timestamp, self.offset_of_max_timestamp = (
            last_entry if last_entry else (NO_TIMESTAMP, self.base_offset)
        )
        for scanned, fields, _view in self._scan(indexed_position, validate=False):
            self._note_batch(scanned.last_offset, fields[8])
        if self.size == 0:
            self.rolling_based_timestamp = None
        self.flush()
        return cut

    def cut_to_position(self, position: int) -> None:
        """Lose everything from ``position`` on (a crash that loses the page cache). The log reopens later."""
        self._forget_tail()
        fd = os.open(self.log_path, os.O_RDWR)
        try:
            os.ftruncate(fd, position)
        finally:
            os.close(fd)

    # --- views ----------------------------------------------------------------------------------------

    def info(self, *, active: bool) -> SegmentInfo:
        return SegmentInfo(
            base_offset=self.base_offset,
            size_in_bytes=self.size,
            next_offset=self.next_offset,
            largest_timestamp=self.max_timestamp,
            index_entries=len(self.offset_index),
            time_index_entries=len(self.time_index),
            active=active,
        )


def _write_fully(fd: int, pieces: Sequence[bytes | bytearray | memoryview], total: int) -> None:
    """os.writev until every byte is written (short writes are rare on files, but legal)."""
    written = os.writev(fd, pieces) if len(pieces) <= _IOV_MAX else 0
    if written != total:  # an append almost always takes the one call
        _write_rest(fd, pieces, total, written)


def _write_rest(fd: int, pieces: Sequence[bytes | bytearray | memoryview], total: int, written: int) -> None:
    """Write what is left once ``written`` bytes of ``pieces`` are written."""
    queue: list[bytes | bytearray | memoryview] = list(pieces)
    i, written_total = 0, 0
    while True:
        written_total += written
        # Skip the pieces that went out whole; keep the tail of a piece written in part.
        while i < len(queue) and written >= len(queue[i]):
            written -= len(queue[i])
            i += 1
        if written:
            queue[i] = memoryview(queue[i])[written:]
        if i == len(queue):
            break
        written = os.writev(fd, queue[i : i + _IOV_MAX])
        if written <= 0:
            raise OSError(f"wrote {written_total} of {total} bytes, then nothing")
    if written_total != total:
        raise OSError(f"wrote {written_total} of {total} bytes")
