"""Each broker of a live lab listens on its own TCP port and speaks the Kafka protocol.

One asyncio loop, on its own thread, serves every listener of the process (the web server's
loop never carries a lab's traffic). Bytes become frames here; frames go to the lab's driver
thread (``LiveLab.post``), where ``lab.wire`` turns them into engine requests; answers come
back to this loop to be written. A broker's listener follows its state: a killed or stopped
broker refuses connections and drops the open ones; a paused one still accepts, and its
gate holds what arrives.

A lab may have more listeners than PLAINTEXT, one port per broker each, named by Kafka's security
protocols: SASL_PLAINTEXT, SSL and SASL_SSL (``PROTOCOLS``). The SSL ones serve TLS with the lab's
own CA (``lab.runtime.tls``); the SASL ones make a connection authenticate first (``lab.wire.sasl``).
A client is told the brokers' addresses on the listener it came in by, as Kafka's brokers do.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import threading
from collections import deque
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from lab.engine.endpoints import format_address, format_endpoint
from lab.runtime.spec import SECURED
from lab.runtime.tls import LabTls
from lab.wire.connection import Connection, WireServer
from lab.wire.framing import FrameBuffer, FrameError
from lab.wire.sasl import ENABLED

log = logging.getLogger(__name__)

PROTOCOLS = ("PLAINTEXT", *SECURED)  # Kafka's security protocols
PAUSE_READING_AT = 64  # requests queued on one connection before reading stops (back-pressure)
HANDSHAKE_TIMEOUT_S = 60.0  # a TLS handshake not done by then fails (asyncio's default)
NOT_TLS = frozenset({"WRONG_VERSION_NUMBER", "HTTP_REQUEST", "HTTPS_PROXY_REQUEST", "UNKNOWN_PROTOCOL"})
UNTRUSTED = frozenset(
    {"TLSV1_ALERT_UNKNOWN_CA", "SSLV3_ALERT_BAD_CERTIFICATE", "SSLV3_ALERT_CERTIFICATE_UNKNOWN"}
)
NOTHING_IN_COMMON = frozenset(
    {"NO_SHARED_CIPHER", "UNSUPPORTED_PROTOCOL", "VERSION_TOO_LOW", "TLSV1_ALERT_PROTOCOL_VERSION"}
)


def tls_failure(error: BaseException) -> str:
    """Why a TLS handshake failed, in words a person acts on."""
    reason = str(getattr(error, "reason", "") or "")
    if isinstance(error, ssl.SSLError) and reason:
        if reason in NOT_TLS:
            return f"not TLS ({reason}: a PLAINTEXT client on a TLS listener?)"
        if reason in UNTRUSTED:
            return f"the client does not trust the broker's certificate ({reason}): give it the lab's CA"
        if reason in NOTHING_IN_COMMON:
            return f"no TLS version or cipher in common ({reason})"
        return f"a malformed TLS handshake ({reason})"
    if isinstance(error, ConnectionAbortedError | TimeoutError) and "longer" in str(error):
        return f"no handshake within {HANDSHAKE_TIMEOUT_S:g} s"
    if isinstance(error, ConnectionError | EOFError | ssl.SSLEOFError):
        return "the client closed the connection during the handshake"
    return str(error) or type(error).__name__


class WireLoop:
    """The process's loop for listeners, started on first use."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()
        self._outbox: deque[tuple[Callable[..., Any], tuple[Any, ...]]] = deque()
        self._draining = False

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None or self._loop.is_closed():
                loop = asyncio.new_event_loop()
                started = threading.Event()

                def run() -> None:
                    asyncio.set_event_loop(loop)
                    loop.call_soon(started.set)
                    loop.run_forever()

                threading.Thread(target=run, name="kafka-listeners", daemon=True).start()
                started.wait()
                self._loop = loop
            return self._loop

    def run(self, coro: Any) -> Future[Any]:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def call(self, fn: Callable[..., Any], *args: Any) -> None:
        """Run ``fn(*args)`` on the loop soon, in the order called, from any thread.

        Calls made while the loop has not yet woken for the first share its one wake-up: waking
        the loop writes to its self-pipe, a system call that hands the GIL over, once per burst
        of answers instead of once per answer.
        """
        self._outbox.append((fn, args))
        if not self._draining:
            # Set before waking the loop, which clears it before it drains: a call that sees it
            # set was appended before that drain began, so the drain takes it.
            self._draining = True
            self.loop.call_soon_threadsafe(self._drain)

    def _drain(self) -> None:
        self._draining = False
        outbox = self._outbox
        while outbox:
            fn, args = outbox.popleft()
            try:
                fn(*args)
            except Exception:  # one connection's bug must not strand the others' answers
                log.exception("a listener callback failed")


wire_loop = WireLoop()


class Poster:
    """What listeners need of a lab: run a function on its driver thread, soon, in order."""

    def post(self, fn: Callable[[], None]) -> None: ...


class _ClientProtocol(asyncio.Protocol):
    def __init__(self, listener: BrokerListener) -> None:
        self.listener = listener
        self.frames = FrameBuffer()
        self.transport: asyncio.Transport | None = None
        self.conn: Connection | None = None  # set on the driver thread, before any frame is handed over
        self.peer = "?"
        # Frames handed to the driver, and taken by it: each written by one thread only, so the
        # driver tells the loop nothing per request (a wake-up each) unless reading is paused.
        self.received = 0
        self.taken = 0
        self.paused = False
        # After a TLS handshake, bytes may arrive before the listener hands the connection over
        # (``_Handshake``), or the client may already be gone.
        self.early = b""
        self.lost = False

    # loop thread

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        if self.lost:
            return
        self.transport = transport
        peer = transport.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        self.listener.protocols.add(self)
        self.listener.lab.post(self._open)
        if self.early:
            early, self.early = self.early, b""
            self.data_received(early)

    def data_received(self, data: bytes) -> None:
        if self.transport is None:
            self.early += data
            return
        try:
            frames = self.frames.feed(data)
        except FrameError as error:
            why = str(error)
            self.listener.lab.post(lambda: self._drop(why))
            self._close_now()
            return
        for frame in frames:
            self.received += 1
            self.listener.lab.post(lambda frame=frame: self._received(frame))
        if self.received - self.taken >= PAUSE_READING_AT and not self.paused and self.transport is not None:
            self.paused = True
            self.transport.pause_reading()
            # The driver may have taken them all before it could see ``paused``: look again.
            self._maybe_resume()

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        self.listener.protocols.discard(self)
        pending = self.frames.pending
        self.listener.lab.post(lambda: self._lost(pending))

    def _write(self, data: bytes) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(data)

    def _close_now(self) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.close()

    def _maybe_resume(self) -> None:
        if self.paused and self.received - self.taken < PAUSE_READING_AT // 2 and self.transport is not None:
            self.paused = False
            self.transport.resume_reading()

    # driver thread

    def _open(self) -> None:
        wire = self.listener.lab.wire
        if wire is None:
            wire_loop.call(self._close_now)
            return
        self.conn = wire.connect(
            self.listener.broker_id,
            self.peer,
            send=lambda data: wire_loop.call(self._write, data),
            close=lambda why: wire_loop.call(self._close_now),
            listener=self.listener.protocol,
        )

    def _received(self, frame: bytes) -> None:
        self.taken += 1
        if self.paused:
            wire_loop.call(self._maybe_resume)
        if self.conn is not None:
            self.conn.received(frame)

    def _drop(self, why: str) -> None:
        if self.conn is not None:
            self.conn.drop(why)

    def _lost(self, pending: int) -> None:
        conn = self.conn
        if conn is None or conn.closed:
            return
        if pending:
            conn.drop(f"the client closed the connection in the middle of a request ({pending} bytes of it)")
        else:
            conn.disconnected()


class _Handshake(asyncio.Protocol):
    """A connection to a TLS listener until its handshake is done, then a ``_ClientProtocol``'s. The
    listener runs the handshake itself (``loop.start_tls``) rather than asyncio's server, which would
    swallow a failure: a failed one goes to the lab's timeline with why (``tls_failure``)."""

    def __init__(self, listener: BrokerListener, context: ssl.SSLContext) -> None:
        self.listener = listener
        self.context = context

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        transport.pause_reading()  # nothing is read before start_tls has the transport
        peer = transport.get_extra_info("peername")
        peer_text = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        self.listener.handshaking.add(transport)
        asyncio.get_running_loop().create_task(self._handshake(transport, peer_text))

    async def _handshake(self, raw: asyncio.Transport, peer: str) -> None:
        listener = self.listener
        client = _ClientProtocol(listener)
        try:
            secured = await asyncio.get_running_loop().start_tls(
                raw, client, self.context, server_side=True, ssl_handshake_timeout=HANDSHAKE_TIMEOUT_S
            )
        except Exception as error:
            raw.abort()
            if listener._server is None:  # the broker went down: not the client's failure
                return
            reason = tls_failure(error)
            lab = listener.lab
            lab.post(lambda: _tls_failed(lab, listener, peer, reason))
            return
        finally:
            listener.handshakes_done(raw)
        if secured is None or listener._server is None:  # closed meanwhile: the broker went down
            if secured is not None:
                secured.abort()
            return
        client.connection_made(secured)


def _tls_failed(lab: Any, listener: BrokerListener, peer: str, reason: str) -> None:
    """Driver thread: the failure in the lab's timeline (``lab.wire.failures`` sums a flood up)."""
    wire = getattr(lab, "wire", None)
    if wire is not None:
        wire.failures.tls_failed(
            broker=listener.broker_id, listener=listener.protocol, peer=peer, reason=reason
        )


@dataclass(frozen=True, slots=True)
class ListenerState:
    broker_id: int
    host: str  # advertised
    port: int
    open: bool
    error: str = ""
    protocol: str = "PLAINTEXT"


class BrokerListener:
    def __init__(
        self,
        lab: Any,
        broker_id: int,
        bind_host: str,
        port: int,
        protocol: str = "PLAINTEXT",
        tls: LabTls | None = None,
    ) -> None:
        self.lab = lab
        self.broker_id = broker_id
        self.bind_host = bind_host
        self.port = port
        self.protocol = protocol
        self.tls = tls
        self.protocols: set[_ClientProtocol] = set()
        self.handshaking: set[asyncio.Transport] = set()  # TLS connections not through their handshake
        self._server: asyncio.base_events.Server | None = None
        self.error = ""

    def handshakes_done(self, transport: asyncio.Transport) -> None:
        self.handshaking.discard(transport)

    @property
    def is_open(self) -> bool:
        return self._server is not None

    async def open(self) -> None:
        if self._server is not None:
            return
        loop = asyncio.get_running_loop()
        try:
            factory: Callable[[], asyncio.Protocol] = lambda: _ClientProtocol(self)  # noqa: E731
            if self.protocol.endswith("SSL"):
                if self.tls is None:
                    raise OSError(f"the {self.protocol} listener has no certificates")
                context = self.tls.server_context(self.broker_id)
                factory = lambda: _Handshake(self, context)  # noqa: E731
            self._server = await loop.create_server(factory, self.bind_host, self.port, reuse_address=True)
            self.error = ""
        except (OSError, ValueError) as error:
            strerror = getattr(error, "strerror", None)
            self.error = f"port {self.port} could not be opened: {strerror or error}"
            log.warning("lab %s, broker %s: %s", getattr(self.lab, "slug", "?"), self.broker_id, self.error)

    async def close(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.close()
        for protocol in list(self.protocols):
            if protocol.transport is not None:
                protocol.transport.abort()  # a dead broker's sockets reset, they do not linger
        self.protocols.clear()
        for transport in list(self.handshaking):
            transport.abort()
        self.handshaking.clear()
        if server is not None:
            await server.wait_closed()


def ports_by_protocol(
    ports: Mapping[int, int], secured: Mapping[str, Mapping[int, int]] | None = None
) -> dict[str, dict[int, int]]:
    """Every listener's ports by security protocol, PLAINTEXT's first (Kafka's order of ``listeners``)."""
    found: dict[str, dict[int, int]] = {"PLAINTEXT": dict(ports)}
    for protocol in PROTOCOLS:
        if protocol != "PLAINTEXT" and (secured or {}).get(protocol):
            found[protocol] = dict((secured or {})[protocol])
    return found


def server_properties(
    by_protocol: Mapping[str, Mapping[int, int]], broker_id: int, *, bind_host: str, advertised_host: str
) -> dict[str, str]:
    """What broker ``broker_id``'s server.properties would say of its listeners (each named by its
    security protocol): what its DescribeConfigs reports and its ``/brokers/ids/<id>`` registers
    (``EngineContext.listener_config``)."""
    mine = [(p, ports[broker_id]) for p, ports in by_protocol.items() if broker_id in ports]
    found = {
        "listeners": ",".join(format_endpoint(p, bind_host, port) for p, port in mine),
        "advertised.listeners": ",".join(format_endpoint(p, advertised_host, port) for p, port in mine),
        "listener.security.protocol.map": ",".join(f"{p}:{p}" for p, _ in mine),
    }
    if any(p.startswith("SASL_") for p, _ in mine):
        found["sasl.enabled.mechanisms"] = ",".join(ENABLED)
    if any(p.endswith("SSL") for p, _ in mine):
        found["ssl.keystore.type"] = "PEM"
    return found


class Listeners:
    """A lab's listeners, one per broker, kept in step with the brokers' states (driver thread)."""

    def __init__(
        self,
        lab: Any,
        *,
        bind_host: str,
        advertised_host: str,
        ports: Mapping[int, int],
        secured: Mapping[str, Mapping[int, int]] | None = None,
        tls: LabTls | None = None,
    ) -> None:
        self.lab = lab
        self.bind_host = bind_host
        self.advertised_host = advertised_host
        self.ports = dict(ports)
        self.by_protocol = ports_by_protocol(ports, secured)
        self._listeners = {
            (protocol, b): BrokerListener(lab, b, bind_host, port, protocol, tls)
            for protocol, ports_ in self.by_protocol.items()
            for b, port in ports_.items()
        }
        self._wanted: dict[int, bool] = {}

    def server_properties(self, broker_id: int) -> dict[str, str]:
        return server_properties(
            self.by_protocol, broker_id, bind_host=self.bind_host, advertised_host=self.advertised_host
        )

    def sync(
        self, wire: WireServer, running: Mapping[int, bool], why: Mapping[int, str] | None = None
    ) -> list[Future[Any]]:
        """Open the listeners of brokers that run (or are paused), close the others' (``why``: for the
        timeline, by broker). The openings, done once their sockets listen."""
        opening: list[Future[Any]] = []
        for broker_id in sorted({b for _, b in self._listeners}):
            want = running.get(broker_id, False)
            if self._wanted.get(broker_id) == want:
                continue
            self._wanted[broker_id] = want
            mine = [(p, lst) for (p, b), lst in self._listeners.items() if b == broker_id]
            # A broker's address outlives its listener: until the cluster sees it gone (its
            # ZooKeeper session expires), Kafka's Metadata still names a crashed broker, and a client
            # must be able to look up the leader it is told about (and find it refusing).
            for protocol, listener in mine:
                wire.advertise(protocol, broker_id, (self.advertised_host, listener.port))
            if want:
                for _, listener in mine:
                    opening.append(wire_loop.run(listener.open()))
            else:
                wire.drop_broker(
                    broker_id, (why or {}).get(broker_id) or f"broker {broker_id} is not running"
                )
                for _, listener in mine:
                    wire_loop.run(listener.close())
        return opening

    def states(self) -> list[ListenerState]:
        order = {p: n for n, p in enumerate(PROTOCOLS)}
        return [
            ListenerState(
                broker_id=b,
                host=self.advertised_host,
                port=lst.port,
                open=lst.is_open,
                error=lst.error,
                protocol=protocol,
            )
            for (protocol, b), lst in sorted(
                self._listeners.items(), key=lambda kv: (order[kv[0][0]], kv[0][1])
            )
        ]

    @property
    def bootstrap_servers(self) -> str:
        return self.bootstrap_for("PLAINTEXT")

    def bootstrap_for(self, protocol: str) -> str:
        ports = self.by_protocol.get(protocol, {})
        return ",".join(format_address(self.advertised_host, port) for _, port in sorted(ports.items()))

    def close(self, timeout_s: float = 5.0) -> None:
        futures = [wire_loop.run(listener.close()) for listener in self._listeners.values()]
        for future in futures:
            try:
                future.result(timeout_s)
            except Exception:  # the loop is going away with the process; nothing to keep
                log.exception("closing a listener failed")
        self._wanted.clear()
