"""Frames out of a byte stream, however the bytes arrive."""

from __future__ import annotations

import itertools
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lab.wire.framing import FrameBuffer, FrameError, frame


@given(
    payloads=st.lists(st.binary(max_size=300), max_size=8), cuts=st.lists(st.integers(0, 4000), max_size=10)
)
def test_frames_come_out_whole_and_in_order_however_the_stream_is_cut(
    payloads: list[bytes], cuts: list[int]
) -> None:
    stream = b"".join(frame(p) for p in payloads)
    points = sorted({c % (len(stream) + 1) for c in cuts} | {0, len(stream)})
    buffer = FrameBuffer()
    out: list[bytes] = []
    for a, b in itertools.pairwise(points):
        out += buffer.feed(stream[a:b])
    assert out == payloads
    assert buffer.pending == 0


def test_a_partial_frame_waits_for_the_rest() -> None:
    buffer = FrameBuffer()
    data = frame(b"hello")
    assert buffer.feed(data[:6]) == []
    assert buffer.pending == 6
    assert buffer.feed(data[6:]) == [b"hello"]


@pytest.mark.parametrize(("size", "why"), [(-1, "size was -1"), (2**31 - 1, "over socket.request.max.bytes")])
def test_an_impossible_size_is_a_frame_error(size: int, why: str) -> None:
    with pytest.raises(FrameError, match=why):
        FrameBuffer().feed(struct.pack(">i", size) + b"x")


def test_the_limit_is_the_brokers_socket_request_max_bytes() -> None:
    buffer = FrameBuffer(max_bytes=10)
    assert buffer.feed(frame(b"x" * 10)) == [b"x" * 10]
    with pytest.raises(FrameError):
        buffer.feed(frame(b"x" * 11))
