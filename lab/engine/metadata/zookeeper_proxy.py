"""A loopback TCP proxy between one ZooKeeper session and the server.

Each broker's session connects through its own proxy, so the lab can fault
that one link for real: CUT closes every connection both ways and closes new
ones as soon as they arrive (the server hears nothing and expires the session
after its timeout), HELD keeps the connections but forwards nothing either
way and reads nothing new (a paused process), OPEN forwards again, resuming
held connections where they stopped.

One thread per proxy runs a ``selectors`` loop; mode changes are commands it
applies in order, and ``set_mode`` returns once the mode is in force.
"""

from __future__ import annotations

import contextlib
import logging
import selectors
import socket
import threading
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

from lab.engine.errors import IllegalArgument, IllegalState
from lab.engine.metadata.store import LinkState

log = logging.getLogger(__name__)

_CHUNK = 65536
_BUFFER_LIMIT = 1 << 20  # stop reading a side while this much waits to be written to the other
_CONNECT_TIMEOUT_S = 2.0


def parse_hosts(hosts: str) -> list[tuple[str, int]]:
    """``"h1:2181,h2:2182"`` (IPv6 as ``[::1]:2181``) as (host, port) pairs."""
    out: list[tuple[str, int]] = []
    for item in hosts.split(","):
        item = item.strip()
        host, sep, port = item.rpartition(":")
        if not sep or not host or not port.isdigit() or "/" in item:
            raise IllegalArgument(f"ZooKeeper hosts must be 'host:port[,host:port...]', got {hosts!r}")
        out.append((host.strip("[]"), int(port)))
    return out


@dataclass(eq=False)
class _Pair:
    """One proxied connection: the client's socket and ours to the server."""

    client: socket.socket
    upstream: socket.socket
    to_upstream: bytearray = field(default_factory=bytearray)
    to_client: bytearray = field(default_factory=bytearray)
    client_eof: bool = False
    upstream_eof: bool = False
    masks: dict[int, int] = field(default_factory=dict)  # fileno -> registered events


class ZooKeeperProxy:
    """Listens on 127.0.0.1:<free port> and forwards to the first reachable upstream."""

    def __init__(self, upstream: Sequence[tuple[str, int]], *, name: str = "") -> None:
        if not upstream:
            raise IllegalArgument("a proxy needs at least one upstream host")
        self.name = name
        self._upstream = list(upstream)
        self._mode = LinkState.OPEN
        self._selector = selectors.DefaultSelector()
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        self._listener.setblocking(False)
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._selector.register(self._listener, selectors.EVENT_READ, "listener")
        self._selector.register(self._wake_r, selectors.EVENT_READ, "wake")
        self._pairs: list[_Pair] = []
        self._commands: deque[tuple[LinkState | None, threading.Event]] = deque()
        self._lock = threading.Lock()
        self._closed = False
        self.accepted = 0  # connections accepted, for tests and views
        self.wakeups = 0  # times the thread woke from select(), for tests and benchmarks
        # When the server last got bytes from the client (monotonic): what it times the session from.
        self.last_forwarded = time.monotonic()
        self._thread = threading.Thread(target=self._run, name=f"zk-proxy-{name}", daemon=True)
        self._thread.start()

    # --- public, any thread

    @property
    def port(self) -> int:
        port: int = self._listener.getsockname()[1]
        return port

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def mode(self) -> LinkState:
        return self._mode

    @property
    def connections(self) -> int:
        return len(self._pairs)

    def set_mode(self, mode: LinkState) -> None:
        """Switch the link; returns once the proxy has applied it."""
        if not isinstance(mode, LinkState):
            raise IllegalArgument(f"mode must be a LinkState, got {mode!r}")
        self._command(mode)

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        done = threading.Event()
        self._commands.append((None, done))
        self._wake()
        self._thread.join(timeout=10)
        for sock in (self._listener, self._wake_r, self._wake_w):
            sock.close()
        self._selector.close()

    # --- the proxy thread

    def _command(self, mode: LinkState) -> None:
        with self._lock:
            if self._closed:
                raise IllegalState(f"proxy {self.name} is closed")
            done = threading.Event()
            self._commands.append((mode, done))
        self._wake()
        if threading.current_thread() is not self._thread and not done.wait(timeout=10):
            raise IllegalState(f"proxy {self.name} did not apply {mode.value}")

    def _wake(self) -> None:
        with contextlib.suppress(OSError):
            self._wake_w.send(b"\0")

    def _run(self) -> None:
        try:
            while True:
                ready = self._selector.select()  # no timeout: nothing flowing, nothing to do
                self.wakeups += 1
                for key, mask in ready:
                    if key.data == "listener":
                        self._accept()
                    elif key.data == "wake":
                        if not self._apply_commands():
                            return
                    else:
                        self._io(key.data, key.fileobj, mask)  # type: ignore[arg-type]
        except Exception:  # a bug here must not leave sockets open behind a dead thread
            log.exception("ZooKeeper proxy %s failed", self.name)
        finally:
            for pair in list(self._pairs):
                self._drop(pair)

    def _apply_commands(self) -> bool:
        with contextlib.suppress(BlockingIOError):
            while self._wake_r.recv(4096):
                pass
        while self._commands:
            mode, done = self._commands.popleft()
            if mode is None:
                done.set()
                return False
            self._mode = mode
            if mode is LinkState.CUT:
                for pair in list(self._pairs):
                    self._drop(pair)
            else:
                for pair in self._pairs:
                    self._interest(pair)
            done.set()
        return True

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            self.accepted += 1
            if self._mode is LinkState.CUT:
                client.close()  # refused: the client sees its connection closed at once
                continue
            upstream = self._connect_upstream()
            if upstream is None:
                client.close()
                continue
            client.setblocking(False)
            upstream.setblocking(False)
            for sock in (client, upstream):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            pair = _Pair(client=client, upstream=upstream)
            self._pairs.append(pair)
            self._interest(pair)

    def _connect_upstream(self) -> socket.socket | None:
        for host, port in self._upstream:
            try:
                return socket.create_connection((host, port), timeout=_CONNECT_TIMEOUT_S)
            except OSError as exc:
                log.debug("proxy %s: cannot reach %s:%s: %s", self.name, host, port, exc)
        return None

    def _interest(self, pair: _Pair) -> None:
        """Register what each side of ``pair`` waits for, given the mode and the buffers."""
        open_ = self._mode is LinkState.OPEN
        wants = {
            pair.client: (
                (
                    selectors.EVENT_READ
                    if open_ and not pair.client_eof and len(pair.to_upstream) < _BUFFER_LIMIT
                    else 0
                )
                | (selectors.EVENT_WRITE if open_ and pair.to_client else 0)
            ),
            pair.upstream: (
                (
                    selectors.EVENT_READ
                    if open_ and not pair.upstream_eof and len(pair.to_client) < _BUFFER_LIMIT
                    else 0
                )
                | (selectors.EVENT_WRITE if open_ and pair.to_upstream else 0)
            ),
        }
        for sock, mask in wants.items():
            fd = sock.fileno()
            old = pair.masks.get(fd, 0)
            if mask == old:
                continue
            if old and mask:
                self._selector.modify(sock, mask, pair)
            elif mask:
                self._selector.register(sock, mask, pair)
            else:
                self._selector.unregister(sock)
            pair.masks[fd] = mask

    def _io(self, pair: _Pair, sock: socket.socket, mask: int) -> None:
        if pair not in self._pairs or self._mode is not LinkState.OPEN:
            return
        from_client = sock is pair.client
        try:
            if mask & selectors.EVENT_READ:
                data = sock.recv(_CHUNK)
                if not data:
                    if from_client:
                        pair.client_eof = True
                    else:
                        pair.upstream_eof = True
                elif from_client:
                    pair.to_upstream += data
                    self._send(pair, upstream=True)  # at once: mostly taken whole, no wake-up for writable
                else:
                    pair.to_client += data
                    self._send(pair, upstream=False)
            if mask & selectors.EVENT_WRITE:
                self._send(pair, upstream=not from_client)
        except (BlockingIOError, InterruptedError):
            pass
        except OSError:
            self._drop(pair)
            return
        # A side that hung up closes the pair once what it sent has been passed on.
        if (pair.client_eof and not pair.to_upstream) or (pair.upstream_eof and not pair.to_client):
            self._drop(pair)
            return
        self._interest(pair)

    def _send(self, pair: _Pair, *, upstream: bool) -> None:
        """Write what waits for one side of ``pair``, as much as it takes now."""
        sock, out = (pair.upstream, pair.to_upstream) if upstream else (pair.client, pair.to_client)
        if not out:
            return
        sent = sock.send(out)
        del out[:sent]
        if sent and upstream:
            self.last_forwarded = time.monotonic()

    def _drop(self, pair: _Pair) -> None:
        if pair in self._pairs:
            self._pairs.remove(pair)
        for sock in (pair.client, pair.upstream):
            if pair.masks.get(sock.fileno(), 0):
                with contextlib.suppress(KeyError, ValueError):
                    self._selector.unregister(sock)
            sock.close()
        pair.masks.clear()
