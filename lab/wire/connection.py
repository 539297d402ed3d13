"""One real client's connection, on the engine's side of the socket.

A connection is a node of the engine's network (``client:<n>``): what a client asks a broker
travels as the engine's own requests, through the broker's gate, so a killed broker refuses
it, a paused one holds it and a slow one answers late, as for the lab's simulated clients.

Kafka serves a connection's requests one at a time and answers in order (the broker mutes a
channel while a request is in progress); clients rely on it. A ``SerialQueue`` does the same.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kio.index import UnknownAPIKey, UnknownEntity

from lab.engine.errors import KafkaError, NetworkException
from lab.engine.ids import BrokerId
from lab.engine.network import Endpoint, Envelope
from lab.engine.tasks import Pending, SerialQueue
from lab.wire import codec
from lab.wire.framing import frame

if TYPE_CHECKING:
    from lab.engine.cluster import Cluster
    from lab.wire.apis import Api

SendFn = Callable[[bytes], None]
CloseFn = Callable[[str], None]


@dataclass(slots=True)
class ConnectionStats:
    requests: int = 0
    errors: int = 0
    last_error: str = ""
    records_produced: int = 0
    records_fetched: int = 0
    by_api: dict[str, int] = field(default_factory=dict)


class Connection:
    """Frames in (``received``), response frames out (``send``); ``close`` when the client broke
    the protocol. Used only on the lab's driver thread."""

    def __init__(
        self,
        server: WireServer,
        *,
        conn_id: int,
        broker_id: BrokerId,
        peer: str,
        send: SendFn,
        close: CloseFn,
    ) -> None:
        self.server = server
        self.id = conn_id
        self.broker_id = broker_id
        self.peer = peer
        self.node = f"client:{conn_id}"
        self._send = send
        self._close = close
        self.client_id: str | None = None
        self.software = ("", "")  # name, version, from ApiVersions v3
        self.connected_ms = server.cluster.now_ms
        self.stats = ConnectionStats()
        self.closed = False
        self.in_flight = 0
        cluster = server.cluster
        self.endpoint = Endpoint(cluster.network, cluster.scheduler, self.node, self._no_requests)
        self._queue = SerialQueue(self._failed)

    # ------------------------------------------------------------------ the socket's side

    def received(self, data: bytes) -> None:
        """One whole request frame (without its size)."""
        if self.closed:
            return
        self.in_flight += 1
        self._queue.put("request", lambda: self._serve(data))

    def disconnected(self) -> None:
        """The client went away: forget it and whatever it still waited for."""
        if self.closed:
            return
        self._forget()
        self._queue.clear()

    def _forget(self) -> None:
        self.closed = True
        self.endpoint.close()
        self.server.forget(self)

    # ------------------------------------------------------------------ for handlers

    @property
    def cluster(self) -> Cluster:
        return self.server.cluster

    def call(self, body: Any, *, timeout_ms: int = 30_000) -> Pending[Any]:
        """Send an engine request to this connection's broker; the answer, or a KafkaError."""
        pending: Pending[Any] = Pending()

        def answered(response: Any) -> None:
            if isinstance(response, BaseException):
                pending.fail(response)
            else:
                pending.resolve(response)

        self.endpoint.request(self.broker_id, body, answered, timeout_ms=timeout_ms)
        return pending

    def send_oneway(self, body: Any) -> None:
        self.endpoint.send_oneway(self.broker_id, body)

    def drop(self, why: str) -> None:
        """Close the connection, saying why in the journal (a protocol error, a broker that died)."""
        if self.closed:
            return
        self.stats.last_error = why
        self.cluster.journal.record(
            "client_disconnected",
            f"{self.describe()} disconnected from broker {self.broker_id}: {why}",
            broker=self.broker_id,
        )
        # Not ``disconnected``: this may run inside the request being served, which must not
        # cancel itself; the requests still queued see ``closed`` and stop.
        self._forget()
        self._close(why)

    def describe(self) -> str:
        name = self.client_id or "a client"
        software = f" ({self.software[0]} {self.software[1]})".rstrip() if self.software[0] else ""
        return f"{name}{software} at {self.peer}"

    # ------------------------------------------------------------------ serving

    def _no_requests(self, env: Envelope) -> None:
        """Brokers never call a client."""

    def _failed(self, name: str, error: BaseException) -> None:
        # A handler's own bug: the client gets no answer it could misread; the connection closes.
        self.drop(f"the lab failed serving a request ({type(error).__name__}: {error})")

    async def _serve(self, data: bytes) -> None:
        try:
            if self.closed:
                return
            response = await self._answer(data)
        finally:
            self.in_flight -= 1
        if response is not None and not self.closed:
            self._send(frame(response))

    async def _answer(self, data: bytes) -> bytes | None:
        from lab.wire.apis import APIS, unsupported_version_answer

        try:
            peeked = codec.peek_header(data)
        except codec.MalformedRequest as error:
            self.drop(str(error))
            return None
        api: Api | None = APIS.get(peeked.api_key)
        if api is None or not api.min_version <= peeked.api_version <= api.max_version:
            if peeked.api_key == codec.API_VERSIONS:
                # KIP-511: a client that asks with a version the broker lacks learns what it has.
                return unsupported_version_answer(peeked.correlation_id)
            what = f"API key {peeked.api_key}" if api is None else f"{api.name} v{peeked.api_version}"
            self.drop(f"it asked for {what}, which this broker does not serve (UNSUPPORTED_VERSION)")
            return None
        try:
            request = codec.decode_request(data)
        except (codec.MalformedRequest, UnknownAPIKey, UnknownEntity) as error:
            self.drop(f"a malformed {api.name} v{peeked.api_version} request: {error}")
            return None
        if request.header.client_id is not None:
            self.client_id = request.header.client_id
        self.stats.requests += 1
        self.stats.by_api[api.name] = self.stats.by_api.get(api.name, 0) + 1
        try:
            answer = await api.handler(self, request)
        except NetworkException as error:
            # The broker behind this socket is gone: a real one would have closed it.
            self.drop(error.message)
            return None
        if answer is None:
            return None
        return codec.encode_response(request.header.correlation_id, answer)

    def note_error(self, error: KafkaError | str) -> None:
        self.stats.errors += 1
        self.stats.last_error = str(error)


class WireServer:
    """Every real client connection of one lab, and what they need to be told about it.

    ``advertised`` maps each broker to the host and port its listener is reached at; the
    runtime sets it as listeners open and close.
    """

    def __init__(
        self, cluster: Cluster, *, advertised: Mapping[BrokerId, tuple[str, int]] | None = None
    ) -> None:
        self.cluster = cluster
        self.advertised: dict[BrokerId, tuple[str, int]] = dict(advertised or {})
        self.connections: dict[int, Connection] = {}
        self._next_id = 0

    @property
    def cluster_id(self) -> str | None:
        return self.cluster.cluster_id

    def topic_id(self, topic: str) -> uuid.UUID | None:
        """KIP-516's topic id, when the topic has one."""
        return topic_uuid(self.cluster.topic_id(topic))

    def count_produced(self, conn: Connection, request: Any) -> None:
        conn.stats.records_produced += int(getattr(request, "records", 0))

    def count_fetched(self, conn: Connection, records: int) -> None:
        conn.stats.records_fetched += records

    def connect(self, broker_id: BrokerId, peer: str, *, send: SendFn, close: CloseFn) -> Connection:
        self._next_id += 1
        conn = Connection(self, conn_id=self._next_id, broker_id=broker_id, peer=peer, send=send, close=close)
        self.connections[conn.id] = conn
        return conn

    def forget(self, conn: Connection) -> None:
        self.connections.pop(conn.id, None)

    def drop_broker(self, broker_id: BrokerId, why: str) -> None:
        """A broker died: every connection to it breaks."""
        for conn in [c for c in self.connections.values() if c.broker_id == broker_id]:
            conn.drop(why)

    def close(self) -> None:
        for conn in list(self.connections.values()):
            conn.drop("the lab stopped")


def topic_uuid(raw: str | None) -> uuid.UUID | None:
    """Kafka writes topic ids in ZooKeeper as URL-safe base64 without padding."""
    if not raw:
        return None
    try:
        return uuid.UUID(bytes=base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4)))
    except ValueError:
        return None
