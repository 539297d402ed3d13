"""A partition's log on disk: appends, reads, rolls, truncation, retention, compaction, crashes."""

from __future__ import annotations

import shutil
import struct
from collections.abc import Sequence
from itertools import count
from pathlib import Path

import crc32c
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

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
    BatchHeader,
    Compression,
    Record,
    SimpleRecord,
    build_batch,
    decode_records,
    iter_batches,
    iter_headers,
    iter_records,
    read_header,
)
from lab.engine.storage import LogConfig, PartitionLog

SMALL = LogConfig(segment_bytes=1024, index_interval_bytes=100)
COMPACTED = LogConfig(
    segment_bytes=1024,
    index_interval_bytes=100,
    cleanup_policy=frozenset({"compact"}),
    delete_retention_ms=1000,
)
_dirs = count()


def new_dir(tmp_path: Path, topic: str = "orders", partition: int = 0) -> Path:
    """A fresh partition directory (hypothesis examples share one tmp_path)."""
    return tmp_path / f"run{next(_dirs)}" / f"{topic}-{partition}"


def batch(
    *pairs: tuple[bytes | None, bytes | None], ts: int = 0, compression: Compression = Compression.NONE
) -> bytes:
    return build_batch(list(pairs), timestamp_ms=ts, compression=compression)


def kv(i: int, size: int = 20) -> tuple[bytes, bytes]:
    return b"key-%d" % i, b"v%d-" % i + b"x" * size


def fill(log: PartitionLog, batches: int, *, per_batch: int = 2, ts: int = 0, epoch: int = 0) -> None:
    for i in range(batches):
        start = log.log_end_offset
        log.append_as_leader(
            batch(*[kv(start + j) for j in range(per_batch)], ts=ts + i), leader_epoch=epoch, now_ms=0
        )


def read_all(log: PartitionLog, start: int | None = None, max_bytes: int = 300) -> list[Record]:
    offset = log.log_start_offset if start is None else start
    records: list[Record] = []
    while offset < log.log_end_offset:
        fetched = log.read(offset, max_bytes)
        if fetched.is_empty:
            break
        records.extend(r for r in iter_records(fetched.records) if r.offset >= offset)
        offset = fetched.next_offset
    return records


def files(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


# --- opening ---------------------------------------------------------------------------------------------


def test_open_creates_kafkas_layout(tmp_path: Path) -> None:
    log = PartitionLog.open(tmp_path / "my-topic.v2-3", LogConfig(), now_ms=0)
    assert (log.topic, log.partition) == ("my-topic.v2", 3)
    assert sorted(files(log.dir)) == [
        "00000000000000000000.index",
        "00000000000000000000.log",
        "00000000000000000000.timeindex",
    ]
    assert (log.log_start_offset, log.log_end_offset, log.size_in_bytes, log.recovery_point) == (0, 0, 0, 0)
    assert len(log.segments) == 1
    assert log.segments[0].active


def test_open_with_a_checkpointed_log_start_offset(tmp_path: Path) -> None:
    log = PartitionLog.open(new_dir(tmp_path), SMALL, now_ms=0)
    fill(log, 10, epoch=1)
    fill(log, 10, epoch=2)
    log.close()
    reopened = PartitionLog.open(
        log.dir, SMALL, now_ms=0, recovery_point=log.recovery_point, log_start_offset=25
    )
    assert reopened.log_start_offset == 25
    assert reopened.segments[0].base_offset <= 25
    with pytest.raises(OffsetOutOfRange):
        reopened.read(24, 100)
    assert reopened.offset_for_timestamp(-2) == 25
    assert [(e.epoch, e.start_offset) for e in reopened.leader_epoch_cache.entries] == [(2, 25)]


def test_a_directory_that_is_not_a_partition_is_refused(tmp_path: Path) -> None:
    with pytest.raises(IllegalArgument, match="<topic>-<partition>"):
        PartitionLog.open(tmp_path / "orders", LogConfig(), now_ms=0)
    assert not (tmp_path / "orders").exists()


# --- appends as leader ------------------------------------------------------------------------------------


def test_leader_assigns_offsets_and_stamps_its_epoch(tmp_path: Path) -> None:
    log = PartitionLog.open(new_dir(tmp_path), LogConfig(), now_ms=0)
    info = log.append_as_leader(batch(kv(0), kv(1), kv(2), ts=500), leader_epoch=3, now_ms=0)
    assert (info.first_offset, info.last_offset, info.record_count, info.batch_count) == (0, 2, 3, 1)
    assert (info.max_timestamp, info.offset_of_max_timestamp) == (500, 2)
    two_batches = batch(kv(3), ts=600) + batch(kv(4), kv(5), ts=550)
    info = log.append_as_leader(two_batches, leader_epoch=3, now_ms=0)
    assert (info.first_offset, info.last_offset, info.batch_count, info.size_in_bytes) == (
        3,
        5,
        2,
        len(two_batches),
    )
    assert (info.max_timestamp, info.offset_of_max_timestamp) == (600, 3)
    assert log.log_end_offset == 6
    on_disk = log.dir.joinpath("00000000000000000000.log").read_bytes()
    assert [(h.base_offset, h.partition_leader_epoch) for _, h in iter_batches(on_disk)] == [
        (0, 3),
        (3, 3),
        (4, 3),
    ]
    assert [r.key for r in iter_records(on_disk)] == [kv(i)[0] for i in range(6)]
    assert [(e.epoch, e.start_offset) for e in log.leader_epoch_cache.entries] == [(3, 0)]
    log.append_as_leader(batch(kv(6)), leader_epoch=5, now_ms=0)
    assert [(e.epoch, e.start_offset) for e in log.leader_epoch_cache.entries] == [(3, 0), (5, 6)]


def test_a_bad_batch_anywhere_appends_nothing(tmp_path: Path) -> None:
    log = PartitionLog.open(new_dir(tmp_path), LogConfig(max_message_bytes=500), now_ms=0)
    fill(log, 2)
    before = files(log.dir)
    good = batch(kv(10))
    corrupt = bytearray(batch(kv(11)))
    corrupt[-1] ^= 0x01
    with pytest.raises(CorruptRecord, match="CRC"):
        log.append_as_leader(good + bytes(corrupt), leader_epoch=1, now_ms=0)
    with pytest.raises(CorruptRecord, match="truncated"):
        log.append_as_leader(good + good[:-3], leader_epoch=1, now_ms=0)
    with pytest.raises(RecordTooLarge, match=r"max\.message\.bytes 500"):
        log.append_as_leader(good + batch(kv(12, size=600)), leader_epoch=1, now_ms=0)
    lying = bytearray(batch(kv(13), kv(14)))
    struct.pack_into(">i", lying, 23, 5)  # lastOffsetDelta 5 for two records (CRC fixed below)
    struct.pack_into(">I", lying, 17, crc32c.crc32c(bytes(lying[21:])))
    with pytest.raises(InvalidRecord, match="holds 2 records but its offsets span 6"):
        log.append_as_leader(good + bytes(lying), leader_epoch=1, now_ms=0)
    assert files(log.dir) == before
    assert log.log_end_offset == 4
    assert [(e.epoch, e.start_offset) for e in log.leader_epoch_cache.entries] == [(0, 0)]


def test_an_empty_append_changes_nothing(tmp_path: Path) -> None:
    log = PartitionLog.open(new_dir(tmp_path), LogConfig(), now_ms=0)
    info = log.append_as_leader(b"", leader_epoch=0, now_ms=0)
    assert (info.first_offset, info.record_count, log.log_end_offset) == (-1, 0, 0)


def test_compacted_topics_refuse_records_without_keys(tmp_path: Path) -> None:
    log = PartitionLog.open(new_dir(tmp_path), COMPACTED, now_ms=0)
    with pytest.raises(InvalidRecord, match="Compacted topic cannot accept message without key"):
        log.append_as_leader(
            batch(kv(0)) + batch((None, b"v"), compression=Compression.GZIP), leader_epoch=0, now_ms=0
        )
    assert log.log_end_offset == 0
    log.append_as_leader(batch(kv(0), (b"k", None)), leader_epoch=0, now_ms=0)  # a tombstone has a key
    assert log.log_end_offset == 2


# --- appends as follower ----------------------------------------------------------------------------------


def leader_bytes(tmp_path: Path) -> tuple[PartitionLog, bytes]:
    leader = PartitionLog.open(new_dir(tmp_path, "leader"), LogConfig(), now_ms=0)
    fill(leader, 2, epoch=1)
    fill(leader, 2, epoch=4)
    return leader, bytes(leader.read(0, 1 << 20).records)


def test_follower_keeps_the_leaders_offsets_and_learns_its_epochs(tmp_path: Path) -> None:
    leader, fetched = leader_bytes(tmp_path)
    follower = PartitionLog.open(new_dir(tmp_path), LogConfig(), now_ms=0)
    info = follower.append_as_follower(fetched, now_ms=0)
    assert (info.first_offset, info.last_offset, info.record_count, info.batch_count) == (0, 7, 8, 4)
    assert follower.log_end_offset == 8
    assert follower.dir.joinpath("00000000000000000000.log").read_bytes() == fetched
    assert follower.leader_epoch_cache.entries == leader.leader_epoch_cache.entries
    assert [(e.epoch, e.start_offset) for e in follower.leader_epoch_cache.entries] == [(1, 0), (4, 4)]


def test_follower_offsets_must_not_go_back(tmp_path: Path) -> None:
    _leader, fetched = leader_bytes(tmp_path)
    batches = [fetched[pos : pos + h.size_in_bytes] for pos, h in iter_headers(fetched)]
    follower = PartitionLog.open(new_dir(tmp_path), LogConfig(), now_ms=0)
    follower.append_as_follower(batches[0] + batches[1], now_ms=0)
    before = files(follower.dir)
    with pytest.raises(UnexpectedAppendOffset, match="below the log end offset 4"):
        follower.append_as_follower(batches[1] + batches[2], now_ms=0)
    with pytest.raises(OffsetsOutOfOrder, match="not after the previous batch's last offset 5"):
        follower.append_as_follower(batches[2] + batches[2], now_ms=0)
    assert files(follower.dir) == before
    assert follower.log_end_offset == 4
    assert [(e.epoch, e.start_offset) for e in follower.leader_epoch_cache.entries] == [(1, 0)]
    follower.append_as_follower(batches[3], now_ms=0)  # a gap (a compacted leader) is fine
    assert follower.log_end_offset == 8
    assert follower.read(4, 1000).first_offset == 6


def test_follower_takes_what_the_leader_accepted_even_above_its_max_message_bytes(tmp_path: Path) -> None:
    _leader, fetched = leader_bytes(tmp_path)
    follower = PartitionLog.open(new_dir(tmp_path), LogConfig(max_message_bytes=10), now_ms=0)
    assert follower.append_as_follower(fetched, now_ms=0).last_offset == 7


# --- reads ------------------------------------------------------------------------------------------------


def test_reads_return_whole_batches_from_the_one_holding_the_offset(tmp_path: Path) -> None:
    log = PartitionLog.open(new_dir(tmp_path), SMALL, now_ms=0)
    fill(log, 30)
    assert len(log.segments) > 3
    for offset in range(0, 60, 7):
        fetched = log.read(offset, 1)
        headers = [h for _, h in iter_headers(fetched.records)]
        assert len(headers) == 1  # at least one batch, however small max_bytes is
        assert headers[0].base_offset <= offset <= headers[0].last_offset
        assert (fetched.first_offset, fetched.next_offset) == (headers[0].base_offset, headers[0].next_offset)
    assert [r.offset for r in read_all(log)] == list(range(60))
    assert [r.key for r in read_all(log, 33)] == [kv(i)[0] for i in range(33, 60)]


def test_reads_stop_below_max_offset(tmp_path: Path) -> None:
    log = PartitionLog.open(new_dir(tmp_path), LogConfig(), now_ms=0)
    fill(log, 5)  # batches 0-1, 2-3, 4-5, 6-7, 8-9
    fetched = log.read(0, 1 << 20, max_offset=7)
    assert [h.base_offset for _, h in iter_headers(fetched.records)] == [0, 2, 4]
    assert fetched.next_offset == 6
    assert log.read(6, 1 << 20, max_offset=7).is_empty
    assert log.read(7, 1 << 20, max_offset=7).is_empty


def test_a_read_of_what_was_just_appended_answers_as_a_read_from_the_files(tmp_path: Path) -> None:
    # Followers read what their leader just appended: the log answers from that append, and must
    # answer exactly what reading its segment would, whatever happened to the log in between.
    directory = new_dir(tmp_path)
    log = PartitionLog.open(directory, LogConfig(), now_ms=0)

    def from_files(offset: int, max_bytes: int, max_offset: int | None = None) -> tuple[bytes, int, int]:
        other = PartitionLog.open(directory, LogConfig(), now_ms=0)  # the same files, nothing in memory
        fetched = other.read(offset, max_bytes, max_offset=max_offset)
        return bytes(fetched.records), fetched.first_offset, fetched.next_offset

    def read(offset: int, max_bytes: int, max_offset: int | None = None) -> tuple[bytes, int, int]:
        fetched = log.read(offset, max_bytes, max_offset=max_offset)
        return bytes(fetched.records), fetched.first_offset, fetched.next_offset

    fill(log, 2)  # 0-1, 2-3
    two = batch(kv(4), kv(5), ts=7) + batch(kv(6), ts=8)  # 4-5 and 6 in one append
    log.append_as_leader(two, leader_epoch=1, now_ms=0)
    for args in ((4, 1 << 20), (4, 1 << 20), (4, 10), (4, 1 << 20, 6), (4, 1 << 20, 7), (4, 1 << 20, 5)):
        assert read(*args) == from_files(*args)
    assert [r.offset for r in iter_records(read(4, 1 << 20)[0])] == [4, 5, 6]
    assert log.read(4, 1 << 20) is log.read(4, 1 << 20)  # the second reader gets the first one's answer
    assert [r.offset for r in iter_records(read(4, 10)[0])] == [4, 5]  # max_bytes: the first batch only
    assert read(4, 1 << 20, 6)[2] == 6  # below max_offset (a consumer's high watermark) only
    # Cut back and written again with other records at the same offsets: the new ones are read.
    assert log.truncate_to(4)
    assert read(4, 1 << 20) == (b"", 4, 4)  # the log ends there now
    log.append_as_leader(batch((b"new", b"value"), ts=9), leader_epoch=2, now_ms=0)
    assert [r.value for r in iter_records(read(4, 1 << 20)[0])] == [b"value"]
    assert read(4, 1 << 20) == from_files(4, 1 << 20)
    # A follower's append is read back the same way.
    follower = PartitionLog.open(new_dir(tmp_path), LogConfig(), now_ms=0)
    follower.append_as_follower(read(0, 1 << 20)[0], now_ms=0)
    assert bytes(follower.read(0, 1 << 20).records) == read(0, 1 << 20)[0]


def test_reads_out_of_range(tmp_path: Path) -> None:
    log = PartitionLog.open(new_dir(tmp_path), SMALL, now_ms=0)
    fill(log, 10)
    before = files(log.dir)
    at_end = log.read(20, 100)
    assert (at_end.is_empty, at_end.next_offset) == (True, 20)
    with pytest.raises(OffsetOutOfRange, match="holds offsets 0 to 20"):
        log.read(21, 100)
    with pytest.raises(OffsetOutOfRange):
        log.read(-1, 100)
    assert files(log.dir) == before
    assert log.log_end_offset == 20
    log.maybe_increment_log_start_offset(7)
    with pytest.raises(OffsetOutOfRange) as raised:
        log.read(6, 100)
    assert raised.value.name == "OFFSET_OUT_OF_RANGE"
    assert log.read(7, 100).first_offset == 6  # the batch holding 7 starts at 6


def test_segments_view_for_the_dashboard(tmp_path: Path) -> None:
    log = PartitionLog.open(new_dir(tmp_path), SMALL, now_ms=0)
    fill(log, 20, ts=1000)
    view = log.segments
    assert [s.active for s in view] == [False] * (len(view) - 1) + [True]
    assert [s.base_offset for s in view[1:]] == [s.next_offset for s in view[:-1]]
    assert view[-1].next_offset == log.log_end_offset == 40
    assert sum(s.size_in_bytes for s in view) == log.size_in_bytes
    assert all(s.size_in_bytes <= SMALL.segment_bytes for s in view)
    assert view[-1].largest_timestamp == 1019


# --- rolling --------------------------------------------------------------------------------------------


def test_rolls_when_the_next_append_would_overflow_segment_bytes(tmp_path: Path) -> None:
    one = len(batch(kv(0)))
    log = PartitionLog.open(new_dir(tmp_path), LogConfig(segment_bytes=3 * one), now_ms=0)
    for i in range(7):
        log.append_as_leader(batch(kv(i)), leader_epoch=0, now_ms=0)
    assert [(s.base_offset, s.next_offset) for s in log.segments] == [(0, 3), (3, 6), (6, 7)]
    assert sorted(p.name for p in log.dir.glob("*.log")) == [
        "00000000000000000000.log",
        "00000000000000000003.log",
        "00000000000000000006.log",
    ]
    assert log.recovery_point == 6  # a roll flushes the segments before the new one, as Kafka


def test_rolls_by_segment_ms_from_the_first_batch_timestamp(tmp_path: Path) -> None:
    log = PartitionLog.open(new_dir(tmp_path), LogConfig(segment_ms=1000), now_ms=0)
    log.append_as_leader(batch(kv(0), ts=5000), leader_epoch=0, now_ms=0)
    log.append_as_leader(batch(kv(1), ts=6000), leader_epoch=0, now_ms=0)
    assert len(log.segments) == 1
    log.append_as_leader(batch(kv(2), ts=6001), leader_epoch=0, now_ms=0)
    assert [s.base_offset for s in log.segments] == [0, 2]


def test_rolls_when_an_index_is_full(tmp_path: Path) -> None:
    config = LogConfig(segment_index_bytes=24, index_interval_bytes=0)  # 3 offset entries, 2 time entries
    log = PartitionLog.open(new_dir(tmp_path), config, now_ms=0)
    for i in range(10):
        log.append_as_leader(batch(kv(i), ts=i), leader_epoch=0, now_ms=0)
    assert len(log.segments) > 2
    for info in log.segments:
        assert info.index_entries <= 3
    assert [r.offset for r in read_all(log)] == list(range(10))


def test_explicit_roll(tmp_path: Path) -> None:
    log = PartitionLog.open(new_dir(tmp_path), LogConfig(), now_ms=0)
    log.roll(now_ms=0)  # an empty active segment stays
    assert len(log.segments) == 1
    fill(log, 2)
    info = log.roll(now_ms=0)
    assert (info.base_offset, info.active) == (4, True)
    assert [s.base_offset for s in log.segments] == [0, 4]


# --- offsets by timestamp -----------------------------------------------------------------------------------


def test_offset_for_timestamp(tmp_path: Path) -> None:
    log = PartitionLog.open(new_dir(tmp_path), SMALL, now_ms=0)
    for i, ts in enumerate([100, 200, 150, 400, 300, 500, 600, 700, 800, 900]):
        log.append_as_leader(batch(kv(i), kv(i), ts=ts), leader_epoch=0, now_ms=0)
    assert len(log.segments) > 1
    assert log.offset_for_timestamp(0) == 0
    assert log.offset_for_timestamp(160) == 2  # the batch at 200 (offsets 2-3)
    assert log.offset_for_timestamp(250) == 6  # 400 comes before 300
    assert log.offset_for_timestamp(650) == 14
    assert log.offset_for_timestamp(901) is None
    assert log.offset_for_timestamp(-2) == 0  # earliest
    assert log.offset_for_timestamp(-1) == 20  # latest
    log.maybe_increment_log_start_offset(5)
    assert log.offset_for_timestamp(0) == 5


# --- truncation -----------------------------------------------------------------------------------------


def test_truncate_to_drops_segments_batches_and_epochs(tmp_path: Path) -> None:
    log = PartitionLog.open(new_dir(tmp_path), SMALL, now_ms=0)
    fill(log, 10, epoch=1)
    fill(log, 10, epoch=2)
    assert len(log.segments) > 2
    assert log.truncate_to(13)
    assert log.log_end_offset == 12  # 13 sat in the batch 12-13: the whole batch goes
    assert [r.offset for r in read_all(log)] == list(range(12))
    assert [(e.epoch, e.start_offset) for e in log.leader_epoch_cache.entries] == [(1, 0)]
    assert all(s.base_offset < 12 for s in log.segments)
    assert sorted(p.name for p in log.dir.glob("*.log")) == [
        f"{s.base_offset:020d}.log" for s in log.segments
    ]
    assert not log.truncate_to(12)
    fill(log, 1, epoch=3)
    assert [r.offset for r in read_all(log)] == list(range(14))


def test_truncate_below_the_first_segment_starts_over(tmp_path: Path) -> None:
    log = PartitionLog.open(new_dir(tmp_path), SMALL, now_ms=0)
    fill(log, 20)
    log.delete_old_segments(10**12)  # keep only the active segment
    base = log.segments[0].base_offset
    assert log.truncate_to(base - 2)
    assert (log.log_start_offset, log.log_end_offset) == (base - 2, base - 2)
    assert log.leader_epoch_cache.entries == ()
    with pytest.raises(IllegalArgument):
        log.truncate_to(-1)


def test_truncate_fully_and_start_at(tmp_path: Path) -> None:
    log = PartitionLog.open(new_dir(tmp_path), SMALL, now_ms=0)
    fill(log, 20)
    log.truncate_fully_and_start_at(500)
    assert (log.log_start_offset, log.log_end_offset, log.recovery_point) == (500, 500, 500)
    assert sorted(files(log.dir)) == [
        "00000000000000000500.index",
        "00000000000000000500.log",
        "00000000000000000500.timeindex",
        "leader-epoch-checkpoint",
    ]
    fill(log, 1)
    assert [r.offset for r in read_all(log)] == [500, 501]


# --- retention -------------------------------------------------------------------------------------------


def test_retention_by_time_deletes_expired_segments_oldest_first(tmp_path: Path) -> None:
    config = LogConfig(segment_bytes=1024, retention_ms=1000)
    log = PartitionLog.open(new_dir(tmp_path), config, now_ms=0)
    fill(log, 10, ts=0)
    fill(log, 10, ts=5000, epoch=1)
    old = [s for s in log.segments if s.largest_timestamp < 1000]
    stats = log.delete_old_segments(now_ms=5500, high_watermark=log.log_end_offset)
    assert (stats.by_retention_ms, stats.segments_deleted) == (len(old), len(old))
    assert (stats.log_start_offset_before, stats.log_start_offset) == (0, log.log_start_offset)
    assert log.log_start_offset == log.segments[0].base_offset > 0
    assert [r.offset for r in read_all(log)] == list(range(log.log_start_offset, 40))
    assert log.leader_epoch_cache.entries[0].start_offset == log.log_start_offset


def test_an_idle_log_whose_records_all_expired_rolls_and_ends_empty(tmp_path: Path) -> None:
    # Kafka's deleteSegments: when every segment is deletable, even the active one, the log rolls
    # a new empty segment first, so the log start offset reaches the log end offset.
    config = LogConfig(segment_bytes=1024, retention_ms=1000)
    log = PartitionLog.open(new_dir(tmp_path), config, now_ms=0)
    fill(log, 20, ts=0, epoch=3)
    assert len(log.segments) > 1
    stats = log.delete_old_segments(now_ms=10_000, high_watermark=40)
    assert stats.by_retention_ms == stats.segments_deleted > 1
    assert (log.log_start_offset, log.log_end_offset) == (40, 40)
    assert [(s.base_offset, s.size_in_bytes, s.active) for s in log.segments] == [(40, 0, True)]
    assert sorted(p.name for p in log.dir.iterdir() if p.suffix in (".log", ".index", ".timeindex")) == [
        "00000000000000000040.index",
        "00000000000000000040.log",
        "00000000000000000040.timeindex",
    ]
    assert log.read(40, 100).is_empty
    with pytest.raises(OffsetOutOfRange):
        log.read(39, 100)
    assert [(e.epoch, e.start_offset) for e in log.leader_epoch_cache.entries] == [(3, 40)]
    assert log.delete_old_segments(now_ms=20_000, high_watermark=40).segments_deleted == 0  # nothing left
    fill(log, 1, ts=20_000, epoch=3)
    assert [r.offset for r in read_all(log)] == [40, 41]


def test_retention_never_passes_the_high_watermark(tmp_path: Path) -> None:
    log = PartitionLog.open(new_dir(tmp_path), LogConfig(segment_bytes=1024, retention_ms=0), now_ms=0)
    fill(log, 20)
    second_base = log.segments[1].base_offset
    assert log.delete_old_segments(now_ms=100, high_watermark=second_base).segments_deleted == 1
    assert log.log_start_offset == second_base
    # The active segment holds offsets up to the log end offset: it waits until the HW is there.
    active_base = log.segments[-1].base_offset
    log.delete_old_segments(now_ms=100, high_watermark=log.log_end_offset - 1)
    assert log.log_start_offset == active_base
    assert [s.base_offset for s in log.segments] == [active_base]
    assert log.segments[-1].size_in_bytes > 0
    log.delete_old_segments(now_ms=100, high_watermark=log.log_end_offset)
    assert log.log_start_offset == log.log_end_offset == 40


def test_retention_by_size(tmp_path: Path) -> None:
    log = PartitionLog.open(new_dir(tmp_path), LogConfig(segment_bytes=1024, retention_bytes=2048), now_ms=0)
    fill(log, 40)
    assert log.size_in_bytes > 2048
    stats = log.delete_old_segments(now_ms=0)
    assert stats.by_retention_bytes == stats.segments_deleted > 0
    assert log.size_in_bytes <= 2048 + 1024  # whole segments only
    zero = PartitionLog.open(new_dir(tmp_path), LogConfig(segment_bytes=1024, retention_bytes=0), now_ms=0)
    fill(zero, 5)
    zero.delete_old_segments(now_ms=0, high_watermark=zero.log_end_offset)
    assert (zero.log_start_offset, zero.size_in_bytes) == (10, 0)  # retention.bytes=0 keeps nothing


def test_forever_and_compact_only_keep_everything(tmp_path: Path) -> None:
    forever = PartitionLog.open(new_dir(tmp_path), LogConfig(segment_bytes=1024, retention_ms=-1), now_ms=0)
    fill(forever, 20)
    assert forever.delete_old_segments(now_ms=10**12).segments_deleted == 0
    compact = PartitionLog.open(
        new_dir(tmp_path),
        LogConfig(segment_bytes=1024, retention_ms=0, cleanup_policy=frozenset({"compact"})),
        now_ms=0,
    )
    fill(compact, 20)
    assert compact.delete_old_segments(now_ms=10**12).segments_deleted == 0
    # Compact-only logs still drop segments wholly below their log start offset (DeleteRecords).
    compact.maybe_increment_log_start_offset(compact.segments[1].base_offset)
    assert compact.segments[0].base_offset == compact.log_start_offset


def test_delete_records_moves_the_log_start_offset(tmp_path: Path) -> None:
    log = PartitionLog.open(new_dir(tmp_path), SMALL, now_ms=0)
    fill(log, 20)
    third_base = log.segments[2].base_offset
    assert log.maybe_increment_log_start_offset(third_base + 1)
    assert log.log_start_offset == third_base + 1
    assert log.segments[0].base_offset == third_base  # the two segments wholly below are gone
    assert not log.maybe_increment_log_start_offset(3)
    with pytest.raises(OffsetOutOfRange, match="above the log end offset 40"):
        log.maybe_increment_log_start_offset(41)
    with pytest.raises(OffsetOutOfRange, match="high watermark 30"):
        log.maybe_increment_log_start_offset(31, high_watermark=30)
    assert log.log_start_offset == third_base + 1


# --- compaction ----------------------------------------------------------------------------------------


def test_compaction_keeps_the_latest_record_per_key_at_its_offset(tmp_path: Path) -> None:
    log = PartitionLog.open(new_dir(tmp_path), COMPACTED, now_ms=0)
    for i in range(30):
        log.append_as_leader(batch((b"k%d" % (i % 3), b"v%d" % i), ts=i), leader_epoch=0, now_ms=0)
    log.roll(now_ms=0)
    size_before = log.size_in_bytes
    stats = log.compact(now_ms=100)
    assert stats.skipped_reason is None
    assert (stats.records_read, stats.records_retained, stats.records_removed) == (30, 3, 27)
    assert [(r.offset, r.key, r.value) for r in read_all(log)] == [
        (27, b"k0", b"v27"),
        (28, b"k1", b"v28"),
        (29, b"k2", b"v29"),
    ]
    assert log.log_end_offset == 30
    assert log.size_in_bytes == stats.bytes_written < size_before
    assert log.read(0, 100).first_offset == 27  # offsets below are gaps now
    assert log.compact(now_ms=100).skipped_reason == "no dirty segments below the first uncleanable offset"
    # The next cleaning merges the segments that shrank (Kafka groups neighbours that fit one segment).
    segments_before = len(log.segments)
    log.append_as_leader(batch((b"k0", b"v30"), (b"k1", b"v31")), leader_epoch=0, now_ms=0)
    log.roll(now_ms=0)
    log.compact(now_ms=100, force=True)
    assert len(log.segments) < segments_before
    assert [(r.offset, r.value) for r in read_all(log)] == [(29, b"v29"), (30, b"v30"), (31, b"v31")]


def test_compaction_rewrites_batches_with_their_original_offset_range(tmp_path: Path) -> None:
    log = PartitionLog.open(new_dir(tmp_path), COMPACTED, now_ms=0)
    log.append_as_leader(batch((b"a", b"1"), (b"b", b"2"), (b"a", b"3"), ts=7), leader_epoch=2, now_ms=0)
    log.append_as_leader(
        batch((b"c", b"1"), (b"b", b"4"), ts=8, compression=Compression.GZIP), leader_epoch=2, now_ms=0
    )
    log.roll(now_ms=0)
    log.compact(now_ms=10, force=True)
    data = log.dir.joinpath("00000000000000000000.log").read_bytes()
    headers = [h for _, h in iter_batches(data)]
    assert [(h.base_offset, h.last_offset, h.record_count) for h in headers] == [(0, 2, 1), (3, 4, 2)]
    assert [h.compression for h in headers] == [Compression.NONE, Compression.GZIP]
    assert [h.partition_leader_epoch for h in headers] == [2, 2]
    assert [(r.offset, r.key, r.value, r.timestamp) for r in iter_records(data)] == [
        (2, b"a", b"3", 7),
        (3, b"c", b"1", 8),
        (4, b"b", b"4", 8),
    ]


def tombstone_batches(log: PartitionLog) -> list[BatchHeader]:
    """The headers of the batches holding a tombstone, read from the segment files."""
    out = []
    for segment in log.segments:
        data = log.dir.joinpath(f"{segment.base_offset:020d}.log").read_bytes()
        out += [h for pos, h in iter_batches(data) if any(r.value is None for r in decode_records(data, pos))]
    return out


def test_a_tombstones_delete_horizon_starts_when_the_cleaner_first_keeps_it(tmp_path: Path) -> None:
    # KIP-534: not the tombstone's own timestamp plus delete.retention.ms, but the time of the
    # first cleaning that keeps it plus delete.retention.ms, stamped into its batch.
    log = PartitionLog.open(new_dir(tmp_path), COMPACTED, now_ms=0)
    log.append_as_leader(batch((b"a", b"1"), (b"b", b"1"), ts=0), leader_epoch=0, now_ms=0)
    log.append_as_leader(batch((b"a", None), ts=0), leader_epoch=0, now_ms=0)
    log.roll(now_ms=0)
    stats = log.compact(now_ms=50_000)  # the tombstone is 50 s old, far past delete.retention.ms=1000
    assert (stats.records_removed, stats.tombstones_removed, stats.delete_horizons_set) == (1, 0, 1)
    assert [(r.key, r.value, r.timestamp) for r in read_all(log)] == [(b"b", b"1", 0), (b"a", None, 0)]
    [header] = tombstone_batches(log)
    assert header.delete_horizon_ms == 51_000
    assert header.attributes & 0x40  # attribute bit 6: the base timestamp is the delete horizon
    assert stats.next_delete_horizon_ms == 51_000


def test_an_idle_compacted_log_drops_its_tombstones_past_the_horizon(tmp_path: Path) -> None:
    # No new writes, so no dirty segment and a dirty ratio of 0: the passed horizon alone makes the
    # log cleanable (KIP-534), and the tombstone goes without anyone forcing it.
    log = PartitionLog.open(new_dir(tmp_path), COMPACTED, now_ms=0)
    log.append_as_leader(batch((b"a", b"1"), (b"b", b"1"), ts=0), leader_epoch=0, now_ms=0)
    log.append_as_leader(batch((b"a", None), ts=500), leader_epoch=0, now_ms=0)
    log.roll(now_ms=0)
    assert log.compact(now_ms=1000).delete_horizons_set == 1  # horizon 2000
    early = log.compact(now_ms=1999)
    assert early.skipped_reason == "no dirty segments below the first uncleanable offset"
    assert [(r.key, r.value) for r in read_all(log)] == [(b"b", b"1"), (b"a", None)]
    stats = log.compact(now_ms=2000)
    assert stats.skipped_reason is None
    assert stats.for_delete_horizon
    assert (stats.tombstones_removed, stats.next_delete_horizon_ms) == (1, None)
    assert [(r.key, r.value) for r in read_all(log)] == [(b"b", b"1")]
    assert log.compact(now_ms=10**9).skipped_reason is not None  # nothing left to do: no endless cleaning


def test_delete_horizons_survive_a_restart(tmp_path: Path) -> None:
    log = PartitionLog.open(new_dir(tmp_path), COMPACTED, now_ms=0)
    log.append_as_leader(batch((b"a", b"1"), ts=0), leader_epoch=0, now_ms=0)
    log.append_as_leader(batch((b"a", None), (b"c", b"1"), ts=0), leader_epoch=0, now_ms=0)
    log.roll(now_ms=0)
    log.compact(now_ms=100)  # horizon 1100
    checkpoint = log.cleaner_checkpoint
    log.close()
    reopened = PartitionLog.open(
        log.dir, COMPACTED, now_ms=0, recovery_point=log.recovery_point, cleaner_checkpoint=checkpoint
    )
    assert reopened.compact(now_ms=1099).skipped_reason is not None
    stats = reopened.compact(now_ms=1100)
    assert stats.tombstones_removed == 1
    assert [(r.key, r.value) for r in read_all(reopened)] == [(b"c", b"1")]
    assert tombstone_batches(reopened) == []


def test_compaction_waits_for_the_dirty_ratio_unless_forced(tmp_path: Path) -> None:
    config = LogConfig(
        segment_bytes=1024,
        index_interval_bytes=100,
        cleanup_policy=frozenset({"compact"}),
        min_cleanable_dirty_ratio=0.9,
    )
    log = PartitionLog.open(new_dir(tmp_path), config, now_ms=0)
    fill(log, 20)
    log.roll(now_ms=0)
    assert log.compact(now_ms=0).skipped_reason is None  # all dirty: ratio 1.0
    fill(log, 1)
    log.roll(now_ms=0)
    stats = log.compact(now_ms=0)
    assert stats.skipped_reason is not None
    assert "below min.cleanable.dirty.ratio" in stats.skipped_reason
    assert 0 < stats.dirty_ratio < 0.9
    assert log.compact(now_ms=0, force=True).skipped_reason is None


def test_compaction_respects_policy_lag_and_high_watermark(tmp_path: Path) -> None:
    plain = PartitionLog.open(new_dir(tmp_path), SMALL, now_ms=0)
    assert plain.compact(now_ms=0, force=True).skipped_reason == "cleanup.policy does not include compact"
    lagging = LogConfig(
        segment_bytes=1024, cleanup_policy=frozenset({"compact", "delete"}), min_compaction_lag_ms=1000
    )
    log = PartitionLog.open(new_dir(tmp_path), lagging, now_ms=0)
    for i in range(40):
        log.append_as_leader(batch((b"same", b"%d" % i), ts=i * 100), leader_epoch=0, now_ms=0)
    log.roll(now_ms=0)
    stats = log.compact(now_ms=3000, force=True)
    assert stats.first_uncleanable_offset <= 21  # records newer than 2000 ms are not cleanable yet
    assert [r.offset for r in read_all(log)][-19:] == list(range(21, 40))
    hw_bound = log.compact(now_ms=10**6, force=True, high_watermark=30)
    assert hw_bound.first_uncleanable_offset == 30
    assert any(r.offset >= 30 for r in read_all(log))
    assert all(r.key == b"same" for r in read_all(log))


def test_compaction_drops_records_without_keys_written_before_the_policy_changed(tmp_path: Path) -> None:
    log = PartitionLog.open(new_dir(tmp_path), SMALL, now_ms=0)
    log.append_as_leader(batch((None, b"1"), (b"k", b"2")), leader_epoch=0, now_ms=0)
    log.roll(now_ms=0)
    log.update_config(COMPACTED)
    stats = log.compact(now_ms=0, force=True)
    assert stats.records_removed == 1
    assert [(r.key, r.value) for r in read_all(log)] == [(b"k", b"2")]


def test_an_interrupted_cleaning_leaves_the_old_segments(tmp_path: Path) -> None:
    log = PartitionLog.open(new_dir(tmp_path), COMPACTED, now_ms=0)
    for i in range(20):
        log.append_as_leader(batch((b"k%d" % (i % 2), b"v%d" % i)), leader_epoch=0, now_ms=0)
    log.close()
    before = files(log.dir)
    # A crash mid-write leaves .cleaned files and index .swap files without a .log.swap.
    log.dir.joinpath("00000000000000000000.log.cleaned").write_bytes(b"half a segment")
    log.dir.joinpath("00000000000000000000.index.swap").write_bytes(b"")
    reopened = PartitionLog.open(log.dir, COMPACTED, now_ms=0, recovery_point=log.recovery_point)
    assert files(reopened.dir) == before
    assert [r.offset for r in read_all(reopened)] == list(range(20))


def test_a_swap_file_completes_the_cleaning_on_open(tmp_path: Path) -> None:
    log = PartitionLog.open(new_dir(tmp_path), COMPACTED, now_ms=0)
    for segment in range(5):
        for key in (b"a", b"b", b"only-in-%d" % segment):
            log.append_as_leader(batch((key, b"%d" % segment)), leader_epoch=0, now_ms=0)
        log.roll(now_ms=0)
    log.close()
    reader = PartitionLog.open(log.dir, COMPACTED, now_ms=0, recovery_point=log.recovery_point)
    original = [(r.offset, r.key, r.value) for r in read_all(reader)]
    reader.close()
    copy = tmp_path / "copy" / log.dir.name
    shutil.copytree(log.dir, copy)
    cleaned = PartitionLog.open(copy, COMPACTED, now_ms=0, recovery_point=log.recovery_point)
    cleaned.compact(now_ms=0, force=True)
    expected = [(r.offset, r.key, r.value) for r in read_all(cleaned)]
    cleaned.close()
    assert len(list(copy.glob("*.log"))) < len(list(log.dir.glob("*.log")))  # segments were merged
    # The crash came after .cleaned became .swap, before the old segments were deleted.
    first, second = sorted(copy.glob("*.log"))[:2]
    group_end = int(second.name.split(".")[0])
    shutil.copy(first, log.dir / (first.name + ".swap"))
    reopened = PartitionLog.open(log.dir, COMPACTED, now_ms=0, recovery_point=log.recovery_point)
    assert not list(log.dir.glob("*.swap"))
    assert log.dir.joinpath(first.name).read_bytes() == first.read_bytes()
    # The swapped-in group is compacted; the segments after it are as they were.
    assert [(r.offset, r.key, r.value) for r in read_all(reopened)] == [
        *(r for r in expected if r[0] < group_end),
        *(r for r in original if r[0] >= group_end),
    ]


# --- durability, crashes and recovery -------------------------------------------------------------------


def test_close_and_reopen_without_recovery(tmp_path: Path) -> None:
    log = PartitionLog.open(new_dir(tmp_path), SMALL, now_ms=0)
    fill(log, 20, ts=100, epoch=2)
    log.close()
    assert log.recovery_point == 40
    with pytest.raises(KafkaStorageError, match="closed"):
        log.read(0, 100)
    reopened = PartitionLog.open(log.dir, SMALL, now_ms=0, recovery_point=log.recovery_point)
    assert reopened.segments == log.segments
    assert reopened.leader_epoch_cache.entries == log.leader_epoch_cache.entries
    assert [r.offset for r in read_all(reopened)] == list(range(40))
    fill(reopened, 1)
    assert reopened.log_end_offset == 42


def test_a_power_cut_loses_what_was_not_flushed(tmp_path: Path) -> None:
    log = PartitionLog.open(new_dir(tmp_path), LogConfig(), now_ms=0)
    fill(log, 5, epoch=1)
    log.flush()
    assert log.recovery_point == 10
    fill(log, 5, epoch=2)
    log.crash(lose_unflushed=True)
    reopened = PartitionLog.open(log.dir, LogConfig(), now_ms=0, recovery_point=log.recovery_point)
    assert reopened.log_end_offset == 10
    assert [r.offset for r in read_all(reopened)] == list(range(10))
    assert [(e.epoch, e.start_offset) for e in reopened.leader_epoch_cache.entries] == [(1, 0)]


def test_a_power_cut_loses_whole_unflushed_segments(tmp_path: Path) -> None:
    log = PartitionLog.open(new_dir(tmp_path), SMALL, now_ms=0)
    fill(log, 10)
    log.flush()
    flushed = log.log_end_offset
    fill(log, 20)
    assert log.recovery_point > flushed  # the rolls flushed some more
    durable = log.recovery_point
    log.crash(lose_unflushed=True)
    reopened = PartitionLog.open(log.dir, SMALL, now_ms=0, recovery_point=durable)
    assert reopened.log_end_offset == durable
    assert all(s.base_offset <= durable for s in reopened.segments)


def test_a_process_crash_keeps_written_bytes(tmp_path: Path) -> None:
    log = PartitionLog.open(new_dir(tmp_path), SMALL, now_ms=0)
    fill(log, 20)
    log.crash(lose_unflushed=False)
    reopened = PartitionLog.open(log.dir, SMALL, now_ms=0, recovery_point=log.recovery_point)
    assert reopened.log_end_offset == 40
    assert [r.offset for r in read_all(reopened)] == list(range(40))


def test_recovery_cuts_a_torn_batch_and_rebuilds_indexes(tmp_path: Path) -> None:
    log = PartitionLog.open(new_dir(tmp_path), LogConfig(index_interval_bytes=100), now_ms=0)
    fill(log, 10)
    log.close()
    segment = log.dir / "00000000000000000000.log"
    index = log.dir / "00000000000000000000.index"
    good_index = index.read_bytes()
    with open(segment, "ab") as f:
        f.write(batch(kv(99))[:40])  # the broker died half way through a write
    index.write_bytes(b"\x00" * 13)
    reopened = PartitionLog.open(log.dir, LogConfig(index_interval_bytes=100), now_ms=0)
    assert reopened.log_end_offset == 20
    assert index.read_bytes() == good_index
    assert [r.offset for r in read_all(reopened)] == list(range(20))


def test_a_corrupt_index_below_the_recovery_point_is_rebuilt(tmp_path: Path) -> None:
    log = PartitionLog.open(new_dir(tmp_path), SMALL, now_ms=0)
    fill(log, 20)
    log.close()
    first_index = log.dir / "00000000000000000000.index"
    good = first_index.read_bytes()
    first_index.write_bytes(struct.pack(">ii", 1, 10**6))
    (log.dir / "00000000000000000000.timeindex").unlink()
    reopened = PartitionLog.open(log.dir, SMALL, now_ms=0, recovery_point=log.recovery_point)
    assert first_index.read_bytes() == good
    assert reopened.segments == log.segments
    assert [r.offset for r in read_all(reopened)] == list(range(40))


def test_delete_removes_the_directory(tmp_path: Path) -> None:
    log = PartitionLog.open(new_dir(tmp_path), SMALL, now_ms=0)
    fill(log, 5)
    log.delete()
    assert not log.dir.exists()
    with pytest.raises(KafkaStorageError):
        fill(log, 1)


# --- properties ----------------------------------------------------------------------------------------

PROPERTY = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
record_lists = st.lists(
    st.tuples(
        st.sampled_from([b"a", b"b", b"c", b"d"]), st.one_of(st.none(), st.binary(min_size=1, max_size=60))
    ),
    min_size=1,
    max_size=6,
)


def append_all(log: PartitionLog, batches: Sequence[list[tuple[bytes, bytes | None]]]) -> list[bytes]:
    """Append each record list as one batch; returns the batches as the log holds them."""
    stored = []
    for i, records in enumerate(batches):
        info = log.append_as_leader(
            build_batch([SimpleRecord(key=k, value=v, timestamp=i) for k, v in records], timestamp_ms=i),
            leader_epoch=0,
            now_ms=0,
        )
        stored.append(bytes(log.read(info.first_offset, 1).records))
    return stored


@PROPERTY
@given(
    batches=st.lists(record_lists, min_size=1, max_size=25),
    max_bytes=st.integers(min_value=1, max_value=2000),
)
def test_property_append_then_read_returns_the_same_batches(
    tmp_path: Path, batches: list[list[tuple[bytes, bytes | None]]], max_bytes: int
) -> None:
    log = PartitionLog.open(
        new_dir(tmp_path), LogConfig(segment_bytes=600, index_interval_bytes=150), now_ms=0
    )
    stored = append_all(log, batches)
    offset, fetched = 0, b""
    while offset < log.log_end_offset:
        data = log.read(offset, max_bytes)
        fetched += bytes(data.records)
        offset = data.next_offset
    assert fetched == b"".join(stored)
    assert [(r.key, r.value) for r in iter_records(fetched)] == [kv for records in batches for kv in records]


@PROPERTY
@given(
    batches=st.lists(record_lists, min_size=1, max_size=15),
    segment_choice=st.integers(min_value=0),
    cut_choice=st.integers(min_value=0),
)
def test_property_a_cut_anywhere_keeps_the_whole_batches_before_it(
    tmp_path: Path, batches: list[list[tuple[bytes, bytes | None]]], segment_choice: int, cut_choice: int
) -> None:
    config = LogConfig(segment_bytes=500, index_interval_bytes=100)
    log = PartitionLog.open(new_dir(tmp_path), config, now_ms=0)
    stored = append_all(log, batches)
    log.crash(lose_unflushed=False)
    segment_files = sorted(log.dir.glob("*.log"))
    victim = segment_files[segment_choice % len(segment_files)]
    data = victim.read_bytes()
    cut = cut_choice % (len(data) + 1)
    victim.write_bytes(data[:cut])
    # The whole batches before the cut: every batch of earlier segments, those wholly below the cut here.
    victim_base = int(victim.name.split(".")[0])
    survivors = []
    for buf in stored:
        header = read_header(buf)
        if header.base_offset < victim_base:
            survivors.append(buf)
    position = 0
    for _pos, header in iter_headers(data):
        if position + header.size_in_bytes > cut:
            break
        survivors.append(data[position : position + header.size_in_bytes])
        position += header.size_in_bytes
    if position == cut and victim != segment_files[-1]:
        # A cut on a batch boundary leaves a shorter segment, which is valid (a compacted one looks the
        # same): the segments after it stay. A cut inside a batch is a torn write: they go too.
        next_base = int(segment_files[segment_files.index(victim) + 1].name.split(".")[0])
        survivors.extend(buf for buf in stored if read_header(buf).base_offset >= next_base)
    reopened = PartitionLog.open(log.dir, config, now_ms=0)
    expected_end = read_header(survivors[-1]).next_offset if survivors else victim_base
    assert reopened.log_end_offset == expected_end
    offset, fetched = reopened.log_start_offset, b""
    while offset < reopened.log_end_offset:
        part = reopened.read(offset, 10_000)
        fetched += bytes(part.records)
        offset = part.next_offset
    assert fetched == b"".join(survivors)


@PROPERTY
@given(
    timestamps=st.lists(st.integers(min_value=0, max_value=10_000), min_size=1, max_size=30),
    now_ms=st.integers(min_value=0, max_value=20_000),
    retention_ms=st.integers(min_value=0, max_value=5_000),
    retention_bytes=st.integers(min_value=-1, max_value=3_000),
    hw_back=st.integers(min_value=0, max_value=5),
)
def test_property_retention_follows_kafkas_rules(
    tmp_path: Path, timestamps: list[int], now_ms: int, retention_ms: int, retention_bytes: int, hw_back: int
) -> None:
    config = LogConfig(segment_bytes=400, retention_ms=retention_ms, retention_bytes=retention_bytes)
    log = PartitionLog.open(new_dir(tmp_path), config, now_ms=0)
    for ts in timestamps:
        log.append_as_leader(batch(kv(ts), ts=ts), leader_epoch=0, now_ms=0)
    before = log.segments
    end = log.log_end_offset
    hw = max(0, end - hw_back)

    # Kafka 3's order: retention.bytes, then retention.ms; a segment goes only below the HW, and the
    # active (last) one counts too when it holds data.
    def deletable(i: int) -> bool:
        upper = before[i + 1].base_offset if i + 1 < len(before) else end
        return upper <= hw and (i + 1 < len(before) or before[i].size_in_bytes > 0)

    kept_from = 0
    total = sum(s.size_in_bytes for s in before)
    if retention_bytes >= 0 and total >= retention_bytes:
        excess = total - retention_bytes
        while (
            kept_from < len(before) and deletable(kept_from) and excess - before[kept_from].size_in_bytes >= 0
        ):
            excess -= before[kept_from].size_in_bytes
            kept_from += 1
    while (
        kept_from < len(before)
        and deletable(kept_from)
        and now_ms - before[kept_from].largest_timestamp > retention_ms
    ):
        kept_from += 1
    assert log.delete_old_segments(now_ms, high_watermark=hw).segments_deleted == kept_from
    assert log.log_end_offset == end
    if kept_from == len(before):  # everything went: one empty segment at the log end offset
        assert [(s.base_offset, s.size_in_bytes) for s in log.segments] == [(end, 0)]
        assert log.log_start_offset == end
    else:
        assert log.segments == before[kept_from:]
        assert log.log_start_offset == before[kept_from].base_offset
    assert log.log_start_offset <= hw or kept_from == 0
    assert [r.offset for r in read_all(log)] == list(range(log.log_start_offset, end))


@PROPERTY
@given(batches=st.lists(record_lists, min_size=1, max_size=30))
def test_property_compaction_keeps_exactly_the_last_record_per_key(
    tmp_path: Path, batches: list[list[tuple[bytes, bytes | None]]]
) -> None:
    config = LogConfig(
        segment_bytes=500,
        index_interval_bytes=100,
        cleanup_policy=frozenset({"compact"}),
        delete_retention_ms=10**9,
    )
    log = PartitionLog.open(new_dir(tmp_path), config, now_ms=0)
    append_all(log, batches)
    log.roll(now_ms=0)
    original = read_all(log)
    latest = {r.key: r for r in original}
    log.compact(now_ms=0, force=True)
    compacted = read_all(log)
    assert compacted == sorted(latest.values(), key=lambda r: r.offset)  # same offsets, values, timestamps
    assert log.log_end_offset == original[-1].offset + 1
    log.compact(now_ms=0, force=True)
    assert read_all(log) == compacted
