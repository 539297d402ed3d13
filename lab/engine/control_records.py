"""Control batches: the commit and abort markers a transaction's end writes to each of its partitions.

A control batch is a RecordBatch v2 with the control bit (attributes bit 5) and the transactional
bit (bit 4) set, the producer's id and epoch, no sequence (-1), and one record: its key is Kafka's
ControlRecordType (version int16 = 0, type int16: 0 ABORT, 1 COMMIT), its value the
EndTransactionMarker (version int16 = 0, coordinatorEpoch int32). Consumers never hand control
records to the application; read_committed ones use abort markers to stop dropping a producer's
records.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from lab.engine.records import (
    CONTROL_MASK,
    NO_SEQUENCE,
    BatchHeader,
    Record,
    decode_records,
    encode_batch,
)

ABORT = 0
COMMIT = 1
CONTROL_KEY_VERSION = 0
MARKER_VERSION = 0
_KEY = struct.Struct(">hh")
_VALUE = struct.Struct(">hi")


@dataclass(frozen=True, slots=True, kw_only=True)
class Marker:
    """What one control batch says."""

    producer_id: int
    producer_epoch: int
    commit: bool
    coordinator_epoch: int


def marker_key(commit: bool) -> bytes:
    return _KEY.pack(CONTROL_KEY_VERSION, COMMIT if commit else ABORT)


def marker_value(coordinator_epoch: int) -> bytes:
    return _VALUE.pack(MARKER_VERSION, coordinator_epoch)


def encode_marker(
    marker: Marker, *, base_offset: int, timestamp_ms: int, partition_leader_epoch: int
) -> bytes:
    """The control batch of one marker, byte for byte as Kafka's MemoryRecords.withEndTransactionMarker."""
    record = Record(
        offset=base_offset,
        timestamp=timestamp_ms,
        key=marker_key(marker.commit),
        value=marker_value(marker.coordinator_epoch),
        headers=(),
    )
    return encode_batch(
        [record],
        producer_id=marker.producer_id,
        producer_epoch=marker.producer_epoch,
        base_sequence=NO_SEQUENCE,
        partition_leader_epoch=partition_leader_epoch,
        is_transactional=True,
        is_control=True,
    )


class NotAMarker(ValueError):
    """A control batch whose record is not a commit or abort marker Kafka would write."""


def decode_marker(fields: tuple[int, ...], batch: bytes | memoryview) -> Marker:
    """The marker of a control batch, from its header fields and bytes."""
    if not fields[5] & CONTROL_MASK:
        raise NotAMarker("not a control batch")
    records = decode_records(batch)
    if len(records) != 1 or records[0].key is None or len(records[0].key) < _KEY.size:
        raise NotAMarker("a control batch holds one record with a 4-byte key")
    _version, kind = _KEY.unpack_from(records[0].key)
    if kind not in (ABORT, COMMIT):
        raise NotAMarker(f"control record type {kind} is neither ABORT (0) nor COMMIT (1)")
    value = records[0].value or b""
    coordinator_epoch = _VALUE.unpack_from(value)[1] if len(value) >= _VALUE.size else -1
    return Marker(
        producer_id=fields[9],
        producer_epoch=fields[10],
        commit=kind == COMMIT,
        coordinator_epoch=coordinator_epoch,
    )


def marker_of(header: BatchHeader, batch: bytes | memoryview) -> Marker | None:
    """The marker of a control batch read with its header; None for a batch that is not one."""
    if not header.is_control:
        return None
    fields = (0, 0, 0, 0, 0, CONTROL_MASK, 0, 0, 0, header.producer_id, header.producer_epoch)
    try:
        return decode_marker(fields, batch)
    except NotAMarker:
        return None
