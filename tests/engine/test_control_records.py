"""Commit and abort markers: control batches as Kafka writes them."""

from __future__ import annotations

import struct

from lab.engine.control_records import Marker, decode_marker, encode_marker
from lab.engine.records import HEADER_STRUCT, check_batch, decode_records


def test_a_commit_marker_is_kafkas_control_batch_byte_for_byte() -> None:
    marker = Marker(producer_id=4000, producer_epoch=3, commit=True, coordinator_epoch=7)
    batch = encode_marker(marker, base_offset=42, timestamp_ms=1000, partition_leader_epoch=2)
    fields = check_batch(batch)  # the CRC holds
    (
        base,
        _length,
        leader_epoch,
        magic,
        _crc,
        attributes,
        last_delta,
        base_ts,
        max_ts,
        pid,
        epoch,
        seq,
        count,
    ) = HEADER_STRUCT.unpack_from(batch)
    assert (base, leader_epoch, magic, last_delta, base_ts, max_ts) == (42, 2, 2, 0, 1000, 1000)
    assert attributes == 0x30  # bit 5 control, bit 4 transactional, no compression, CreateTime
    assert (pid, epoch, seq, count) == (4000, 3, -1, 1)
    (record,) = decode_records(batch)
    assert record.key == struct.pack(">hh", 0, 1)  # ControlRecordType: version 0, COMMIT
    assert record.value == struct.pack(">hi", 0, 7)  # EndTransactionMarker: version 0, coordinator epoch
    assert decode_marker(fields, batch) == marker


def test_an_abort_marker_has_type_0() -> None:
    marker = Marker(producer_id=1, producer_epoch=0, commit=False, coordinator_epoch=0)
    batch = encode_marker(marker, base_offset=0, timestamp_ms=0, partition_leader_epoch=0)
    (record,) = decode_records(batch)
    assert record.key == b"\x00\x00\x00\x00"
    assert decode_marker(check_batch(batch), batch).commit is False
