"""Offset and time indexes in Kafka's file formats."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from lab.engine.errors import KafkaStorageError
from lab.engine.storage.index import CorruptIndex, OffsetIndex, TimeIndex


def test_offset_index_file_holds_8_byte_relative_entries(tmp_path: Path) -> None:
    index = OffsetIndex(tmp_path / "00000000000000000100.index", 100, 1024)
    index.append(105, 300)
    index.append(110, 700)
    index.flush()
    assert index.path.read_bytes() == struct.pack(">iiii", 5, 300, 10, 700)
    index.append(120, 900)
    index.flush()  # only the new entry is appended
    assert index.path.read_bytes() == struct.pack(">iiiiii", 5, 300, 10, 700, 20, 900)
    loaded = OffsetIndex(index.path, 100, 1024)
    loaded.load()
    assert loaded.entries() == [(105, 300), (110, 700), (120, 900)]


def test_offset_index_lookup_and_truncation(tmp_path: Path) -> None:
    index = OffsetIndex(tmp_path / "x.index", 100, 1024)
    for offset, position in [(105, 300), (110, 700), (120, 900)]:
        index.append(offset, position)
    assert index.lookup(99) == 0  # nothing at or below: scan from the start
    assert index.lookup(104) == 0
    assert index.lookup(105) == 300
    assert index.lookup(119) == 700
    assert index.lookup(5000) == 900
    assert index.lookup_entry(104) == (100, 0)
    index.flush()
    index.truncate_to(110)
    assert index.entries() == [(105, 300)]
    index.flush()
    assert index.path.read_bytes() == struct.pack(">ii", 5, 300)


def test_offset_index_refuses_out_of_order_and_overflow(tmp_path: Path) -> None:
    index = OffsetIndex(tmp_path / "x.index", 0, 16)
    assert index.max_entries == 2
    index.append(5, 100)
    with pytest.raises(KafkaStorageError):
        index.append(5, 200)
    with pytest.raises(KafkaStorageError):
        index.append(6, 100)
    index.append(6, 200)
    assert index.is_full
    with pytest.raises(KafkaStorageError, match="full"):
        index.append(7, 300)


def test_offset_index_sanity_check(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.index"
    path.write_bytes(struct.pack(">ii", 5, 100) + b"\x00\x00")
    with pytest.raises(CorruptIndex, match="whole number"):
        OffsetIndex(path, 0, 1024).load()
    path.write_bytes(struct.pack(">iiii", 5, 100, 4, 200))
    index = OffsetIndex(path, 0, 1024)
    index.load()
    with pytest.raises(CorruptIndex, match="out of order"):
        index.sanity_check(1000)
    path.write_bytes(struct.pack(">ii", 5, 5000))
    index.load()
    with pytest.raises(CorruptIndex, match="past the log"):
        index.sanity_check(1000)


def test_time_index_file_holds_12_byte_entries(tmp_path: Path) -> None:
    index = TimeIndex(tmp_path / "00000000000000000050.timeindex", 50, 1024)
    index.maybe_append(1000, 55)
    index.maybe_append(1000, 60)  # not larger: skipped
    index.maybe_append(999, 61)  # smaller: skipped
    index.maybe_append(2000, 70)
    index.flush()
    assert index.path.read_bytes() == struct.pack(">qiqi", 1000, 5, 2000, 20)
    assert index.lookup(500) == (-1, 50)
    assert index.lookup(1500) == (1000, 55)
    assert index.lookup(2000) == (2000, 70)
    assert index.last_entry == (2000, 70)
    index.truncate_to(70)
    index.flush()
    assert index.entries() == [(1000, 55)]
    assert index.path.read_bytes() == struct.pack(">qi", 1000, 5)
    loaded = TimeIndex(index.path, 50, 1024)
    loaded.load()
    loaded.sanity_check()
    assert loaded.entries() == [(1000, 55)]


def test_time_index_fullness_and_order(tmp_path: Path) -> None:
    index = TimeIndex(tmp_path / "t.timeindex", 0, 24)
    assert index.max_entries == 2
    index.maybe_append(1, 1)
    with pytest.raises(KafkaStorageError):
        index.maybe_append(2, 0)  # an offset going back
    index.maybe_append(2, 2)
    with pytest.raises(KafkaStorageError, match="full"):
        index.maybe_append(3, 3)
    index.maybe_append(3, 3, skip_full_check=True)  # a segment's last entry may go over
    assert len(index) == 3
    path = tmp_path / "bad.timeindex"
    path.write_bytes(struct.pack(">qiqi", 10, 1, 5, 2))
    bad = TimeIndex(path, 0, 1024)
    bad.load()
    with pytest.raises(CorruptIndex):
        bad.sanity_check()
