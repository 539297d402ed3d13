"""A client's side of one connection, in virtual time, with no sockets: requests encoded with kio
as a real client would, answers read back with kio."""

from __future__ import annotations

import struct
from typing import Any

from kio.index import load_request_schema, load_response_schema
from kio.serial import entity_reader

from lab.engine.cluster import Cluster
from lab.wire.codec import Header, encode_request
from lab.wire.connection import Connection, WireServer
from lab.wire.shape import make

_servers: dict[int, WireServer] = {}


def _server_of(cluster: Cluster) -> WireServer:
    """One server per cluster, as a lab has (its connections are nodes of one network)."""
    server = _servers.get(id(cluster))
    if server is None or server.cluster is not cluster:
        server = WireServer(cluster, advertised={b: ("127.0.0.1", 9091 + b) for b in cluster.broker_ids})
        _servers[id(cluster)] = server
    return server


class WireClient:
    def __init__(
        self,
        cluster: Cluster,
        broker_id: int = 1,
        *,
        server: WireServer | None = None,
        listener: str = "PLAINTEXT",
    ) -> None:
        self.cluster = cluster
        self.server = server or _server_of(cluster)
        self.sent: list[bytes] = []  # response frames, size included
        self.closed_because: str | None = None
        self.conn: Connection = self.server.connect(
            broker_id, "127.0.0.1:50000", send=self.sent.append, close=self._closed, listener=listener
        )
        self._correlation = 0

    def _closed(self, why: str) -> None:
        self.closed_because = why

    def send_raw(self, payload: bytes) -> None:
        self.conn.received(payload)

    def send(self, api_key: int, version: int, body: dict[str, Any], *, client_id: str = "test") -> int:
        self._correlation += 1
        request = make(load_request_schema(api_key, version), body)
        header = Header(
            api_key=api_key, api_version=version, correlation_id=self._correlation, client_id=client_id
        )
        self.conn.received(encode_request(header, request))
        return self._correlation

    def answer(self, api_key: int, version: int, *, timeout_ms: int = 30_000) -> Any:
        """The next response, read as ``api_key`` v``version``; runs the cluster until it comes."""
        if not self.cluster.run_until_true(
            lambda: bool(self.sent) or self.closed_because is not None, timeout_ms
        ):
            raise AssertionError(f"no answer within {timeout_ms} virtual ms")
        if not self.sent:
            raise AssertionError(f"the connection closed: {self.closed_because}")
        frame = self.sent.pop(0)
        (size,) = struct.unpack_from(">i", frame)
        assert size == len(frame) - 4
        schema = load_response_schema(api_key, version)
        header, at = entity_reader(schema.__header_schema__)(frame, 4)
        body, used = entity_reader(schema)(frame, 4 + at)
        assert 4 + at + used == len(frame), "the response has trailing bytes"
        self.last_correlation = header.correlation_id
        return body

    def ask(self, api_key: int, version: int, body: dict[str, Any], **kw: Any) -> Any:
        cid = self.send(api_key, version, body)
        answer = self.answer(api_key, version, **kw)
        assert self.last_correlation == cid
        return answer
