"""One real client's connection, on the engine's side of the socket.

A connection is a node of the engine's network (``client:<n>``): what a client asks a broker
travels as the engine's own requests, through the broker's gate, so a killed broker refuses
it, a paused one holds it and a slow one answers late, as for the lab's simulated clients.

Kafka serves a connection's requests one at a time and answers in order (the broker mutes a
channel while a request is in progress); clients rely on it. A ``SerialQueue`` does the same.
"""

from __future__ import annotations

import base64
import dataclasses
import uuid
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from kio.index import UnknownAPIKey, UnknownEntity
from kio.schema.errors import ErrorCode

from lab.engine.acl import ANONYMOUS, RequestContext
from lab.engine.errors import KafkaError, NetworkException
from lab.engine.ids import BrokerId
from lab.engine.network import Endpoint, Envelope
from lab.engine.scheduler import Timer
from lab.engine.tasks import Pending, SerialQueue
from lab.wire import codec
from lab.wire.activity import SUMMARY_MS, Activity, ConnectionStats, backs_off, client_label, summary
from lab.wire.failures import FailureLog
from lab.wire.framing import frame

if TYPE_CHECKING:
    from lab.engine.cluster import Cluster
    from lab.wire.apis import Api

SOFTWARE_KEPT = 1_000  # clients' software remembered by host and client.id
SendFn = Callable[[bytes], None]
CloseFn = Callable[[str], None]


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
        listener: str = "PLAINTEXT",
    ) -> None:
        from lab.wire.sasl import state_for

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
        self.connected_s = server.clock()
        self.stats = ConnectionStats()
        self.closed = False
        self.in_flight = 0
        self.announced = False  # its connect is in the journal (after its first request)
        self.api = ""  # the API being served (requests are served one at a time)
        # The listener's security protocol (PLAINTEXT, SASL_PLAINTEXT, SSL, SASL_SSL) and, on a SASL
        # one, the connection's SASL state.
        self.listener = listener
        self.sasl = state_for(listener)
        self.close_after_answer = ""  # a handler's answer that ends the connection: why (sent first)
        cluster = server.cluster
        self.endpoint = Endpoint(cluster.network, cluster.scheduler, self.node, self._no_requests)
        # Kafka's principal: User:ANONYMOUS until a SASL login says otherwise; every request after
        # carries the principal it authenticated.
        self.principal = ANONYMOUS
        self._queue = SerialQueue(self._failed)

    @property
    def principal(self) -> str:
        """Who this connection's requests come from (Kafka's session principal)."""
        return self._principal

    @principal.setter
    def principal(self, principal: str) -> None:
        self._principal = principal
        self.endpoint.context = RequestContext(principal, self.peer_host)

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
        if self.announced or self.in_flight:
            waiting = (
                f" with {self.in_flight} request{'s' if self.in_flight != 1 else ''} unanswered (a client "
                "gives up on a broker that does not answer within its request.timeout.ms, in wall time)"
                if self.in_flight
                else ""
            )
            self.cluster.journal.record(
                "client_gave_up" if self.in_flight else "client_closed",
                f"{self.describe()} closed its connection to broker {self.broker_id}{waiting}",
                broker=self.broker_id,
            )
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
        self.stats.last_error_api = ""
        self.stats.last_error_ms = self.cluster.now_ms
        self.cluster.journal.record(
            "client_disconnected",
            f"{self.describe()} disconnected from broker {self.broker_id}: {why}",
            broker=self.broker_id,
        )
        # Not ``disconnected``: this may run inside the request being served, which must not
        # cancel itself; the requests still queued see ``closed`` and stop.
        self._forget()
        self._close(why)

    @property
    def advertised(self) -> Mapping[BrokerId, tuple[str, int]]:
        """Where the brokers are reached on this connection's listener (what Metadata tells it)."""
        return self.server.advertised_for(self.listener)

    @property
    def peer_host(self) -> str:
        return self.peer.rsplit(":", 1)[0]

    @property
    def label(self) -> str:
        """The client as people name it: its software and version, and its client.id."""
        return client_label(self.software, self.client_id)

    def describe(self) -> str:
        return f"{self.label} at {self.peer}"

    def snapshot(self, now_s: float) -> dict[str, Any]:
        """JSON-safe, for the Clients view."""
        stats = self.stats
        return {
            "id": self.id,
            "peer": self.peer,
            "client_id": self.client_id,
            "principal": self.principal,
            "software_name": self.software[0],
            "software_version": self.software[1],
            "broker": self.broker_id,
            "listener": self.listener,
            "connected_ms": self.connected_ms,
            "requests": stats.requests,
            "requests_per_s": round(stats.rate.per_second(now_s, self.connected_s), 1),
            "in_flight": self.in_flight,
            "errors": stats.errors,
            "last_error": stats.last_error,
            "last_error_api": stats.last_error_api,
            "last_error_ms": stats.last_error_ms,
            "records_produced": stats.records_produced,
            "records_fetched": stats.records_fetched,
        }

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
        if self.close_after_answer and not self.closed:
            self.drop(self.close_after_answer)  # as Kafka does: the answer first, then the close

    async def _answer(self, data: bytes) -> bytes | None:
        from lab.wire.apis import APIS, unsupported_version_answer
        from lab.wire.sasl import raw_token

        if self.sasl is not None and self.sasl.raw:
            return await raw_token(self, self.sasl, data)
        try:
            peeked = codec.peek_header(data)
        except codec.MalformedRequest as error:
            self.drop(str(error))
            return None
        refused = self.sasl.refuses(peeked.api_key) if self.sasl is not None else ""
        if refused:
            self.drop(f"ILLEGAL_SASL_STATE: {refused}")
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
        if not self.software[0]:
            self.software = self.server.software_of(self)
        self.stats.requests += 1
        self.stats.by_api[api.name] = self.stats.by_api.get(api.name, 0) + 1
        self.stats.rate.add(self.server.clock())
        self.api = api.name
        try:
            answer = await api.handler(self, request)
        except NetworkException as error:
            # The broker behind this socket is gone: a real one would have closed it.
            self.drop(error.message)
            return None
        if not self.announced and not self.closed:
            self.announced = True
            self.cluster.journal.record(
                "client_connected",
                f"{self.label} connected to broker {self.broker_id} from {self.peer}",
                broker=self.broker_id,
            )
        if answer is None:
            return None
        for name in response_errors(answer):
            self.note_error(name, api.name)
        return codec.encode_response(request.header.correlation_id, answer)

    def note_error(self, error: KafkaError | str, api: str | None = None) -> None:
        """An error this connection was answered with (Kafka's name), and the API that got it."""
        name = error.name if isinstance(error, KafkaError) else str(error)
        api = api if api is not None else self.api
        self.stats.errors += 1
        self.stats.last_error = name
        self.stats.last_error_api = api
        self.stats.last_error_ms = self.cluster.now_ms
        self.server.activity_of(self).errors[(name, api)] += 1


class WireServer:
    """Every real client connection of one lab, and what they need to be told about it.

    ``advertised`` maps each broker to the host and port its listener is reached at; the
    runtime sets it as listeners open and close.
    """

    def __init__(
        self,
        cluster: Cluster,
        *,
        advertised: Mapping[BrokerId, tuple[str, int]] | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.cluster = cluster
        self.advertised: dict[BrokerId, tuple[str, int]] = dict(advertised or {})
        # The other listeners' (SASL_SSL...), by security protocol: a client is told its own listener's.
        self.listener_advertised: dict[str, dict[BrokerId, tuple[str, int]]] = {}
        self.connections: dict[int, Connection] = {}
        self._next_id = 0
        # Seconds, for requests/s: a live lab gives wall time (clients send in wall time, whatever
        # the lab's clock does); by default the engine's virtual time, so tests are deterministic.
        self.clock: Callable[[], float] = clock or (lambda: cluster.now_ms / 1000)
        self._activity: dict[tuple[str, str, str], Activity] = {}
        self._software_seen: dict[tuple[str, str], tuple[str, str]] = {}  # (host, client.id) -> software
        self._summary: Timer | None = None
        self.failures = FailureLog(cluster)  # failed TLS handshakes and SASL logins, for the timeline

    def advertised_for(self, listener: str) -> Mapping[BrokerId, tuple[str, int]]:
        if listener == "PLAINTEXT":
            return self.advertised
        return self.listener_advertised.get(listener, {})

    def advertise(self, listener: str, broker_id: BrokerId, address: tuple[str, int]) -> None:
        """Where clients of ``listener`` reach ``broker_id`` (Metadata, FindCoordinator answer it)."""
        if listener == "PLAINTEXT":
            self.advertised[broker_id] = address
        else:
            self.listener_advertised.setdefault(listener, {})[broker_id] = address

    @property
    def cluster_id(self) -> str | None:
        return self.cluster.cluster_id

    def topic_id(self, topic: str) -> uuid.UUID | None:
        """KIP-516's topic id, when the topic has one."""
        return topic_uuid(self.cluster.topic_id(topic))

    def count_produced(self, conn: Connection, by_topic: Mapping[str, int]) -> None:
        conn.stats.records_produced += sum(by_topic.values())
        produced = self.activity_of(conn).produced
        for topic, records in by_topic.items():
            if records:
                produced[topic] += records

    def count_fetched(self, conn: Connection, by_topic: Mapping[str, int]) -> None:
        conn.stats.records_fetched += sum(by_topic.values())
        fetched = self.activity_of(conn).fetched
        for topic, records in by_topic.items():
            if records:
                fetched[topic] += records

    # ------------------------------------------------------------------ the timeline's summaries

    def activity_of(self, conn: Connection) -> Activity:
        """What ``conn``'s client did since its last summary (a client's connections add up)."""
        key = (conn.software[0], conn.software[1], conn.client_id or "")
        activity = self._activity.get(key)
        if activity is None:
            activity = self._activity[key] = Activity(since_ms=self.cluster.now_ms)
        if self._summary is None:
            self._summary = self.cluster.scheduler.call_later(
                SUMMARY_MS, self.summarize, label="wire: clients' summary"
            )
        return activity

    def summarize(self) -> None:
        """One timeline line per client that produced, fetched or failed since the last one."""
        self._summary = None
        activity, self._activity = self._activity, {}
        now = self.cluster.now_ms
        for (name, version, client_id), done in sorted(activity.items()):
            if not done:
                continue
            topics = sorted({*done.produced, *done.fetched})
            self.cluster.journal.record(
                "client_errors" if backs_off(done) else "client_activity",
                summary(client_label((name, version), client_id or None), done, now),
                topic=topics[0] if len(topics) == 1 else None,
                client_id=client_id,
                produced=sum(done.produced.values()),
                fetched=sum(done.fetched.values()),
                errors={f"{e} in {api}": n for (e, api), n in done.errors.items()},
            )

    def snapshot(self) -> list[dict[str, Any]]:
        """Every open connection, for the Clients view (JSON-safe)."""
        now_s = self.clock()
        return [c.snapshot(now_s) for c in sorted(self.connections.values(), key=lambda c: c.id)]

    def connect(
        self, broker_id: BrokerId, peer: str, *, send: SendFn, close: CloseFn, listener: str = "PLAINTEXT"
    ) -> Connection:
        self._next_id += 1
        conn = Connection(
            self,
            conn_id=self._next_id,
            broker_id=broker_id,
            peer=peer,
            send=send,
            close=close,
            listener=listener,
        )
        self.connections[conn.id] = conn
        return conn

    def remember_software(self, conn: Connection) -> None:
        """What a connection's ApiVersions v3 said, for the same client's other connections."""
        seen = self._software_seen
        seen[(conn.peer_host, conn.client_id or "")] = conn.software
        while len(seen) > SOFTWARE_KEPT:
            del seen[next(iter(seen))]

    def software_of(self, conn: Connection) -> tuple[str, str]:
        """A client says its software once: kafka-python, having asked ApiVersions on its bootstrap
        connection, opens the others without asking. Its client.id from the same host tells."""
        return self._software_seen.get((conn.peer_host, conn.client_id or ""), ("", ""))

    def forget(self, conn: Connection) -> None:
        self.connections.pop(conn.id, None)

    def drop_broker(self, broker_id: BrokerId, why: str) -> None:
        """A broker died: every connection to it breaks."""
        for conn in [c for c in self.connections.values() if c.broker_id == broker_id]:
            conn.drop(why)

    def close(self, why: str = "the lab stopped") -> None:
        """The listeners close: every connection drops, and what the clients did is summed up."""
        for conn in list(self.connections.values()):
            conn.drop(f"the listener closed ({why})")
        if self._summary is not None:
            self._summary.cancel()
            self.summarize()


def response_errors(entity: Any) -> Iterator[str]:
    """Kafka's name of every error code in a response (a partition's, a topic's, the whole's)."""
    stack = [entity]
    while stack:
        item = stack.pop()
        if isinstance(item, ErrorCode):
            if item is not ErrorCode.none:
                yield item.name.upper()
        elif isinstance(item, tuple):
            stack.extend(item)
        elif dataclasses.is_dataclass(item):
            stack.extend(getattr(item, f.name) for f in dataclasses.fields(item))


def topic_uuid(raw: str | None) -> uuid.UUID | None:
    """Kafka writes topic ids in ZooKeeper as URL-safe base64 without padding."""
    if not raw:
        return None
    try:
        return uuid.UUID(bytes=base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4)))
    except ValueError:
        return None
