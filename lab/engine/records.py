"""RecordBatch v2 (magic 2): Kafka's own on-disk and wire format, byte for byte.

A batch is a 61-byte big-endian header followed by its records::

    baseOffset int64 | batchLength int32 | partitionLeaderEpoch int32 | magic int8 (2) | crc uint32 |
    attributes int16 | lastOffsetDelta int32 | baseTimestamp int64 | maxTimestamp int64 |
    producerId int64 | producerEpoch int16 | baseSequence int32 | recordCount int32 | records...

Attribute bit 6 (KIP-534) says ``baseTimestamp`` holds the batch's delete horizon: the log cleaner
sets it the first time it keeps a tombstone, and drops the batch's tombstones once it has passed.
Record timestamps stay ``baseTimestamp`` plus their delta, so they survive the change.

The CRC-32C covers everything from ``attributes`` to the end. ``baseOffset`` and
``partitionLeaderEpoch`` sit before it, so a leader assigns offsets by patching those two
fields (``patch_base_offset``) without re-checksumming: the log's hot path treats batches as
bytes and never builds a Python object per record. Records are decoded only where something
needs them (consumers, the log cleaner, ``offset_for_timestamp``).
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import crc32c

from lab.engine import compression as codecs
from lab.engine.errors import CorruptRecord, IllegalArgument

MAGIC = 2
LOG_OVERHEAD = 12  # baseOffset + batchLength: the bytes that batchLength does not count
HEADER_SIZE = 61
MIN_BATCH_LENGTH = HEADER_SIZE - LOG_OVERHEAD
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1
NO_TIMESTAMP = -1

# Field positions inside a batch, as in Kafka's DefaultRecordBatch.
BASE_OFFSET_POS = 0
LENGTH_POS = 8
PARTITION_LEADER_EPOCH_POS = 12
MAGIC_POS = 16
CRC_POS = 17
ATTRIBUTES_POS = 21
LAST_OFFSET_DELTA_POS = 23
BASE_TIMESTAMP_POS = 27
MAX_TIMESTAMP_POS = 35
PRODUCER_ID_POS = 43
PRODUCER_EPOCH_POS = 51
BASE_SEQUENCE_POS = 53
RECORDS_COUNT_POS = 57

COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_MASK = 0x10
CONTROL_MASK = 0x20
DELETE_HORIZON_MASK = 0x40  # KIP-534: baseTimestamp is the delete horizon

HEADER_STRUCT = struct.Struct(">qiibIhiqqqhii")  # the 13 header fields, in order
_HEADER = HEADER_STRUCT
_LENGTH_AND_EPOCH = struct.Struct(">qii")  # baseOffset, batchLength, partitionLeaderEpoch
_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")
_INT32_MAX = 2**31 - 1


class Compression(enum.IntEnum):
    """Bits 0-2 of a batch's attributes (Kafka's CompressionType ids)."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


class TimestampType(enum.IntEnum):
    """Bit 3 of a batch's attributes."""

    CREATE_TIME = 0
    LOG_APPEND_TIME = 1


class Record(NamedTuple):
    """One decoded record, with its absolute offset and timestamp.

    A NamedTuple rather than a frozen dataclass: consumers make millions of them, and a tuple is
    made several times faster; it is just as immutable.
    """

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class SimpleRecord:
    """A record to write (Kafka's SimpleRecord): no offset yet; timestamp None means the batch's."""

    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()
    timestamp: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class BatchHeader:
    """The 61-byte header of a RecordBatch v2, field for field."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int

    @classmethod
    def from_fields(cls, fields: tuple[int, ...]) -> BatchHeader:
        (bo, bl, ple, magic, crc, attrs, lod, bts, mts, pid, pep, seq, count) = fields
        return cls(
            base_offset=bo,
            batch_length=bl,
            partition_leader_epoch=ple,
            magic=magic,
            crc=crc,
            attributes=attrs,
            last_offset_delta=lod,
            base_timestamp=bts,
            max_timestamp=mts,
            producer_id=pid,
            producer_epoch=pep,
            base_sequence=seq,
            record_count=count,
        )

    @property
    def compression(self) -> Compression:
        return _compression(self.attributes, self.base_offset)

    @property
    def timestamp_type(self) -> TimestampType:
        return (
            TimestampType.LOG_APPEND_TIME
            if self.attributes & TIMESTAMP_TYPE_MASK
            else TimestampType.CREATE_TIME
        )

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_MASK)

    @property
    def delete_horizon_ms(self) -> int | None:
        """KIP-534: when the cleaner may drop this batch's tombstones (None: not set yet)."""
        return self.base_timestamp if self.attributes & DELETE_HORIZON_MASK else None

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def size_in_bytes(self) -> int:
        return self.batch_length + LOG_OVERHEAD


def _compression(attributes: int, base_offset: int) -> Compression:
    codec = attributes & COMPRESSION_MASK
    try:
        return Compression(codec)
    except ValueError:
        raise CorruptRecord(f"batch at offset {base_offset}: unknown compression type id {codec}") from None


# --- reading headers and checking batches -----------------------------------------------------------


def read_header(buf: bytes | bytearray | memoryview, pos: int = 0) -> BatchHeader:
    """Parse the batch header at ``pos`` (no checks beyond "61 bytes are there")."""
    if len(buf) - pos < HEADER_SIZE:
        raise CorruptRecord(
            f"truncated batch header at position {pos}: {max(0, len(buf) - pos)} bytes, need {HEADER_SIZE}"
        )
    return BatchHeader.from_fields(_HEADER.unpack_from(buf, pos))


def check_batch(buf: bytes | bytearray | memoryview, pos: int = 0) -> tuple[int, ...]:
    """The header fields of the batch at ``pos`` as a tuple, after every check ``validate_batch`` makes.

    The log's hot path uses this form: one ``struct`` unpack and one CRC per batch, no objects.
    """
    remaining = len(buf) - pos
    if remaining < HEADER_SIZE:
        raise CorruptRecord(
            f"truncated batch at position {pos}: {max(0, remaining)} bytes, a header needs {HEADER_SIZE}"
        )
    fields = _HEADER.unpack_from(buf, pos)
    base_offset, length, magic = fields[0], fields[1], fields[3]
    if length < MIN_BATCH_LENGTH:
        raise CorruptRecord(
            f"batch at position {pos} (base offset {base_offset}): batch length {length} "
            f"is below the {MIN_BATCH_LENGTH}-byte minimum"
        )
    if magic != MAGIC:
        raise CorruptRecord(
            f"batch at position {pos} (base offset {base_offset}): magic byte {magic}, "
            f"expected {MAGIC} (only RecordBatch v2 is supported)"
        )
    end = pos + LOG_OVERHEAD + length
    if end > len(buf):
        raise CorruptRecord(
            f"truncated batch at position {pos} (base offset {base_offset}): "
            f"it declares {LOG_OVERHEAD + length} bytes, only {remaining} are there"
        )
    stored = fields[4]
    computed = crc32c.crc32c(memoryview(buf)[pos + ATTRIBUTES_POS : end])
    if stored != computed:
        raise CorruptRecord(
            f"batch at position {pos} (base offset {base_offset}): CRC-32C mismatch, "
            f"stored {stored:#010x}, computed {computed:#010x}"
        )
    last_offset_delta, count = fields[6], fields[12]
    if last_offset_delta < 0 or count < 0 or count > last_offset_delta + 1:
        raise CorruptRecord(
            f"batch at position {pos} (base offset {base_offset}): record count {count} does not fit "
            f"last offset delta {last_offset_delta}"
        )
    if fields[5] & COMPRESSION_MASK > Compression.ZSTD:
        _compression(fields[5], base_offset)
    return fields


def validate_batch(buf: bytes | bytearray | memoryview, pos: int = 0) -> BatchHeader:
    """Check the batch at ``pos``: length sane, magic 2, CRC-32C matches, record count fits the offsets.

    Raises CorruptRecord saying which check failed and where.
    """
    return BatchHeader.from_fields(check_batch(buf, pos))


def iter_headers(buf: bytes | bytearray | memoryview) -> Iterator[tuple[int, BatchHeader]]:
    """(position, header) for each batch of a buffer of concatenated batches; CorruptRecord on a torn one.

    Headers only: use ``validate_batch`` to check CRCs.
    """
    pos, size = 0, len(buf)
    while pos < size:
        header = read_header(buf, pos)
        if header.batch_length < MIN_BATCH_LENGTH or pos + header.size_in_bytes > size:
            raise CorruptRecord(
                f"truncated batch at position {pos} (base offset {header.base_offset}): "
                f"batch length {header.batch_length}, {size - pos} bytes remain"
            )
        yield pos, header
        pos += header.size_in_bytes


def patch_base_offset(
    buf: bytearray | memoryview, pos: int, base_offset: int, partition_leader_epoch: int
) -> None:
    """Set baseOffset and partitionLeaderEpoch in place: both lie outside the CRC, which stays valid."""
    _INT64.pack_into(buf, pos + BASE_OFFSET_POS, base_offset)
    _INT32.pack_into(buf, pos + PARTITION_LEADER_EPOCH_POS, partition_leader_epoch)


# --- varints ---------------------------------------------------------------------------------------


def _write_varint(out: bytearray, value: int) -> None:
    """Zig-zag then base-128, as Kafka's ByteUtils.writeVarint / writeVarlong."""
    v = (value << 1) ^ (value >> 63)
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    b = data[pos]
    pos += 1
    if b < 0x80:
        return (b >> 1) ^ -(b & 1), pos
    result, shift = b & 0x7F, 7
    while True:
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7
        if shift > 63:
            raise ValueError("varint longer than 10 bytes")


# --- encoding --------------------------------------------------------------------------------------


def _varint_bytes(value: int) -> bytes:
    out = bytearray()
    _write_varint(out, value)
    return bytes(out)


# Zig-zag varints of 0..4095, the lengths and deltas nearly every record has, and their sizes:
# a lookup is several times faster than the loop.
_SMALL = 4096
_SMALL_VARINTS = tuple(_varint_bytes(v) for v in range(_SMALL))
_SMALL_SIZES = bytes(len(b) for b in _SMALL_VARINTS)  # indexing gives the size as an int


def _varint(value: int) -> bytes:
    return _SMALL_VARINTS[value] if 0 <= value < _SMALL else _varint_bytes(value)


def varint_size(value: int) -> int:
    """The bytes ``value`` takes as a zig-zag varint."""
    if 0 <= value < _SMALL:
        return _SMALL_SIZES[value]
    v = (value << 1) ^ (value >> 63)
    return max(1, (v.bit_length() + 6) // 7)


def record_size(
    offset_delta: int,
    timestamp_delta: int,
    key: bytes | None,
    value: bytes | None,
    headers: Sequence[tuple[str, bytes | None]] = (),
) -> int:
    """The bytes one record takes in a batch, its length prefix included (Kafka's DefaultRecord.sizeInBytes)."""
    body = (
        2  # attributes, and the header count when there are none
        + varint_size(timestamp_delta)
        + varint_size(offset_delta)
        + (1 if key is None else varint_size(len(key)) + len(key))
        + (1 if value is None else varint_size(len(value)) + len(value))
    )
    if headers:
        body += len(_encode_headers(headers)) - 1
    return varint_size(body) + body


def _encode_record(
    out: bytearray,
    offset_delta: int,
    timestamp_delta: int,
    key: bytes | None,
    value: bytes | None,
    headers: Sequence[tuple[str, bytes | None]],
) -> int:
    """Append one record to ``out``; the bytes it took."""
    varint = _varint
    body = b"".join(
        (
            b"\x00",  # attributes: unused, always 0
            varint(timestamp_delta),
            varint(offset_delta),
            b"\x01" if key is None else varint(len(key)),  # zig-zag(-1): null
            key or b"",
            b"\x01" if value is None else varint(len(value)),
            value or b"",
            _encode_headers(headers) if headers else b"\x00",
        )
    )
    length = _varint(len(body))
    out += length
    out += body
    return len(length) + len(body)


# The record heads (everything before the value) of batches whose records have no key, no header,
# the batch's own timestamp and values of one length: what a producer sending alike records builds
# all day. Per value length, the heads for offset deltas 0, 1, 2...; each after the first starts
# with the previous record's header count (0), so the records are heads and values interleaved.
_UNIFORM_HEADS: dict[int, list[bytes]] = {}
_UNIFORM_LENGTHS = 64  # value lengths kept (a bound: lengths are whatever people send)


def _uniform_heads(value_length: int, count: int) -> list[bytes]:
    heads = _UNIFORM_HEADS.get(value_length)
    if heads is None:
        if len(_UNIFORM_HEADS) >= _UNIFORM_LENGTHS:
            _UNIFORM_HEADS.clear()
        heads = _UNIFORM_HEADS[value_length] = []
    if len(heads) < count:
        small = _SMALL_VARINTS
        value_part = _varint(value_length)
        for delta in range(len(heads), count):
            rest = b"\x00\x00" + _varint(delta) + b"\x01" + value_part  # attributes, timestamp delta 0
            body_length = len(rest) + value_length + 1
            head = (small[body_length] if body_length < _SMALL else _varint(body_length)) + rest
            heads.append(head if delta == 0 else b"\x00" + head)
    return heads


def encode_records(
    keys: Sequence[bytes | None] | None,
    values: Sequence[bytes | None],
    timestamps: Sequence[int],
    headers: Sequence[Sequence[tuple[str, bytes | None]]] | None = None,
) -> bytes:
    """The records part of a batch, at offset deltas 0, 1, 2... and timestamps relative to the first.

    ``keys`` None means no record has a key; ``headers`` None, that none has headers.
    """
    count = len(values)
    if (
        keys is None
        and headers is None
        and count
        and timestamps.count(timestamps[0]) == count
        and None not in values
    ):
        value_length = len(values[0])  # type: ignore[arg-type]
        if len(set(map(len, values))) == 1:  # type: ignore[arg-type]
            parts: list[bytes | None] = [None] * (2 * count + 1)
            parts[0:-1:2] = _uniform_heads(value_length, count)[:count]
            parts[1::2] = values
            parts[-1] = b"\x00"  # the last record's header count
            return b"".join(parts)  # type: ignore[arg-type]
    body = bytearray()
    base = timestamps[0] if count else 0
    for i in range(count):
        _encode_record(
            body,
            i,
            timestamps[i] - base,
            None if keys is None else keys[i],
            values[i],
            () if headers is None else headers[i],
        )
    return bytes(body)


def _encode_headers(headers: Sequence[tuple[str, bytes | None]]) -> bytes:
    parts = [_varint(len(headers))]
    for header_key, header_value in headers:
        encoded = header_key.encode()
        parts += (_varint(len(encoded)), encoded)
        parts += (b"\x01",) if header_value is None else (_varint(len(header_value)), header_value)
    return b"".join(parts)


def _assemble(
    body: bytes | bytearray,
    *,
    base_offset: int,
    last_offset_delta: int,
    record_count: int,
    base_timestamp: int,
    max_timestamp: int,
    compression: Compression,
    producer_id: int,
    producer_epoch: int,
    base_sequence: int,
    partition_leader_epoch: int,
    is_transactional: bool,
    is_control: bool = False,
    timestamp_type: TimestampType = TimestampType.CREATE_TIME,
    has_delete_horizon: bool = False,
) -> bytes:
    payload: bytes | bytearray = (
        body if compression == Compression.NONE else codecs.compress(compression, body)
    )
    attributes = (
        int(compression)
        | (TIMESTAMP_TYPE_MASK if timestamp_type == TimestampType.LOG_APPEND_TIME else 0)
        | (TRANSACTIONAL_MASK if is_transactional else 0)
        | (CONTROL_MASK if is_control else 0)
        | (DELETE_HORIZON_MASK if has_delete_horizon else 0)
    )
    header = bytearray(
        _HEADER.pack(
            base_offset,
            HEADER_SIZE - LOG_OVERHEAD + len(payload),
            partition_leader_epoch,
            MAGIC,
            0,
            attributes,
            last_offset_delta,
            base_timestamp,
            max_timestamp,
            producer_id,
            producer_epoch,
            base_sequence,
            record_count,
        )
    )
    crc = crc32c.crc32c(payload, crc32c.crc32c(memoryview(header)[ATTRIBUTES_POS:]))
    struct.pack_into(">I", header, CRC_POS, crc)
    return bytes(header + payload)


def encode_batch(
    records: Sequence[Record],
    *,
    base_offset: int | None = None,
    last_offset_delta: int | None = None,
    compression: Compression = Compression.NONE,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    is_transactional: bool = False,
    is_control: bool = False,
    delete_horizon_ms: int | None = None,
) -> bytes:
    """One batch holding ``records`` at their own offsets and timestamps (the log cleaner's writer).

    ``base_offset`` and ``last_offset_delta`` default to the records' first and last offsets; the
    cleaner passes the original batch's, so a rewritten batch keeps its offset range, as in Kafka.
    With ``delete_horizon_ms`` the base timestamp holds it (attribute bit 6) and every record's
    timestamp delta is taken from it, as Kafka's MemoryRecordsBuilder does.
    """
    if not records:
        raise IllegalArgument("a record batch needs at least one record")
    base = records[0].offset if base_offset is None else base_offset
    base_timestamp = records[0].timestamp if delete_horizon_ms is None else delete_horizon_ms
    body = bytearray()
    previous = base - 1
    for record in records:
        delta = record.offset - base
        if record.offset <= previous or delta > _INT32_MAX:
            raise IllegalArgument(
                f"record offsets must increase within a batch from {base}: got {record.offset}"
            )
        previous = record.offset
        _encode_record(
            body, delta, record.timestamp - base_timestamp, record.key, record.value, record.headers
        )
    last_delta = records[-1].offset - base if last_offset_delta is None else last_offset_delta
    if last_delta < records[-1].offset - base:
        raise IllegalArgument(
            f"last offset delta {last_delta} is below the last record's offset {records[-1].offset}"
        )
    return _assemble(
        body,
        base_offset=base,
        last_offset_delta=last_delta,
        record_count=len(records),
        base_timestamp=base_timestamp,
        max_timestamp=max(r.timestamp for r in records),
        compression=compression,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        partition_leader_epoch=partition_leader_epoch,
        is_transactional=is_transactional,
        is_control=is_control,
        has_delete_horizon=delete_horizon_ms is not None,
    )


def build_batch(
    records: Sequence[tuple[bytes | None, bytes | None] | SimpleRecord],
    *,
    base_offset: int = 0,
    timestamp_ms: int,
    compression: Compression = Compression.NONE,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    is_transactional: bool = False,
) -> bytes:
    """A batch of ``(key, value)`` pairs or ``SimpleRecord``s at consecutive offsets from ``base_offset``.

    Records without their own timestamp get ``timestamp_ms``.
    """
    builder = BatchBuilder(
        batch_size=_INT32_MAX,
        compression=compression,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        is_transactional=is_transactional,
        base_offset=base_offset,
        partition_leader_epoch=partition_leader_epoch,
    )
    for item in records:
        if isinstance(item, SimpleRecord):
            ts = timestamp_ms if item.timestamp is None else item.timestamp
            builder.append(item.key, item.value, item.headers, timestamp_ms=ts)
        else:
            builder.append(item[0], item[1], timestamp_ms=timestamp_ms)
    return builder.build()


class BatchBuilder:
    """Accumulates records for one batch, as a producer does up to ``batch.size`` bytes.

    ``append`` returns False (and adds nothing) when the record would take the batch past
    ``batch_size``; the first record always fits, however large, as in Kafka's accumulator.
    The size estimate is uncompressed, so a gzip batch comes out smaller than estimated.
    Records are kept as given and encoded once, by ``build``; the size is exact all along.
    """

    __slots__ = (
        "base_offset",
        "base_sequence",
        "batch_size",
        "compression",
        "headers",
        "is_transactional",
        "keys",
        "partition_leader_epoch",
        "producer_epoch",
        "producer_id",
        "size_in_bytes",
        "timestamps",
        "values",
    )

    def __init__(
        self,
        *,
        batch_size: int = 16384,
        compression: Compression = Compression.NONE,
        producer_id: int = NO_PRODUCER_ID,
        producer_epoch: int = NO_PRODUCER_EPOCH,
        base_sequence: int = NO_SEQUENCE,
        is_transactional: bool = False,
        base_offset: int = 0,
        partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    ) -> None:
        self.batch_size = batch_size
        self.compression = compression
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.base_sequence = base_sequence
        self.is_transactional = is_transactional
        self.base_offset = base_offset
        self.partition_leader_epoch = partition_leader_epoch
        self.size_in_bytes = HEADER_SIZE  # what build() would return now, uncompressed
        self.keys: list[bytes | None] | None = None  # None while no record has a key
        self.values: list[bytes | None] = []
        self.timestamps: list[int] = []
        self.headers: list[Sequence[tuple[str, bytes | None]]] | None = None  # None while none has

    @property
    def record_count(self) -> int:
        return len(self.values)

    @property
    def estimated_size_in_bytes(self) -> int:
        return self.size_in_bytes

    def append(
        self,
        key: bytes | None,
        value: bytes | None,
        headers: Sequence[tuple[str, bytes | None]] = (),
        *,
        timestamp_ms: int,
    ) -> bool:
        """Add a record if it fits; True when added."""
        return self.try_append(key, value, headers, timestamp_ms=timestamp_ms) > 0

    def try_append(
        self,
        key: bytes | None,
        value: bytes | None,
        headers: Sequence[tuple[str, bytes | None]] = (),
        *,
        timestamp_ms: int,
    ) -> int:
        """Add a record if it fits: how much the batch grew (the header too, for the first), else 0."""
        values = self.values
        count = len(values)
        delta = timestamp_ms - self.timestamps[0] if count else 0
        taken = record_size(count, delta, key, value, headers)
        if count and self.size_in_bytes + taken > self.batch_size:
            return 0
        self.size_in_bytes += taken
        if key is not None and self.keys is None:
            self.keys = [None] * count
        if self.keys is not None:
            self.keys.append(key)
        if headers and self.headers is None:
            self.headers = [()] * count
        if self.headers is not None:
            self.headers.append(headers)
        values.append(value)
        self.timestamps.append(timestamp_ms)
        return taken if count else taken + HEADER_SIZE

    def build(self) -> bytes:
        if not self.values:
            raise IllegalArgument("a record batch needs at least one record")
        timestamps = self.timestamps
        return _assemble(
            encode_records(self.keys, self.values, timestamps, self.headers),
            base_offset=self.base_offset,
            last_offset_delta=len(timestamps) - 1,
            record_count=len(timestamps),
            base_timestamp=timestamps[0],
            max_timestamp=max(timestamps),
            compression=self.compression,
            producer_id=self.producer_id,
            producer_epoch=self.producer_epoch,
            base_sequence=self.base_sequence,
            partition_leader_epoch=self.partition_leader_epoch,
            is_transactional=self.is_transactional,
        )


# --- decoding --------------------------------------------------------------------------------------


def batch_payload(buf: bytes | bytearray | memoryview, pos: int, header: BatchHeader) -> bytes:
    """The batch's record bytes, decompressed."""
    raw = bytes(memoryview(buf)[pos + HEADER_SIZE : pos + header.size_in_bytes])
    compression = header.compression
    if compression == Compression.NONE:
        return raw
    try:
        return codecs.decompress(compression, raw)
    except CorruptRecord as error:
        raise CorruptRecord(f"batch at offset {header.base_offset}: {error.message}") from error


def decode_records(buf: bytes | bytearray | memoryview, pos: int = 0) -> list[Record]:
    """Check the batch at ``pos`` (as ``validate_batch``) and decode its records, decompressing gzip."""
    return _decode_checked(buf, pos, validate_batch(buf, pos))


def _decode_checked(buf: bytes | bytearray | memoryview, pos: int, header: BatchHeader) -> list[Record]:
    data = batch_payload(buf, pos, header)
    log_append_time = header.max_timestamp if header.timestamp_type == TimestampType.LOG_APPEND_TIME else None
    try:
        return _decode_record_set(data, header, log_append_time)
    except (IndexError, ValueError, UnicodeDecodeError) as e:
        raise CorruptRecord(f"batch at offset {header.base_offset}: malformed records: {e}") from e


def _decode_record_set(data: bytes, header: BatchHeader, log_append_time: int | None) -> list[Record]:
    # The hot loop of every consumer. Varints of one or two bytes (nearly all of them: lengths
    # under 8 KiB, offset deltas under 8192) are decoded inline, the rest by _read_varint; each
    # record becomes one tuple-backed Record. Written out, not factored: a call per varint
    # would halve the speed.
    records: list[Record] = []
    append = records.append
    make = tuple.__new__
    read = _read_varint
    pos = 0
    size = len(data)
    base_offset = header.base_offset
    base_timestamp = header.base_timestamp
    last_delta = header.last_offset_delta
    for index in range(header.record_count):
        b = data[pos]
        if b < 0x80:
            length = (b >> 1) ^ -(b & 1)
            pos += 1
        elif data[pos + 1] < 0x80:
            b = (b & 0x7F) | (data[pos + 1] << 7)
            length = (b >> 1) ^ -(b & 1)
            pos += 2
        else:
            length, pos = read(data, pos)
        end = pos + length
        if length < 1 or end > size:
            raise ValueError(f"record {index} declares {length} bytes, {size - pos} remain")
        pos += 1  # record attributes
        b = data[pos]
        if b < 0x80:
            timestamp_delta = (b >> 1) ^ -(b & 1)
            pos += 1
        elif data[pos + 1] < 0x80:
            b = (b & 0x7F) | (data[pos + 1] << 7)
            timestamp_delta = (b >> 1) ^ -(b & 1)
            pos += 2
        else:
            timestamp_delta, pos = read(data, pos)
        b = data[pos]
        if b < 0x80:
            offset_delta = (b >> 1) ^ -(b & 1)
            pos += 1
        elif data[pos + 1] < 0x80:
            b = (b & 0x7F) | (data[pos + 1] << 7)
            offset_delta = (b >> 1) ^ -(b & 1)
            pos += 2
        else:
            offset_delta, pos = read(data, pos)
        b = data[pos]
        if b < 0x80:
            key_length = (b >> 1) ^ -(b & 1)
            pos += 1
        elif data[pos + 1] < 0x80:
            b = (b & 0x7F) | (data[pos + 1] << 7)
            key_length = (b >> 1) ^ -(b & 1)
            pos += 2
        else:
            key_length, pos = read(data, pos)
        if key_length < 0:
            key = None
        else:
            key = data[pos : pos + key_length]
            pos += key_length
        b = data[pos]
        if b < 0x80:
            value_length = (b >> 1) ^ -(b & 1)
            pos += 1
        elif data[pos + 1] < 0x80:
            b = (b & 0x7F) | (data[pos + 1] << 7)
            value_length = (b >> 1) ^ -(b & 1)
            pos += 2
        else:
            value_length, pos = read(data, pos)
        if value_length < 0:
            value = None
        else:
            value = data[pos : pos + value_length]
            pos += value_length
        if data[pos] == 0:  # no headers: zig-zag 0
            pos += 1
            headers: tuple[tuple[str, bytes | None], ...] = ()
        else:
            headers, pos = _read_headers(data, pos, index)
        if pos != end:
            raise ValueError(f"record {index} declares {length} bytes, its fields take {length + pos - end}")
        if offset_delta < 0 or offset_delta > last_delta:
            raise ValueError(f"record {index} has offset delta {offset_delta}, outside 0..{last_delta}")
        timestamp = base_timestamp + timestamp_delta if log_append_time is None else log_append_time
        append(make(Record, (base_offset + offset_delta, timestamp, key, value, headers)))
    if pos != size:
        raise ValueError(f"{size - pos} bytes left after {header.record_count} records")
    return records


def _read_headers(data: bytes, pos: int, index: int) -> tuple[tuple[tuple[str, bytes | None], ...], int]:
    header_count, pos = _read_varint(data, pos)
    headers: list[tuple[str, bytes | None]] = []
    for _ in range(header_count):
        hk_length, pos = _read_varint(data, pos)
        if hk_length < 0:
            raise ValueError(f"record {index} has a header with a null key")
        header_key = data[pos : pos + hk_length].decode()
        pos += hk_length
        hv_length, pos = _read_varint(data, pos)
        header_value = None if hv_length < 0 else data[pos : pos + hv_length]
        pos += max(hv_length, 0)
        headers.append((header_key, header_value))
    return tuple(headers), pos


def iter_batches(buf: bytes | bytearray | memoryview) -> Iterator[tuple[int, BatchHeader]]:
    """Like ``iter_headers`` but checks each batch's CRC too."""
    pos, size = 0, len(buf)
    while pos < size:
        header = validate_batch(buf, pos)
        yield pos, header
        pos += header.size_in_bytes


def iter_records(buf: bytes | bytearray | memoryview) -> Iterator[Record]:
    """Every record of a buffer of concatenated batches, in order (each batch checked once)."""
    pos, size = 0, len(buf)
    while pos < size:
        header = validate_batch(buf, pos)
        yield from _decode_checked(buf, pos, header)
        pos += header.size_in_bytes
