"""A segment's sparse indexes, in Kafka's file formats.

``.index`` (OffsetIndex): 8-byte big-endian entries, relative offset (int32) and file position
(int32): "the batch at this position holds offsets up to this one". ``.timeindex`` (TimeIndex):
12-byte entries, timestamp (int64) and relative offset (int32): "up to this offset, the largest
timestamp is this one". Both get an entry at most every ``index.interval.bytes`` of log.

Kafka memory-maps preallocated index files; here the entries live in two arrays and reach the
file on ``flush`` (a roll, a flush of the log, a clean close). A crash can therefore leave an
index file shorter than the log: still a valid, sparser index. Recovery rebuilds the indexes of
every segment past the recovery point anyway, as Kafka does.
"""

from __future__ import annotations

import os
import struct
from array import array
from bisect import bisect_right
from pathlib import Path
from typing import ClassVar

from lab.engine.errors import KafkaStorageError


class CorruptIndex(KafkaStorageError):
    """An index file that fails its sanity check: the segment rebuilds it from the log."""


class _IndexFile:
    """Entries as two parallel arrays (``_keys`` sorted, ``_values``), persisted by appending."""

    ENTRY: ClassVar[struct.Struct]

    def __init__(self, path: Path, base_offset: int, max_index_size: int) -> None:
        self.path = Path(path)
        self.base_offset = base_offset
        self.max_entries = max(1, max_index_size // self.ENTRY.size)
        self._keys = array("q")
        self._values = array("q")
        self._in_file = 0  # leading entries that the file already holds
        self._file_size: int | None = None  # None: the file may be longer than _in_file entries

    def __len__(self) -> int:
        return len(self._keys)

    @property
    def is_full(self) -> bool:
        return len(self._keys) >= self.max_entries

    @property
    def size_in_bytes(self) -> int:
        return len(self._keys) * self.ENTRY.size

    def _encode(self, key: int, value: int) -> bytes:
        raise NotImplementedError

    def _decode(self, first: int, second: int) -> tuple[int, int]:
        raise NotImplementedError

    def load(self) -> None:
        """Read the file's entries (CorruptIndex if it is not a whole number of entries)."""
        data = self.path.read_bytes()
        if len(data) % self.ENTRY.size:
            raise CorruptIndex(
                f"{self.path.name}: {len(data)} bytes is not a whole number of {self.ENTRY.size}-byte entries"
            )
        self._keys = array("q")
        self._values = array("q")
        for first, second in self.ENTRY.iter_unpack(data):
            key, value = self._decode(first, second)
            self._keys.append(key)
            self._values.append(value)
        self._in_file = len(self._keys)
        self._file_size = len(data)

    def _truncate_entries(self, count: int) -> None:
        if count < len(self._keys):
            del self._keys[count:]
            del self._values[count:]
            self._in_file = min(self._in_file, count)

    def reset(self) -> None:
        self._truncate_entries(0)

    def flush(self) -> None:
        """Bring the file up to date with the entries in memory (only the new ones are written)."""
        wanted = self._in_file * self.ENTRY.size
        keys, values = self._keys[self._in_file :], self._values[self._in_file :]
        new = b"".join(self._encode(k, v) for k, v in zip(keys, values, strict=True))
        if self._file_size == wanted and not new:
            return
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            if self._file_size != wanted:
                os.ftruncate(fd, wanted)
            if new:
                os.pwrite(fd, new, wanted)
        finally:
            os.close(fd)
        self._in_file = len(self._keys)
        self._file_size = self._in_file * self.ENTRY.size

    def forget_file(self) -> None:
        """The file is gone or replaced: the next flush writes every entry."""
        self._in_file = 0
        self._file_size = None

    def rename(self, path: Path) -> None:
        os.replace(self.path, path)
        self.path = Path(path)

    def delete(self) -> None:
        self.path.unlink(missing_ok=True)


class OffsetIndex(_IndexFile):
    """Offset -> file position of the batch to start scanning from."""

    ENTRY = struct.Struct(">ii")

    def _encode(self, key: int, value: int) -> bytes:
        return self.ENTRY.pack(key - self.base_offset, value)

    def _decode(self, first: int, second: int) -> tuple[int, int]:
        return first + self.base_offset, second

    @property
    def last_offset(self) -> int:
        return self._keys[-1] if self._keys else self.base_offset

    def entries(self) -> list[tuple[int, int]]:
        """(absolute offset, position) pairs."""
        return list(zip(self._keys, self._values, strict=True))

    def append(self, offset: int, position: int) -> None:
        if self._keys and (offset <= self._keys[-1] or position <= self._values[-1]):
            raise KafkaStorageError(
                f"{self.path.name}: index entry ({offset}, {position}) does not follow "
                f"({self._keys[-1]}, {self._values[-1]})"
            )
        if self.is_full:
            raise KafkaStorageError(f"{self.path.name}: offset index is full ({self.max_entries} entries)")
        self._keys.append(offset)
        self._values.append(position)

    def lookup(self, offset: int) -> int:
        """Position of the largest entry at or below ``offset`` (0 when there is none)."""
        i = bisect_right(self._keys, offset)
        return self._values[i - 1] if i else 0

    def lookup_entry(self, offset: int) -> tuple[int, int]:
        """(offset, position) of the largest entry at or below ``offset``, (base offset, 0) when none."""
        i = bisect_right(self._keys, offset)
        return (self._keys[i - 1], self._values[i - 1]) if i else (self.base_offset, 0)

    def truncate_to(self, offset: int) -> None:
        """Drop entries for offsets >= ``offset``."""
        self._truncate_entries(bisect_right(self._keys, offset - 1))

    def sanity_check(self, log_size: int) -> None:
        previous_offset, previous_position = self.base_offset - 1, -1
        for offset, position in zip(self._keys, self._values, strict=True):
            if offset <= previous_offset or position <= previous_position or position >= max(log_size, 1):
                raise CorruptIndex(
                    f"{self.path.name}: entry ({offset}, {position}) is out of order "
                    f"or past the log's {log_size} bytes"
                )
            previous_offset, previous_position = offset, position


class TimeIndex(_IndexFile):
    """Timestamp -> the offset where the log's largest timestamp so far reached it."""

    ENTRY = struct.Struct(">qi")

    def _encode(self, key: int, value: int) -> bytes:
        return self.ENTRY.pack(key, value - self.base_offset)

    def _decode(self, first: int, second: int) -> tuple[int, int]:
        return first, second + self.base_offset

    @property
    def last_entry(self) -> tuple[int, int] | None:
        """(timestamp, offset) of the last entry."""
        return (self._keys[-1], self._values[-1]) if self._keys else None

    def entries(self) -> list[tuple[int, int]]:
        """(timestamp, absolute offset) pairs."""
        return list(zip(self._keys, self._values, strict=True))

    def maybe_append(self, timestamp: int, offset: int, *, skip_full_check: bool = False) -> None:
        """Append when ``timestamp`` is larger than the last entry's (Kafka's TimeIndex.maybeAppend)."""
        if self._keys and timestamp <= self._keys[-1]:
            return
        if self._values and offset < self._values[-1]:
            raise KafkaStorageError(
                f"{self.path.name}: time index offset {offset} is below {self._values[-1]}"
            )
        if not skip_full_check and self.is_full:
            raise KafkaStorageError(f"{self.path.name}: time index is full ({self.max_entries} entries)")
        self._keys.append(timestamp)
        self._values.append(offset)

    def lookup(self, timestamp: int) -> tuple[int, int]:
        """(timestamp, offset) of the largest entry at or below ``timestamp``; (-1, base offset) when none."""
        i = bisect_right(self._keys, timestamp)
        return (self._keys[i - 1], self._values[i - 1]) if i else (-1, self.base_offset)

    def truncate_to(self, offset: int) -> None:
        """Drop entries for offsets >= ``offset``."""
        count = len(self._values)
        while count and self._values[count - 1] >= offset:
            count -= 1
        self._truncate_entries(count)

    def sanity_check(self) -> None:
        previous_ts, previous_offset = None, self.base_offset
        for timestamp, offset in zip(self._keys, self._values, strict=True):
            if (previous_ts is not None and timestamp <= previous_ts) or offset < previous_offset:
                raise CorruptIndex(f"{self.path.name}: entry ({timestamp}, {offset}) is out of order")
            previous_ts, previous_offset = timestamp, offset
