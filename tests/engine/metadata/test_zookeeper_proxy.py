"""The loopback proxy, in front of a real TCP echo server: OPEN forwards, CUT refuses, HELD holds."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from lab.engine.errors import IllegalArgument, IllegalState
from lab.engine.metadata.store import LinkState
from lab.engine.metadata.zookeeper_proxy import ZooKeeperProxy, parse_hosts


class EchoServer:
    """Echoes every byte back, and records what it received."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.received = bytearray()
        self._conns: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        self._accept = threading.Thread(target=self._serve, daemon=True)
        self._accept.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self._conns.append(conn)
            thread = threading.Thread(target=self._echo, args=(conn,), daemon=True)
            self._threads.append(thread)
            thread.start()

    def _echo(self, conn: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := conn.recv(4096):
                self.received += data
                conn.sendall(data)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept()
        self.sock.close()
        for conn in self._conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
            conn.close()
        for thread in [self._accept, *self._threads]:
            thread.join(timeout=5)


@pytest.fixture
def echo() -> Iterator[EchoServer]:
    server = EchoServer()
    yield server
    server.close()


@pytest.fixture
def proxy(echo: EchoServer) -> Iterator[ZooKeeperProxy]:
    p = ZooKeeperProxy([("127.0.0.1", echo.port)], name="test")
    yield p
    p.close()


def connect(proxy: ZooKeeperProxy) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", proxy.port), timeout=5)
    return sock


def recv_exactly(sock: socket.socket, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            break
        out += chunk
    return out


def closed_by_peer(sock: socket.socket) -> bool:
    """True when the other end has closed (EOF or reset) within the socket's timeout."""
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def test_open_forwards_both_ways(proxy: ZooKeeperProxy, echo: EchoServer) -> None:
    assert proxy.mode is LinkState.OPEN
    assert proxy.address == f"127.0.0.1:{proxy.port}"
    with connect(proxy) as sock:
        sock.sendall(b"ruok")
        assert recv_exactly(sock, 4) == b"ruok"
        big = bytes(range(256)) * 4096  # 1 MiB both ways
        sender = threading.Thread(target=sock.sendall, args=(big,))
        sender.start()
        assert recv_exactly(sock, len(big)) == big
        sender.join()
    assert echo.received.startswith(b"ruok")


def test_a_round_trip_wakes_the_proxy_once_each_way(proxy: ZooKeeperProxy, echo: EchoServer) -> None:
    # A session's ping through an idle proxy: the bytes are passed on as they are read (the other
    # side takes them), not on a second wake-up for "writable"; between pings the proxy blocks.
    client = connect(proxy)
    client.sendall(b"hello")
    assert recv_exactly(client, 5) == b"hello"
    before = proxy.wakeups
    for _ in range(20):
        client.sendall(b"ping")
        assert recv_exactly(client, 4) == b"ping"
    assert proxy.wakeups - before <= 2 * 20
    client.close()


def test_cut_closes_connections_and_refuses_new_ones(proxy: ZooKeeperProxy, echo: EchoServer) -> None:
    sock = connect(proxy)
    sock.sendall(b"hello")
    assert recv_exactly(sock, 5) == b"hello"

    proxy.set_mode(LinkState.CUT)
    assert proxy.mode is LinkState.CUT
    assert proxy.connections == 0
    assert closed_by_peer(sock)
    sock.close()

    with connect(proxy) as again:  # the port still listens, and hangs up at once
        assert closed_by_peer(again)
    assert proxy.accepted == 2
    assert echo.received == b"hello"

    proxy.set_mode(LinkState.OPEN)
    with connect(proxy) as fresh:
        fresh.sendall(b"back")
        assert recv_exactly(fresh, 4) == b"back"


def test_held_forwards_nothing_until_opened(proxy: ZooKeeperProxy, echo: EchoServer) -> None:
    with connect(proxy) as sock:
        sock.sendall(b"a")
        assert recv_exactly(sock, 1) == b"a"

        proxy.set_mode(LinkState.HELD)
        sock.sendall(b"held")
        sock.settimeout(0.3)
        with pytest.raises(TimeoutError):
            sock.recv(1)  # nothing comes back...
        assert echo.received == b"a"  # ...because nothing went through
        assert proxy.connections == 1

        with connect(proxy) as late:  # a connection made while held is kept, and held too
            late.sendall(b"late")
            proxy.set_mode(LinkState.OPEN)
            late.settimeout(5)
            assert recv_exactly(late, 4) == b"late"
        sock.settimeout(5)
        assert recv_exactly(sock, 4) == b"held"


def test_a_server_hang_up_reaches_the_client(proxy: ZooKeeperProxy, echo: EchoServer) -> None:
    with connect(proxy) as sock:
        sock.sendall(b"x")
        assert recv_exactly(sock, 1) == b"x"
        for conn in echo._conns:
            conn.shutdown(socket.SHUT_RDWR)
        assert closed_by_peer(sock)
    deadline = time.monotonic() + 5
    while proxy.connections and time.monotonic() < deadline:
        time.sleep(0.01)
    assert proxy.connections == 0


def test_close_stops_the_thread_and_frees_the_port(echo: EchoServer) -> None:
    p = ZooKeeperProxy([("127.0.0.1", echo.port)], name="closing")
    port = p.port
    sock = connect(p)
    sock.sendall(b"x")
    assert recv_exactly(sock, 1) == b"x"
    p.close()
    p.close()  # twice is fine
    assert closed_by_peer(sock)
    sock.close()
    assert not any(t.name == "zk-proxy-closing" for t in threading.enumerate())
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=1)
    with pytest.raises(IllegalState):
        p.set_mode(LinkState.CUT)


def test_an_unreachable_upstream_hangs_up_on_the_client() -> None:
    unused = socket.create_server(("127.0.0.1", 0))
    port = unused.getsockname()[1]
    unused.close()
    p = ZooKeeperProxy([("127.0.0.1", port)], name="nowhere")
    try:
        with connect(p) as sock:
            assert closed_by_peer(sock)
    finally:
        p.close()


def test_parse_hosts() -> None:
    assert parse_hosts("127.0.0.1:2181") == [("127.0.0.1", 2181)]
    assert parse_hosts("a:1, b:2") == [("a", 1), ("b", 2)]
    assert parse_hosts("[::1]:2181") == [("::1", 2181)]
    for bad in ("", "host", "host:port", "h:1/chroot", ":2181"):
        with pytest.raises(IllegalArgument):
            parse_hosts(bad)
    with pytest.raises(IllegalArgument):
        ZooKeeperProxy([])
