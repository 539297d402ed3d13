"""The aborted-transaction index (``.txnindex``, Kafka's format) beside the segments: written with
each abort marker, on every replica, truncated with the log, and rebuilt from the log on recovery."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.engine.control_records import Marker
from lab.engine.errors import InvalidProducerEpoch, TransactionCoordinatorFenced
from lab.engine.records import build_batch
from lab.engine.storage import LogConfig, PartitionLog
from lab.engine.storage.txn_index import (
    ENTRY_SIZE,
    AbortedTxn,
    TransactionIndex,
    decode_entries,
)

SMALL = LogConfig(segment_bytes=1024, index_interval_bytes=100)


def txn(pid: int, epoch: int, seq: int, n: int = 1) -> bytes:
    return build_batch(
        [(None, f"{pid}-{seq + i}".encode()) for i in range(n)],
        timestamp_ms=0,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        is_transactional=True,
    )


def marker(pid: int, epoch: int, *, commit: bool, coordinator_epoch: int = 0) -> Marker:
    return Marker(producer_id=pid, producer_epoch=epoch, commit=commit, coordinator_epoch=coordinator_epoch)


def open_log(directory: Path) -> PartitionLog:
    return PartitionLog.open(directory, SMALL, now_ms=0)


def test_an_entry_is_kafkas_34_bytes() -> None:
    entry = AbortedTxn(producer_id=7, first_offset=10, last_offset=14, last_stable_offset=15)
    raw = entry.encode()
    assert len(raw) == ENTRY_SIZE == 34
    assert raw == (
        (0).to_bytes(2, "big")
        + (7).to_bytes(8, "big")
        + (10).to_bytes(8, "big")
        + (14).to_bytes(8, "big")
        + (15).to_bytes(8, "big")
    )
    assert decode_entries(raw * 2) == [entry, entry]


def test_the_index_collects_what_a_fetch_overlaps_and_truncates(tmp_path: Path) -> None:
    index = TransactionIndex(tmp_path / "00000000000000000000.txnindex")
    assert not index.path.exists()  # made with its first entry, as Kafka's
    a = AbortedTxn(producer_id=1, first_offset=0, last_offset=4, last_stable_offset=5)
    b = AbortedTxn(producer_id=2, first_offset=6, last_offset=9, last_stable_offset=10)
    index.append(a)
    index.append(b)
    assert index.collect(5, 7) == [b]
    assert index.collect(0, 3) == [a]
    assert TransactionIndex(index.path).entries == [a, b]
    index.truncate_to(9)
    assert TransactionIndex(index.path).entries == [a]


def test_an_abort_marker_indexes_its_transaction_and_moves_the_lso(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    log.append_as_leader(txn(5, 0, 0, 2), leader_epoch=0, now_ms=0)
    log.append_as_leader(build_batch([(None, b"plain")], timestamp_ms=0), leader_epoch=0, now_ms=0)
    assert log.first_unstable_offset(high_watermark=3) == 0
    info = log.append_marker(marker(5, 0, commit=False), leader_epoch=0, now_ms=0)
    assert info.first_offset == 3
    assert log.aborted_transactions() == [
        AbortedTxn(producer_id=5, first_offset=0, last_offset=3, last_stable_offset=4)
    ]
    assert log.first_unstable_offset(high_watermark=3) == 0  # its marker is not replicated yet
    assert log.first_unstable_offset(high_watermark=4) is None
    assert log.collect_aborted_transactions(1, 4) == log.aborted_transactions()
    log.close()


def test_a_marker_from_an_older_epoch_or_coordinator_is_refused(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    log.append_as_leader(txn(5, 3, 0), leader_epoch=0, now_ms=0)
    log.append_marker(marker(5, 3, commit=True, coordinator_epoch=4), leader_epoch=0, now_ms=0)
    with pytest.raises(InvalidProducerEpoch):
        log.append_marker(marker(5, 2, commit=True, coordinator_epoch=4), leader_epoch=0, now_ms=0)
    with pytest.raises(TransactionCoordinatorFenced):
        log.append_marker(marker(5, 3, commit=True, coordinator_epoch=3), leader_epoch=0, now_ms=0)
    log.close()


def test_followers_learn_the_same_index_from_the_batches(tmp_path: Path) -> None:
    leader = open_log(tmp_path / "a" / "t-0")
    leader.append_as_leader(txn(5, 0, 0, 2), leader_epoch=0, now_ms=0)
    leader.append_marker(marker(5, 0, commit=False), leader_epoch=0, now_ms=0)
    follower = open_log(tmp_path / "b" / "t-0")
    follower.append_as_follower(leader.read(0, 1 << 20).records, now_ms=0)
    assert follower.aborted_transactions() == leader.aborted_transactions()
    assert follower.producer_state.ongoing == {}
    leader.close()
    follower.close()


def test_the_index_is_rebuilt_from_the_log_when_its_files_are_gone(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    log = open_log(directory)
    for round_ in range(6):  # enough to roll a few segments
        log.append_as_leader(txn(5, 0, round_ * 3, 3), leader_epoch=0, now_ms=0)
        log.append_marker(marker(5, 0, commit=round_ % 2 == 0), leader_epoch=0, now_ms=0)
    log.append_as_leader(txn(5, 0, 18, 1), leader_epoch=0, now_ms=0)  # left open
    before = log.aborted_transactions()
    assert len(before) == 3
    assert len(log.segments) > 1
    log.crash(lose_unflushed=False)
    for path in list(directory.iterdir()):
        if path.suffix in (".txnindex", ".snapshot"):
            path.unlink()
    again = open_log(directory)
    assert again.aborted_transactions() == before
    assert again.producer_state.ongoing == {5: again.log_end_offset - 1}
    again.close()


def test_truncation_drops_the_entries_and_reopens_the_transaction(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    log.append_as_leader(txn(5, 0, 0, 2), leader_epoch=0, now_ms=0)
    log.append_marker(marker(5, 0, commit=False), leader_epoch=0, now_ms=0)
    log.truncate_to(2)  # the marker goes
    assert log.aborted_transactions() == []
    assert log.producer_state.ongoing == {5: 0}
    log.close()
