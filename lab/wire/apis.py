"""Every API a lab's broker serves (importing the handler modules registers them), and ApiVersions."""

from __future__ import annotations

from kio.schema.api_versions.v0.response import ApiVersionsResponse as ApiVersionsResponseV0
from kio.schema.errors import ErrorCode

from lab.wire import acls, admin, codec, data, groups, sasl, transactions, users  # noqa: F401  (registers their handlers)
from lab.wire.codec import Request
from lab.wire.connection import Connection
from lab.wire.registry import APIS, Api, serves
from lab.wire.shape import make

__all__ = ["APIS", "Api", "unsupported_version_answer"]


def _versions() -> list[dict[str, int]]:
    return [
        {"api_key": api.key, "min_version": api.min_version, "max_version": api.max_version}
        for api in sorted(APIS.values(), key=lambda a: a.key)
    ]


@serves(18, "ApiVersions", 0, 3)
async def api_versions(conn: Connection, request: Request) -> object:
    body = request.body
    name = getattr(body, "client_software_name", "")
    version = getattr(body, "client_software_version", "")
    if name:
        conn.software = (name, version)
        conn.server.remember_software(conn)
    schema = codec.response_schema(18, request.header.api_version)
    return make(schema, {"error_code": None, "api_keys": _versions(), "throttle_time": 0})


def unsupported_version_answer(correlation_id: int) -> bytes:
    """ApiVersions v0 with UNSUPPORTED_VERSION and what the broker serves (KIP-511)."""
    body = make(
        ApiVersionsResponseV0,
        {"error_code": ErrorCode.unsupported_version, "api_keys": _versions()},
    )
    return codec.encode_response(correlation_id, body)
