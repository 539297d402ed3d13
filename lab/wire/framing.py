"""Kafka's framing: every request and response is a 4-byte big-endian size, then that many bytes."""

from __future__ import annotations

import struct

# socket.request.max.bytes: Kafka's default is 104857600 (100 MiB).
MAX_REQUEST_BYTES = 104_857_600

_SIZE = struct.Struct(">i")


class FrameError(Exception):
    """The stream cannot be read as frames; the connection must close."""


class FrameBuffer:
    """Bytes in, whole frames out. Keeps a partial frame until the rest arrives."""

    def __init__(self, max_bytes: int = MAX_REQUEST_BYTES) -> None:
        self.max_bytes = max_bytes
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[bytes]:
        self._buffer += data
        frames: list[bytes] = []
        buffer = self._buffer
        at = 0
        while len(buffer) - at >= 4:
            (size,) = _SIZE.unpack_from(buffer, at)
            if size < 0:
                raise FrameError(f"a frame said its size was {size} bytes")
            if size > self.max_bytes:
                raise FrameError(
                    f"a frame of {size} bytes is over socket.request.max.bytes ({self.max_bytes})"
                )
            if len(buffer) - at - 4 < size:
                break
            frames.append(bytes(buffer[at + 4 : at + 4 + size]))
            at += 4 + size
        if at:
            del buffer[:at]
        return frames

    @property
    def pending(self) -> int:
        """Bytes of a frame not yet whole (a client that stops mid-frame leaves these)."""
        return len(self._buffer)


def frame(payload: bytes) -> bytes:
    return _SIZE.pack(len(payload)) + payload
