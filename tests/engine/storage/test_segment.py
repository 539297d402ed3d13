"""One log segment: its files, appends, indexes, reads, recovery and truncation."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest

from lab.engine.errors import CorruptRecord
from lab.engine.records import build_batch, decode_records, patch_base_offset, read_header
from lab.engine.storage.index import CorruptIndex
from lab.engine.storage.segment import LogSegment, filename_prefix, offset_from_filename


def make_segment(tmp_path: Path, base: int = 0, interval: int = 100, suffix: str = "") -> LogSegment:
    return LogSegment.create(
        tmp_path, base, index_interval_bytes=interval, max_index_size=1024, now_ms=0, suffix=suffix
    )


def append_batches(segment: LogSegment, count: int, *, records: int = 2, ts: int = 0) -> list[bytes]:
    """Append ``count`` batches at the segment's next offset; returns their bytes as written."""
    written = []
    for i in range(count):
        buf = bytearray(build_batch([(b"k%d" % i, b"v" * 30)] * records, timestamp_ms=ts + i))
        patch_base_offset(buf, 0, segment.next_offset, 0)
        header = read_header(buf)
        segment.append([bytes(buf)], [(len(buf), header.last_offset, header.max_timestamp)])
        written.append(bytes(buf))
    return written


def test_file_names_are_twenty_digit_base_offsets(tmp_path: Path) -> None:
    make_segment(tmp_path, base=42)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "00000000000000000042.index",
        "00000000000000000042.log",
        "00000000000000000042.timeindex",
    ]
    assert filename_prefix(7) == "00000000000000000007"
    assert offset_from_filename("00000000000000000042.log.swap") == 42
    assert offset_from_filename("leader-epoch-checkpoint") is None


def test_index_entries_every_interval_point_at_their_batches(tmp_path: Path) -> None:
    segment = make_segment(tmp_path, base=10, interval=100)
    written = append_batches(segment, 12)
    segment.flush()
    data = segment.log_path.read_bytes()
    assert data == b"".join(written)
    entries = segment.offset_index.entries()
    assert entries  # about one entry per 100 bytes of log, at most one per batch
    assert len(entries) < len(written)
    for offset, position in entries:
        header = read_header(data, position)
        assert header.last_offset == offset
    raw = segment.offset_index.path.read_bytes()
    assert len(raw) == 8 * len(entries)
    assert struct.unpack(">ii", raw[:8]) == (entries[0][0] - 10, entries[0][1])
    assert len(segment.time_index.path.read_bytes()) == 12 * len(segment.time_index)
    assert segment.next_offset == 10 + 24
    assert segment.max_timestamp == 11


def test_read_returns_whole_batches(tmp_path: Path) -> None:
    segment = make_segment(tmp_path, interval=0)
    written = append_batches(segment, 5)  # offsets 0-1, 2-3, 4-5, 6-7, 8-9
    records, first, next_offset = segment.read(3, 10) or (b"", -1, -1)
    assert (bytes(records), first, next_offset) == (written[1], 2, 4)  # one batch even if over max_bytes
    records, first, next_offset = segment.read(3, 2 * len(written[0])) or (b"", -1, -1)
    assert (bytes(records), first, next_offset) == (written[1] + written[2], 2, 6)
    records, first, next_offset = segment.read(3, 10_000, max_offset=7) or (b"", -1, -1)
    assert (bytes(records), next_offset) == (written[1] + written[2], 6)  # 6-7 reaches max_offset
    records, _first, next_offset = segment.read(3, 10_000, max_offset=3) or (b"x", -1, -1)
    assert (bytes(records), next_offset) == (b"", 3)
    assert segment.read(10, 100) is None


def test_recover_rebuilds_the_same_indexes(tmp_path: Path) -> None:
    segment = make_segment(tmp_path, base=0, interval=150)
    append_batches(segment, 20)
    segment.on_become_inactive()
    offsets, times = segment.offset_index.entries(), segment.time_index.entries()
    index_bytes = segment.offset_index.path.read_bytes()
    segment.offset_index.path.unlink()
    segment.time_index.path.write_bytes(b"garbage")
    rebuilt = LogSegment(tmp_path, 0, index_interval_bytes=150, max_index_size=1024)
    assert rebuilt.recover() == 0
    assert rebuilt.offset_index.entries() == offsets
    assert rebuilt.time_index.entries() == times
    assert rebuilt.offset_index.path.read_bytes() == index_bytes
    assert (rebuilt.next_offset, rebuilt.size, rebuilt.max_timestamp) == (40, segment.size, 19)


def test_recover_cuts_a_torn_tail(tmp_path: Path) -> None:
    segment = make_segment(tmp_path)
    written = append_batches(segment, 3)
    segment.close()
    with open(segment.log_path, "ab") as f:
        f.write(written[0][:30])  # half a batch, as a crash mid-write leaves
    seen: list[tuple[int, int]] = []
    recovered = LogSegment(tmp_path, 0, index_interval_bytes=100, max_index_size=1024)
    assert recovered.recover(lambda epoch, offset: seen.append((epoch, offset))) == 30
    assert recovered.log_path.read_bytes() == b"".join(written)
    assert recovered.next_offset == 6
    assert seen == [(0, 0), (0, 2), (0, 4)]


def test_recover_cuts_at_offsets_that_go_backwards(tmp_path: Path) -> None:
    segment = make_segment(tmp_path)
    written = append_batches(segment, 2)
    segment.close()
    with open(segment.log_path, "ab") as f:
        f.write(written[0])  # a valid batch, but at offsets 0-1 again
    recovered = LogSegment(tmp_path, 0, index_interval_bytes=100, max_index_size=1024)
    assert recovered.recover() == len(written[0])
    assert recovered.next_offset == 4


def test_load_trusts_the_log_and_checks_the_indexes(tmp_path: Path) -> None:
    segment = make_segment(tmp_path, base=5, interval=50)
    append_batches(segment, 8, ts=100)
    segment.close()
    loaded = LogSegment(tmp_path, 5, index_interval_bytes=50, max_index_size=1024)
    loaded.load()
    assert (loaded.next_offset, loaded.size, loaded.max_timestamp) == (21, segment.size, 107)
    assert loaded.rolling_based_timestamp == 100
    assert loaded.bytes_since_last_index_entry == segment.bytes_since_last_index_entry
    loaded.offset_index.path.write_bytes(struct.pack(">ii", 3, 10**6))
    with pytest.raises(CorruptIndex):
        LogSegment(tmp_path, 5, index_interval_bytes=50, max_index_size=1024).load()
    loaded.time_index.path.unlink()
    with pytest.raises(CorruptIndex, match="missing"):
        LogSegment(tmp_path, 5, index_interval_bytes=50, max_index_size=1024).load()


def test_truncate_to_drops_whole_batches(tmp_path: Path) -> None:
    segment = make_segment(tmp_path, interval=0)
    written = append_batches(segment, 5)
    assert segment.truncate_to(5) == 3 * len(written[0])  # 5 lives in batch 4-5: it goes, with all after
    assert segment.log_path.read_bytes() == b"".join(written[:2])
    assert segment.next_offset == 4
    assert segment.max_timestamp == 1
    assert all(offset < 4 for offset, _ in segment.offset_index.entries())
    assert all(offset < 4 for _, offset in segment.time_index.entries())
    assert segment.truncate_to(100) == 0
    assert segment.truncate_to(0) == 2 * len(written[0])
    assert (segment.size, segment.next_offset, segment.max_timestamp) == (0, 0, -1)


def test_find_offset_by_timestamp(tmp_path: Path) -> None:
    segment = make_segment(tmp_path, interval=0)
    for ts in (100, 300, 200, 400):
        append_batches(segment, 1, ts=ts)
    assert segment.find_offset_by_timestamp(50, 0) == 0
    assert segment.find_offset_by_timestamp(150, 0) == 2  # the batch at 300
    assert segment.find_offset_by_timestamp(300, 0) == 2
    assert segment.find_offset_by_timestamp(301, 0) == 6
    assert segment.find_offset_by_timestamp(150, 4) == 4  # the batch at 200, from offset 4 on
    assert segment.find_offset_by_timestamp(401, 0) is None


def test_batches_and_suffixes(tmp_path: Path) -> None:
    segment = make_segment(tmp_path, base=3, suffix=".cleaned")
    written = append_batches(segment, 2)
    segment.on_become_inactive()
    assert [bytes(b) for _slot, b in segment.batches()] == written
    segment.change_suffix(".swap")
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "00000000000000000003.index.swap",
        "00000000000000000003.log.swap",
        "00000000000000000003.timeindex.swap",
    ]
    segment.change_suffix("")
    assert [r.offset for r in decode_records(segment.log_path.read_bytes())] == [3, 4]
    segment.log_path.write_bytes(segment.log_path.read_bytes()[:-1])
    segment.size -= 1
    with pytest.raises(CorruptRecord, match=r"00000000000000000003\.log"):
        list(segment.batches())


def _read_all(segment: LogSegment) -> bytes:
    found = segment.read(segment.base_offset, 1 << 30)
    return b"" if found is None else bytes(found[0])


def test_reads_of_what_was_just_appended_match_the_file_through_truncations_and_rolls(
    tmp_path: Path,
) -> None:
    # The last bytes appended are read from memory (no system call), as from the page cache:
    # what a read returns is the file's content, whatever happened to the file.
    segment = make_segment(tmp_path, interval=10_000)
    append_batches(segment, 3000)  # far past what memory keeps: early batches come from the file
    assert _read_all(segment) == segment.log_path.read_bytes()
    records, first, _ = segment.read(5999, 10) or (b"", -1, -1)
    assert (bytes(records), first) == (segment.log_path.read_bytes()[-len(records) :], 5998)
    segment.truncate_to(5000)
    written = append_batches(segment, 3, ts=77)  # offsets 5000.. written again, other bytes
    assert _read_all(segment) == segment.log_path.read_bytes()
    records, first, _ = segment.read(5002, 10) or (b"", -1, -1)
    assert (bytes(records), first) == (written[1], 5002)
    segment.on_become_inactive()  # rolled: the file is closed, reads open it again
    assert _read_all(segment) == segment.log_path.read_bytes()
    assert decode_records(written[2])[0].timestamp == 79


@pytest.mark.parametrize("at_most", [1, 7, 61, 100])
def test_short_writes_are_written_on_until_every_piece_is_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, at_most: int
) -> None:
    # A file write may take fewer bytes than asked (POSIX allows it): the rest follows, nothing twice.
    segment = make_segment(tmp_path)
    real = os.writev

    def short_writev(fd: int, buffers: list[bytes]) -> int:
        data = b"".join(bytes(b) for b in buffers)[:at_most]
        return real(fd, [data])

    monkeypatch.setattr(os, "writev", short_writev)
    buf = bytearray(build_batch([(b"k", b"v" * 30)] * 3, timestamp_ms=5))
    header = read_header(buf)
    pieces = [bytes(buf[:20]), bytes(buf[20:21]), memoryview(bytes(buf[21:]))]  # as a leader's append
    segment.append(pieces, [(len(buf), header.last_offset, header.max_timestamp)])
    monkeypatch.undo()
    assert segment.log_path.read_bytes() == bytes(buf)
    assert [r.value for r in decode_records(segment.log_path.read_bytes())] == [b"v" * 30] * 3
