"""Request headers and bodies in, response headers and bodies out, with kio.

kio knows, for every API and version, the body's schema and which header goes with it
(flexible versions carry tagged fields and compact types; ApiVersions always answers with
header v0, so a client that asked with a version the broker lacks can still read it).
"""

from __future__ import annotations

import io
import struct
from dataclasses import dataclass
from typing import Any

from kio.index import UnknownAPIKey, UnknownEntity, load_request_schema, load_response_schema
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i32

API_VERSIONS = 18
_KEY_VERSION_CORRELATION = struct.Struct(">hhi")

# Versions Kafka 3.x serves that kio (made from Kafka 4's schemas, which dropped them) lacks, whose
# bytes Kafka's schema says are those of a later version: read and written with that one's.
SAME_AS: dict[tuple[int, int], int] = {
    (35, 0): 1,  # DescribeLogDirs: "Version 1 is the same as version 0" (kafka-python asks v0 only)
}


def schema_version(api_key: int, api_version: int) -> int:
    return SAME_AS.get((api_key, api_version), api_version)


class MalformedRequest(Exception):
    """The bytes are not a request of the API and version they claim; the connection closes."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Header:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class Request:
    header: Header
    body: Any  # a kio request entity

    @property
    def response_schema(self) -> type[Any]:
        """The kio response entity that answers this request, at its version."""
        return response_schema(self.header.api_key, self.header.api_version)


def peek_header(frame: bytes) -> Header:
    """The API key, version and correlation id, which every header version starts with."""
    if len(frame) < _KEY_VERSION_CORRELATION.size:
        raise MalformedRequest(f"a request of {len(frame)} bytes is shorter than any request header")
    key, version, correlation = _KEY_VERSION_CORRELATION.unpack_from(frame)
    return Header(api_key=key, api_version=version, correlation_id=correlation, client_id=None)


def decode_request(frame: bytes) -> Request:
    """A whole request. Raises MalformedRequest for bytes kio cannot read as the API they name,
    UnknownAPIKey/UnknownEntity when kio knows no such API or version."""
    peeked = peek_header(frame)
    schema = load_request_schema(peeked.api_key, schema_version(peeked.api_key, peeked.api_version))
    try:
        header, at = entity_reader(schema.__header_schema__)(frame, 0)
        body, _ = entity_reader(schema)(frame, at)
    except Exception as error:  # kio's readers raise what the bytes make them raise
        raise MalformedRequest(
            f"{schema.__name__} v{peeked.api_version} could not be read: {type(error).__name__}: {error}"
        ) from None
    # Bytes left after the body are ignored, as Kafka ignores them (it never checks that a request
    # was read to its end): librdkafka's all-topics Metadata v9+ leaves three.
    return Request(
        header=Header(
            api_key=peeked.api_key,
            api_version=peeked.api_version,
            correlation_id=peeked.correlation_id,
            client_id=header.client_id,
        ),
        body=body,
    )


def response_schema(api_key: int, api_version: int) -> type[Any]:
    return load_response_schema(api_key, schema_version(api_key, api_version))


def encode_response(correlation_id: int, body: Any) -> bytes:
    """The response header the body's schema asks for, then the body (without the size prefix)."""
    buffer = io.BytesIO()
    header_schema = type(body).__header_schema__
    entity_writer(header_schema)(buffer, header_schema(correlation_id=i32(correlation_id)))
    entity_writer(type(body))(buffer, body)
    return buffer.getvalue()


def encode_request(header: Header, body: Any) -> bytes:
    """For tests and tools: a request as a client would send it."""
    from kio.static.primitive import i16

    buffer = io.BytesIO()
    header_schema = type(body).__header_schema__
    fields: dict[str, Any] = {
        "request_api_key": i16(header.api_key),
        "request_api_version": i16(header.api_version),
        "correlation_id": i32(header.correlation_id),
    }
    if "client_id" in header_schema.__dataclass_fields__:
        fields["client_id"] = header.client_id
    entity_writer(header_schema)(buffer, header_schema(**fields))
    entity_writer(type(body))(buffer, body)
    return buffer.getvalue()


__all__ = [
    "API_VERSIONS",
    "Header",
    "MalformedRequest",
    "Request",
    "UnknownAPIKey",
    "UnknownEntity",
    "decode_request",
    "encode_request",
    "encode_response",
    "peek_header",
    "response_schema",
]
