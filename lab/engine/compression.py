"""The four codecs of a RecordBatch's payload, as Kafka's clients write them.

* gzip: a gzip member (Kafka's GZIPOutputStream).
* snappy: the Java client writes xerial's stream framing (an 8-byte magic, two version ints,
  then length-prefixed raw snappy blocks); librdkafka writes one raw snappy block. Both are read.
* lz4: the LZ4 frame format (Kafka's KafkaLZ4BlockOutputStream, spec-compliant since magic 1).
* zstd: a zstd frame.

cramjam (a C-backed package, like crc32c) provides snappy, lz4 and zstd.
"""

from __future__ import annotations

import gzip
import struct
import zlib

import cramjam

from lab.engine.errors import CorruptRecord

NONE, GZIP, SNAPPY, LZ4, ZSTD = 0, 1, 2, 3, 4
NAMES = {NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}

_GZIP_LEVEL = 6  # Kafka's compression.gzip.level default (-1) is Deflater's default, 6
_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = struct.Struct(">8sii")
_XERIAL_BLOCK = 32 * 1024  # snappy-java's default block size


def compress(codec: int, data: bytes | bytearray) -> bytes:
    if codec == NONE:
        return bytes(data)
    if codec == GZIP:
        return gzip.compress(bytes(data), compresslevel=_GZIP_LEVEL, mtime=0)
    if codec == SNAPPY:
        return _xerial(bytes(data))
    if codec == LZ4:
        return bytes(cramjam.lz4.compress(bytes(data)))
    if codec == ZSTD:
        return bytes(cramjam.zstd.compress(bytes(data)))
    raise ValueError(f"unknown compression type id {codec}")


def decompress(codec: int, data: bytes) -> bytes:
    """The payload's records; CorruptRecord when the bytes do not decompress."""
    if codec == NONE:
        return data
    try:
        if codec == GZIP:
            return gzip.decompress(data)
        if codec == SNAPPY:
            return (
                _unxerial(data)
                if data.startswith(_XERIAL_MAGIC)
                else bytes(cramjam.snappy.decompress_raw(data))
            )
        if codec == LZ4:
            return bytes(cramjam.lz4.decompress(data))
        if codec == ZSTD:
            return bytes(cramjam.zstd.decompress(data))
    except (OSError, EOFError, zlib.error, cramjam.DecompressionError, struct.error) as error:
        raise CorruptRecord(f"the {NAMES.get(codec, codec)} payload does not decompress: {error}") from error
    raise ValueError(f"unknown compression type id {codec}")


def _xerial(data: bytes) -> bytes:
    out = bytearray(_XERIAL_HEADER.pack(_XERIAL_MAGIC, 1, 1))
    for at in range(0, len(data), _XERIAL_BLOCK):
        block = bytes(cramjam.snappy.compress_raw(data[at : at + _XERIAL_BLOCK]))
        out += struct.pack(">i", len(block)) + block
    return bytes(out)


def _unxerial(data: bytes) -> bytes:
    out = bytearray()
    at = _XERIAL_HEADER.size
    while at < len(data):
        (size,) = struct.unpack_from(">i", data, at)
        at += 4
        if size < 0 or at + size > len(data):
            raise struct.error(f"a snappy block of {size} bytes runs past the payload")
        out += bytes(cramjam.snappy.decompress_raw(data[at : at + size]))
        at += size
    return bytes(out)
