"""RecordBatch v2, byte for byte: interoperability with kafka-python, round trips, corruption."""

from __future__ import annotations

import struct

import cramjam
import crc32c
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from lab.engine.errors import CorruptRecord, IllegalArgument
from lab.engine.records import (
    HEADER_SIZE,
    BatchBuilder,
    Compression,
    Record,
    SimpleRecord,
    TimestampType,
    build_batch,
    decode_records,
    encode_batch,
    iter_batches,
    iter_headers,
    iter_records,
    patch_base_offset,
    read_header,
    validate_batch,
)

# --- kafka-python writes, we read ------------------------------------------------------------------

KAFKA_PYTHON_RECORDS = [
    (1_700_000_000_000, b"key-0", b"value-0" * 20, [("trace", b"abc"), ("empty", b"")]),
    (1_700_000_000_005, None, b"no key" * 20, []),
    (1_699_999_999_990, b"tombstone", None, []),  # an earlier timestamp: a negative delta
    (1_700_000_000_020, b"", b"", [("null-header", None)]),
]


def kafka_python_batch(compression: int, *, base_offset: int = 0) -> bytes:
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=compression,
        is_transactional=0,
        producer_id=1234,
        producer_epoch=5,
        base_sequence=42,
        batch_size=1 << 20,
    )
    for i, (ts, key, value, headers) in enumerate(KAFKA_PYTHON_RECORDS):
        assert builder.append(i, ts, key, value, headers) is not None
    buf = builder.build()
    struct.pack_into(">q", buf, 0, base_offset)  # as a broker would patch it
    return bytes(buf)


@pytest.mark.parametrize("compression", [Compression.NONE, Compression.GZIP])
def test_decodes_what_kafka_python_wrote(compression: Compression) -> None:
    buf = kafka_python_batch(int(compression), base_offset=100)
    header = validate_batch(buf)
    assert header.compression == compression
    assert header.magic == 2
    assert header.base_offset == 100
    assert header.record_count == 4
    assert header.last_offset_delta == 3
    assert (header.last_offset, header.next_offset) == (103, 104)
    assert header.producer_id == 1234
    assert header.producer_epoch == 5
    assert header.base_sequence == 42
    assert header.base_timestamp == 1_700_000_000_000
    assert header.max_timestamp == 1_700_000_000_020
    assert header.size_in_bytes == len(buf)
    assert header.timestamp_type == TimestampType.CREATE_TIME
    assert not header.is_transactional
    assert not header.is_control
    records = decode_records(buf)
    assert [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in records] == [
        (100 + i, ts, key, value, headers) for i, (ts, key, value, headers) in enumerate(KAFKA_PYTHON_RECORDS)
    ]


# --- we write, kafka-python reads -------------------------------------------------------------------


@pytest.mark.parametrize("compression", [Compression.NONE, Compression.GZIP])
def test_kafka_python_decodes_what_we_wrote(compression: Compression) -> None:
    records = [
        SimpleRecord(key=b"k1", value=b"v1" * 50, headers=(("h", b"1"), ("n", None)), timestamp=5000),
        SimpleRecord(key=None, value=b"v2" * 50, timestamp=4990),
        SimpleRecord(key=b"k3", value=None),
    ]
    buf = build_batch(
        records,
        base_offset=7,
        timestamp_ms=5010,
        compression=compression,
        producer_id=99,
        producer_epoch=3,
        base_sequence=11,
        partition_leader_epoch=4,
        is_transactional=True,
    )
    theirs = DefaultRecordBatch(buf)
    assert theirs.validate_crc()
    assert theirs.magic == 2
    assert theirs.base_offset == 7
    assert theirs.compression_type == int(compression)
    assert theirs.leader_epoch == 4
    assert theirs.producer_id == 99
    assert theirs.producer_epoch == 3
    assert theirs.base_sequence == 11
    assert theirs.is_transactional
    assert not theirs.is_control_batch
    assert theirs.last_offset_delta == 2
    assert theirs.first_timestamp == 5000
    assert theirs.max_timestamp == 5010
    assert theirs.records_count == 3
    assert theirs.size_in_bytes == len(buf)
    decoded = [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in theirs]
    assert decoded == [
        (7, 5000, b"k1", b"v1" * 50, [("h", b"1"), ("n", None)]),
        (8, 4990, None, b"v2" * 50, []),
        (9, 5010, b"k3", None, []),
    ]


def test_gzip_batch_is_really_compressed() -> None:
    plain = build_batch([(b"k", b"a" * 1000)] * 10, timestamp_ms=0)
    gzipped = build_batch([(b"k", b"a" * 1000)] * 10, timestamp_ms=0, compression=Compression.GZIP)
    assert len(gzipped) < len(plain) / 10
    assert read_header(gzipped).compression == Compression.GZIP
    assert [r.value for r in decode_records(gzipped)] == [b"a" * 1000] * 10


def test_header_layout_is_kafkas() -> None:
    buf = build_batch(
        [(b"k", b"v")], base_offset=0x0102030405060708, timestamp_ms=9, partition_leader_epoch=3
    )
    assert len(buf) - HEADER_SIZE > 0
    base_offset, length, epoch, magic, crc = struct.unpack_from(">qiibI", buf, 0)
    assert base_offset == 0x0102030405060708
    assert length == len(buf) - 12
    assert epoch == 3
    assert magic == 2
    assert crc == crc32c.crc32c(buf[21:])


# --- offsets are patched outside the CRC ------------------------------------------------------------


def test_patch_base_offset_keeps_the_crc_valid() -> None:
    buf = bytearray(build_batch([(b"a", b"1"), (b"b", b"2")], timestamp_ms=0))
    crc_before = read_header(buf).crc
    patch_base_offset(buf, 0, 1000, 7)
    header = validate_batch(buf)
    assert (header.base_offset, header.partition_leader_epoch, header.crc) == (1000, 7, crc_before)
    assert [r.offset for r in decode_records(buf)] == [1000, 1001]


def test_iterating_concatenated_batches() -> None:
    one = build_batch([(b"a", b"1"), (b"b", b"2")], base_offset=0, timestamp_ms=0)
    two = build_batch([(b"c", b"3")], base_offset=2, timestamp_ms=0, compression=Compression.GZIP)
    buf = one + two
    assert [(pos, h.base_offset) for pos, h in iter_headers(buf)] == [(0, 0), (len(one), 2)]
    assert [(pos, h.base_offset) for pos, h in iter_batches(buf)] == [(0, 0), (len(one), 2)]
    assert [(r.offset, r.key) for r in iter_records(buf)] == [(0, b"a"), (1, b"b"), (2, b"c")]
    with pytest.raises(CorruptRecord, match="truncated"):
        list(iter_headers(buf[:-1]))


# --- the producer's batch builder -------------------------------------------------------------------


def test_batch_builder_stops_at_batch_size_but_always_takes_one_record() -> None:
    builder = BatchBuilder(batch_size=200)
    assert builder.append(b"big", b"x" * 500, timestamp_ms=1)  # the first record always fits
    assert not builder.append(b"k", b"y", timestamp_ms=2)
    assert builder.record_count == 1
    assert builder.estimated_size_in_bytes == len(builder.build())

    builder = BatchBuilder(batch_size=200)
    added = 0
    while builder.append(b"k", b"v" * 10, (("h", b"1"),), timestamp_ms=100 + added):
        added += 1
    batch = builder.build()
    assert len(batch) <= 200
    assert added == builder.record_count == read_header(batch).record_count
    assert [r.timestamp for r in decode_records(batch)] == [100 + i for i in range(added)]


def test_try_append_says_how_much_the_batch_grew_and_refusing_leaves_it_whole() -> None:
    builder = BatchBuilder(batch_size=300)
    first = builder.try_append(None, b"x" * 100, timestamp_ms=5)
    assert first == len(builder.build())  # the header came with the first record
    second = builder.try_append(b"key", b"y" * 100, timestamp_ms=4)  # an older timestamp: a negative delta
    assert second > 0
    assert builder.size_in_bytes == first + second == len(builder.build())
    assert builder.try_append(None, b"z" * 100, timestamp_ms=6) == 0  # would pass 300 bytes
    batch = builder.build()
    assert len(batch) == first + second
    assert [(r.key, r.value, r.timestamp) for r in decode_records(batch)] == [
        (None, b"x" * 100, 5),
        (b"key", b"y" * 100, 4),
    ]


def test_records_past_the_varint_table_encode_as_kafka_reads_them() -> None:
    big = b"v" * 5000  # a length beyond the producer's table of small varints
    builder = BatchBuilder(batch_size=1 << 20)
    for i in range(5000):  # offset deltas past the table too
        builder.append(b"k" if i % 2 else None, big if i == 4999 else b"s", timestamp_ms=10 + i)
    records = decode_records(builder.build())
    assert len(records) == 5000
    assert records[-1].value == big
    assert records[-1].timestamp == 10 + 4999
    assert records[1].key == b"k"


@pytest.mark.parametrize("length", [0, 1, 55, 56, 63, 64, 100, 4090, 5000])
def test_alike_records_are_encoded_in_bulk_as_kafka_python_reads_them(length: int) -> None:
    # No key, no header, one timestamp, values of one length: the producer's common batch, whose
    # record heads come from a table. Past offset delta 63 the delta takes two bytes.
    values = [bytes([i % 256]) * length for i in range(200)]
    builder = BatchBuilder(batch_size=1 << 22)
    for value in values:
        assert builder.try_append(None, value, timestamp_ms=1_700_000_000_000) > 0
    batch = builder.build()
    assert len(batch) == builder.size_in_bytes
    theirs = DefaultRecordBatch(bytearray(batch))
    assert theirs.validate_crc()
    decoded = list(theirs)
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in decoded] == [
        (i, 1_700_000_000_000, None, value, []) for i, value in enumerate(values)
    ]


def test_a_batch_that_is_not_all_alike_is_encoded_record_by_record() -> None:
    builder = BatchBuilder(batch_size=1 << 20)
    builder.append(None, b"a" * 10, timestamp_ms=5)
    builder.append(None, b"b" * 10, timestamp_ms=7)  # another timestamp
    builder.append(None, b"c" * 11, timestamp_ms=7)  # another length
    builder.append(None, None, timestamp_ms=7)  # a tombstone
    batch = builder.build()
    assert len(batch) == builder.size_in_bytes
    assert [(r.offset, r.timestamp, r.value) for r in decode_records(batch)] == [
        (0, 5, b"a" * 10),
        (1, 7, b"b" * 10),
        (2, 7, b"c" * 11),
        (3, 7, None),
    ]


def test_empty_batches_are_refused() -> None:
    with pytest.raises(IllegalArgument):
        BatchBuilder().build()
    with pytest.raises(IllegalArgument):
        encode_batch([])


@pytest.mark.parametrize("codec", list(Compression))
def test_every_codec_round_trips(codec: Compression) -> None:
    pairs = [(b"k%d" % i, b"value %d " % i * 20) for i in range(50)]
    batch = build_batch(pairs, timestamp_ms=7, compression=codec)
    assert validate_batch(batch).compression == codec
    assert [(r.key, r.value) for r in decode_records(batch)] == pairs
    if codec != Compression.NONE:
        assert len(batch) < len(build_batch(pairs, timestamp_ms=7))


def test_encode_batch_keeps_given_offsets_and_range() -> None:
    records = [
        Record(offset=10, timestamp=5, key=b"a", value=b"1"),
        Record(offset=13, timestamp=3, key=b"b", value=None, headers=(("h", b"x"),)),
    ]
    buf = encode_batch(records, base_offset=9, last_offset_delta=6)
    header = validate_batch(buf)
    assert (header.base_offset, header.last_offset, header.record_count) == (9, 15, 2)
    assert (header.base_timestamp, header.max_timestamp) == (5, 5)
    assert decode_records(buf) == records
    with pytest.raises(IllegalArgument):
        encode_batch(list(reversed(records)))


def _recompress(batch: bytes, codec: Compression, payload: bytes) -> bytes:
    """The batch with its records replaced by ``payload`` under ``codec``, checksummed again."""
    buf = bytearray(batch[:HEADER_SIZE]) + payload
    struct.pack_into(">i", buf, 8, len(buf) - 12)
    struct.pack_into(">h", buf, 21, int(codec))
    struct.pack_into(">I", buf, 17, crc32c.crc32c(bytes(buf[21:])))
    return bytes(buf)


def test_snappy_reads_the_java_clients_framing_and_librdkafkas_raw_block() -> None:
    plain = build_batch([(b"k", b"v" * 300)], timestamp_ms=0)
    body = plain[HEADER_SIZE:]
    raw_block = bytes(cramjam.snappy.compress_raw(body))
    xerial = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1) + struct.pack(">i", len(raw_block)) + raw_block
    for payload in (raw_block, xerial):
        assert decode_records(_recompress(plain, Compression.SNAPPY, payload))[0].value == b"v" * 300


def test_a_payload_that_does_not_decompress_is_a_corrupt_message() -> None:
    plain = build_batch([(b"k", b"v")], timestamp_ms=0)
    for codec in (Compression.GZIP, Compression.SNAPPY, Compression.LZ4, Compression.ZSTD):
        with pytest.raises(CorruptRecord, match="does not decompress") as raised:
            decode_records(_recompress(plain, codec, b"\x00garbage that is no codec's output"))
        assert raised.value.name == "CORRUPT_MESSAGE"


# --- corruption -------------------------------------------------------------------------------------


def good_batch() -> bytes:
    return build_batch([(b"key", b"value"), (None, b"other")], base_offset=5, timestamp_ms=1000)


@pytest.mark.parametrize("byte", [21, 25, 40, 58, HEADER_SIZE, -1])
@pytest.mark.parametrize("bit", [0, 7])
def test_a_flipped_bit_inside_the_crc_is_caught(byte: int, bit: int) -> None:
    buf = bytearray(good_batch())
    buf[byte] ^= 1 << bit
    with pytest.raises(CorruptRecord, match="CRC-32C mismatch"):
        validate_batch(buf)


def test_base_offset_and_leader_epoch_are_outside_the_crc() -> None:
    buf = bytearray(good_batch())
    buf[7] ^= 1  # base offset 5 -> 4
    buf[15] ^= 1  # partition leader epoch -1 -> -2
    header = validate_batch(buf)
    assert (header.base_offset, header.partition_leader_epoch) == (4, -2)


def test_truncated_batches_are_corrupt() -> None:
    buf = good_batch()
    with pytest.raises(CorruptRecord, match="truncated"):
        validate_batch(buf[:30])
    with pytest.raises(CorruptRecord, match="only"):
        validate_batch(buf[:-1])
    with pytest.raises(CorruptRecord, match="truncated"):
        read_header(buf[:60])


def test_wrong_magic_is_corrupt() -> None:
    buf = bytearray(good_batch())
    buf[16] = 1
    with pytest.raises(CorruptRecord, match="magic byte 1"):
        validate_batch(buf)


def test_short_length_and_inconsistent_counts_are_corrupt() -> None:
    buf = bytearray(good_batch())
    struct.pack_into(">i", buf, 8, 10)
    with pytest.raises(CorruptRecord, match="minimum"):
        validate_batch(buf)
    buf = bytearray(good_batch())
    struct.pack_into(">i", buf, 57, 5)  # record count 5 with offsets 5..6
    struct.pack_into(">I", buf, 17, crc32c.crc32c(bytes(buf[21:])))
    with pytest.raises(CorruptRecord, match="record count 5"):
        validate_batch(buf)


def test_malformed_records_with_a_valid_crc_are_corrupt() -> None:
    buf = bytearray(good_batch())
    buf[HEADER_SIZE] = 0x7F  # the first record's length varint now says -64
    struct.pack_into(">I", buf, 17, crc32c.crc32c(bytes(buf[21:])))
    with pytest.raises(CorruptRecord, match="malformed records"):
        decode_records(buf)


def test_corrupt_message_names_position_and_offset() -> None:
    buf = bytearray(good_batch() + good_batch())
    buf[len(buf) - 1] ^= 0xFF
    with pytest.raises(CorruptRecord) as raised:
        list(iter_batches(buf))
    assert f"position {len(buf) // 2}" in str(raised.value)
    assert "base offset 5" in str(raised.value)
    assert str(raised.value).startswith("CORRUPT_MESSAGE")


# --- round trip property ------------------------------------------------------------------------------

keys = st.one_of(st.none(), st.binary(max_size=20))
header_lists = st.lists(
    st.tuples(st.text(max_size=8), st.one_of(st.none(), st.binary(max_size=8))), max_size=3
)
simple_records = st.builds(
    SimpleRecord,
    key=keys,
    value=keys,
    headers=header_lists.map(tuple),
    timestamp=st.one_of(st.none(), st.integers(min_value=0, max_value=2**50)),
)


@settings(max_examples=60, deadline=None)
@given(
    records=st.lists(simple_records, min_size=1, max_size=20),
    base_offset=st.integers(min_value=0, max_value=2**62),
    timestamp_ms=st.integers(min_value=0, max_value=2**50),
    compression=st.sampled_from([Compression.NONE, Compression.GZIP]),
)
def test_round_trip(
    records: list[SimpleRecord], base_offset: int, timestamp_ms: int, compression: Compression
) -> None:
    buf = build_batch(records, base_offset=base_offset, timestamp_ms=timestamp_ms, compression=compression)
    header = validate_batch(buf)
    assert header.record_count == len(records)
    decoded = decode_records(buf)
    expected = [
        Record(
            offset=base_offset + i,
            timestamp=timestamp_ms if r.timestamp is None else r.timestamp,
            key=r.key,
            value=r.value,
            headers=r.headers,
        )
        for i, r in enumerate(records)
    ]
    assert decoded == expected
    assert header.max_timestamp == max(r.timestamp for r in expected)
    # kafka-python agrees, field by field
    theirs = [(r.offset, r.timestamp, r.key, r.value, tuple(r.headers)) for r in DefaultRecordBatch(buf)]
    assert theirs == [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in expected]
