"""What the web benches share: a small websocket client, an HTTP GET, percentiles, a process's CPU and
memory from /proc, a free port. Just enough to measure the lab's server from outside, as browsers and
API clients reach it."""

from __future__ import annotations

import asyncio
import base64
import os
import secrets
import socket
import struct
from pathlib import Path


class Socket:
    """Just enough of RFC 6455 for a reading client: handshake, text frames, pings."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    @classmethod
    async def connect(cls, port: int, path: str, cookie: str) -> Socket:
        reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=1 << 24)
        key = base64.b64encode(secrets.token_bytes(16)).decode()
        request = (
            f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\nOrigin: http://127.0.0.1:{port}\r\n"
            f"Cookie: sessionid={cookie}\r\n\r\n"
        )
        writer.write(request.encode())
        await writer.drain()
        status = await reader.readuntil(b"\r\n\r\n")
        if not status.startswith(b"HTTP/1.1 101"):
            raise ConnectionError(f"the server refused the websocket: {status.splitlines()[0]!r}")
        return cls(reader, writer)

    async def _send(self, opcode: int, payload: bytes) -> None:
        mask = secrets.token_bytes(4)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        length = len(payload)
        header = struct.pack("!BB", 0x80 | opcode, 0x80 | length) if length < 126 else b""
        self.writer.write(header + mask + masked)
        await self.writer.drain()

    async def receive(self) -> bytes:
        """The next text message (continuation frames joined); answers pings on the way."""
        parts: list[bytes] = []
        while True:
            first, second = await self.reader.readexactly(2)
            opcode, length = first & 0x0F, second & 0x7F
            if length == 126:
                (length,) = struct.unpack("!H", await self.reader.readexactly(2))
            elif length == 127:
                (length,) = struct.unpack("!Q", await self.reader.readexactly(8))
            payload = await self.reader.readexactly(length)
            if opcode == 0x9:
                await self._send(0xA, payload)
                continue
            if opcode == 0x8:
                raise ConnectionError("the server closed the websocket")
            if opcode in (0x1, 0x2, 0x0):
                parts.append(payload)
                if first & 0x80:
                    return b"".join(parts)

    def close(self) -> None:
        self.writer.close()


async def get(port: int, path: str, token: str) -> tuple[int, bytes]:
    """One HTTP/1.1 GET with a bearer token, on a fresh connection: (status, body)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=1 << 24)
    try:
        writer.write(
            f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n"
            "Connection: close\r\n\r\n".encode()
        )
        await writer.drain()
        answer = await reader.read()
    finally:
        writer.close()
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), body


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q / 100 * len(ordered)))]


def cpu_s(pid: int) -> float:
    """CPU seconds (user + system) a process has used, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def rss_mb(pid: int) -> float:
    """A process's resident memory in MiB, from /proc."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def descendants(pid: int) -> list[int]:
    """Every process under ``pid`` (children, their children, ...), from /proc."""
    found: list[int] = []
    todo = [pid]
    while todo:
        parent = todo.pop()
        for task in Path(f"/proc/{parent}/task").glob("*"):
            try:
                children = [int(c) for c in (task / "children").read_text().split()]
            except OSError:
                continue
            found += children
            todo += children
    return found


def command_name(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""
