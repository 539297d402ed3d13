"""Producer state on a partition's log: Kafka's checks of idempotent batches, followers' rebuild,
and the ``.snapshot`` files that carry it over a restart."""

from __future__ import annotations

import struct
from pathlib import Path

import crc32c
import pytest

from lab.engine.errors import InvalidProducerEpoch, OutOfOrderSequenceNumber
from lab.engine.records import build_batch, iter_records
from lab.engine.storage import LogConfig, PartitionLog
from lab.engine.storage.producer_state import (
    BATCHES_TO_RETAIN,
    INT32_MAX,
    decode_snapshot,
    encode_snapshot,
    increment_sequence,
    snapshot_offsets,
)

SMALL = LogConfig(segment_bytes=1024, index_interval_bytes=100)


def idem(pid: int, epoch: int, seq: int, n: int = 1, ts: int = 0) -> bytes:
    """One batch of ``n`` records from producer ``pid`` at ``epoch``, starting at sequence ``seq``."""
    return build_batch(
        [(None, f"{pid}-{seq + i}".encode()) for i in range(n)],
        timestamp_ms=ts,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
    )


def open_log(directory: Path, config: LogConfig = SMALL) -> PartitionLog:
    return PartitionLog.open(directory, config, now_ms=0)


def values(log: PartitionLog) -> list[bytes | None]:
    return [r.value for r in iter_records(log.read(log.log_start_offset, 1 << 30).records)]


def test_a_retry_of_one_of_the_last_five_batches_is_answered_with_the_original_offset(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    firsts = [
        log.append_as_leader(idem(7, 0, seq, 2), leader_epoch=0, now_ms=0).first_offset
        for seq in range(0, 12, 2)
    ]
    assert firsts == [0, 2, 4, 6, 8, 10]
    again = log.append_as_leader(idem(7, 0, 4, 2), leader_epoch=0, now_ms=0)
    assert again.duplicate
    assert (again.first_offset, again.last_offset) == (4, 5)
    assert log.log_end_offset == 12  # nothing written twice
    assert len(values(log)) == 12
    # The oldest batch (sequence 0) is no longer among the five kept: its retry is out of order.
    with pytest.raises(OutOfOrderSequenceNumber, match=r"0 \(incoming seq\. number\), 11"):
        log.append_as_leader(idem(7, 0, 0, 2), leader_epoch=0, now_ms=0)
    assert log.log_end_offset == 12


def test_a_sequence_gap_is_out_of_order_and_appends_nothing(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    log.append_as_leader(idem(7, 0, 0, 3), leader_epoch=0, now_ms=0)
    with pytest.raises(OutOfOrderSequenceNumber) as error:
        log.append_as_leader(idem(7, 0, 5), leader_epoch=0, now_ms=0)
    assert error.value.name == "OUT_OF_ORDER_SEQUENCE_NUMBER"
    assert "5 (incoming seq. number), 2 (current end sequence number)" in error.value.message
    assert log.log_end_offset == 3
    assert log.append_as_leader(idem(7, 0, 3), leader_epoch=0, now_ms=0).first_offset == 3


def test_a_stale_epoch_is_refused_and_a_new_epoch_starts_at_sequence_zero(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    log.append_as_leader(idem(7, 1, 0, 2), leader_epoch=0, now_ms=0)
    with pytest.raises(InvalidProducerEpoch) as stale:
        log.append_as_leader(idem(7, 0, 2), leader_epoch=0, now_ms=0)
    assert stale.value.name == "INVALID_PRODUCER_EPOCH"
    assert "is 0, which is smaller than the last seen epoch 1" in stale.value.message
    with pytest.raises(OutOfOrderSequenceNumber, match="Invalid sequence number for new epoch"):
        log.append_as_leader(idem(7, 2, 5), leader_epoch=0, now_ms=0)
    assert log.append_as_leader(idem(7, 2, 0), leader_epoch=0, now_ms=0).first_offset == 2
    assert log.producer_state.producers[7].producer_epoch == 2
    assert log.log_end_offset == 3


def test_a_producer_the_partition_never_saw_may_start_at_any_sequence(tmp_path: Path) -> None:
    # Kafka 3.x (KIP-360): its earlier records may have gone with retention, so no UNKNOWN_PRODUCER_ID.
    log = open_log(tmp_path / "t-0")
    assert log.append_as_leader(idem(9, 0, 40), leader_epoch=0, now_ms=0).first_offset == 0
    assert log.append_as_leader(idem(9, 0, 40), leader_epoch=0, now_ms=0).duplicate
    with pytest.raises(OutOfOrderSequenceNumber):
        log.append_as_leader(idem(9, 0, 45), leader_epoch=0, now_ms=0)
    assert log.append_as_leader(idem(9, 0, 41), leader_epoch=0, now_ms=0).first_offset == 1


def test_plain_batches_carry_no_state(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    for _ in range(3):
        log.append_as_leader(build_batch([(None, b"v")], timestamp_ms=0), leader_epoch=0, now_ms=0)
    assert log.log_end_offset == 3
    assert log.producer_state.producers == {}


def test_a_follower_rebuilds_the_leaders_state_from_the_batches_it_appends(tmp_path: Path) -> None:
    leader = open_log(tmp_path / "a" / "t-0")
    follower = open_log(tmp_path / "b" / "t-0")
    for seq in range(0, 6, 3):
        leader.append_as_leader(idem(5, 0, seq, 3), leader_epoch=0, now_ms=0)
    follower.append_as_follower(leader.read(0, 1 << 20).records, now_ms=0)
    # The follower becomes leader: the retry the old leader wrote is a duplicate here too.
    again = follower.append_as_leader(idem(5, 0, 3, 3), leader_epoch=1, now_ms=0)
    assert again.duplicate
    assert again.first_offset == 3
    assert follower.append_as_leader(idem(5, 0, 6), leader_epoch=1, now_ms=0).first_offset == 6


def test_snapshots_are_written_on_roll_and_close_and_loaded_on_open(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    log = open_log(directory)
    seq = 0
    while len(log.segments) < 3:
        log.append_as_leader(idem(3, 0, seq, 4, ts=seq), leader_epoch=0, now_ms=0)
        seq += 4
    rolled = [s.base_offset for s in log.segments[1:]]
    assert snapshot_offsets(directory) == rolled
    log.close()
    assert snapshot_offsets(directory) == [*rolled, log.log_end_offset]
    reopened = open_log(directory)
    entry = reopened.producer_state.producers[3]
    assert (entry.producer_epoch, entry.last_seq, entry.last_offset) == (0, seq - 1, seq - 1)
    dup = reopened.append_as_leader(idem(3, 0, seq - 4, 4), leader_epoch=0, now_ms=0)
    assert dup.duplicate
    assert dup.first_offset == seq - 4
    assert reopened.append_as_leader(idem(3, 0, seq), leader_epoch=0, now_ms=0).first_offset == seq


def test_the_state_is_rebuilt_from_the_log_when_the_snapshots_are_gone(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    log = open_log(directory)
    for seq in range(0, 60, 3):
        log.append_as_leader(idem(11, 2, seq, 3), leader_epoch=0, now_ms=0)
    log.close()
    for path in directory.glob("*.snapshot"):
        path.unlink()
    reopened = open_log(directory)
    assert reopened.producer_state.producers[11].last_seq == 59
    with pytest.raises(OutOfOrderSequenceNumber):
        reopened.append_as_leader(idem(11, 2, 70), leader_epoch=0, now_ms=0)


def test_a_crash_loads_the_last_snapshot_and_replays_the_batches_after_it(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    log = open_log(directory)
    seq = 0
    while len(log.segments) < 2:
        log.append_as_leader(idem(3, 0, seq, 4), leader_epoch=0, now_ms=0)
        seq += 4
    log.append_as_leader(idem(3, 0, seq, 4), leader_epoch=0, now_ms=0)
    seq += 4
    log.crash(lose_unflushed=False)
    reopened = open_log(directory)
    assert reopened.producer_state.producers[3].last_seq == seq - 1


def test_a_corrupt_snapshot_is_deleted_and_the_log_replayed(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    log = open_log(directory)
    for seq in range(0, 9, 3):
        log.append_as_leader(idem(4, 0, seq, 3), leader_epoch=0, now_ms=0)
    log.close()
    (snapshot,) = directory.glob("*.snapshot")
    data = bytearray(snapshot.read_bytes())
    data[-1] ^= 0xFF
    snapshot.write_bytes(bytes(data))
    reopened = open_log(directory)
    assert reopened.producer_state.producers[4].last_seq == 8
    assert not snapshot.exists() or snapshot.read_bytes() != bytes(data)


def test_truncation_reloads_the_state_below_the_new_end(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    for seq in range(0, 12, 3):
        log.append_as_leader(idem(6, 0, seq, 3), leader_epoch=0, now_ms=0)
    log.truncate_to(6)
    assert log.producer_state.producers[6].last_seq == 5
    # The truncated batch (sequence 6) is not a duplicate any more: it is written again.
    info = log.append_as_leader(idem(6, 0, 6, 3), leader_epoch=1, now_ms=0)
    assert not info.duplicate
    assert info.first_offset == 6
    log.truncate_fully_and_start_at(100)
    assert log.producer_state.producers == {}


def test_snapshot_bytes_are_kafkas_format() -> None:
    log_entries = decode_snapshot(encode_snapshot([]))
    assert log_entries == []
    from lab.engine.storage.producer_state import ProducerStateEntry

    entry = ProducerStateEntry(producer_id=1000, coordinator_epoch=-1)
    entry.add_batch(3, 41, 99, 9, 1234)
    data = encode_snapshot([entry])
    version, crc, count = struct.unpack_from(">hIi", data)
    assert (version, count) == (1, 1)
    assert crc == crc32c.crc32c(data[6:])
    assert struct.unpack_from(">qhiqiqiq", data, 10) == (1000, 3, 41, 99, 9, 1234, -1, -1)
    (back,) = decode_snapshot(data)
    assert (back.producer_id, back.producer_epoch, back.first_seq, back.last_seq, back.last_offset) == (
        1000,
        3,
        32,
        41,
        99,
    )


def test_sequences_wrap_at_int32_max() -> None:
    assert increment_sequence(INT32_MAX, 1) == 0
    assert increment_sequence(INT32_MAX - 1, 3) == 1
    assert increment_sequence(5, 3) == 8


def test_only_five_batches_are_kept_per_producer(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    for seq in range(10):
        log.append_as_leader(idem(1, 0, seq), leader_epoch=0, now_ms=0)
    assert len(log.producer_state.producers[1].batches) == BATCHES_TO_RETAIN
