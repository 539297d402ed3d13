"""Kafka's consumer protocol: the subscription and assignment bytes inside JoinGroup and SyncGroup.

The group coordinator treats them as opaque; members read and write them. The lab's simulated
consumers write Kafka's own format (ConsumerProtocolSubscription and ConsumerProtocolAssignment,
versions 0 to 3), so real clients and simulated ones share a group, and the views read both.

    Subscription: version int16, topics [string], user_data bytes,
                  owned_partitions [topic string, partitions [int32]] (v1+),
                  generation_id int32 (v2+), rack_id nullable string (v3+)
    Assignment:   version int16, assigned_partitions [topic string, partitions [int32]], user_data bytes

A reader takes a newer version than it knows as the newest it knows, ignoring what follows
(Kafka's forward compatibility for these schemas).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from lab.engine.ids import TopicPartition

SUBSCRIPTION_VERSION = 3
ASSIGNMENT_VERSION = 3


class MalformedProtocolData(ValueError):
    """Bytes that are not a consumer protocol subscription or assignment."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Subscription:
    topics: tuple[str, ...]
    owned: tuple[TopicPartition, ...] = ()
    generation: int = -1
    user_data: bytes | None = None
    rack: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Assignment:
    partitions: tuple[TopicPartition, ...]
    user_data: bytes | None = None


# ---------------------------------------------------------------------------- writing


def _string(out: bytearray, text: str | None) -> None:
    if text is None:
        out += struct.pack(">h", -1)
        return
    raw = text.encode()
    out += struct.pack(">h", len(raw)) + raw


def _bytes(out: bytearray, data: bytes | None) -> None:
    if data is None:
        out += struct.pack(">i", -1)
        return
    out += struct.pack(">i", len(data)) + data


def _partitions(out: bytearray, tps: Iterable[TopicPartition]) -> None:
    by_topic: dict[str, list[int]] = {}
    for tp in sorted(tps):
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    out += struct.pack(">i", len(by_topic))
    for topic, parts in by_topic.items():
        _string(out, topic)
        out += struct.pack(f">i{len(parts)}i", len(parts), *parts)


def encode_subscription(sub: Subscription, version: int = SUBSCRIPTION_VERSION) -> bytes:
    out = bytearray(struct.pack(">hi", version, len(sub.topics)))
    for topic in sub.topics:
        _string(out, topic)
    _bytes(out, sub.user_data)
    if version >= 1:
        _partitions(out, sub.owned)
    if version >= 2:
        out += struct.pack(">i", sub.generation)
    if version >= 3:
        _string(out, sub.rack)
    return bytes(out)


def encode_assignment(
    tps: Sequence[TopicPartition], *, user_data: bytes | None = None, version: int = ASSIGNMENT_VERSION
) -> bytes:
    out = bytearray(struct.pack(">h", version))
    _partitions(out, tps)
    _bytes(out, user_data)
    return bytes(out)


# ---------------------------------------------------------------------------- reading


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.at = 0

    def take(self, fmt: str) -> int:
        size = struct.calcsize(fmt)
        if self.at + size > len(self.data):
            raise MalformedProtocolData(f"ends after {len(self.data)} bytes, in the middle of a field")
        (value,) = struct.unpack_from(fmt, self.data, self.at)
        self.at += size
        return int(value)

    def count(self) -> int:
        n = self.take(">i")
        if n < 0 or n > len(self.data):
            raise MalformedProtocolData(f"an array of {n} items cannot fit in {len(self.data)} bytes")
        return n

    def string(self) -> str | None:
        n = self.take(">h")
        if n < 0:
            return None
        raw = self.blob(n)
        try:
            return raw.decode()
        except UnicodeDecodeError as error:
            raise MalformedProtocolData(f"a string is not UTF-8: {error}") from None

    def blob(self, n: int) -> bytes:
        if self.at + n > len(self.data):
            raise MalformedProtocolData(f"a field of {n} bytes runs past the end")
        raw = self.data[self.at : self.at + n]
        self.at += n
        return raw

    def bytes_(self) -> bytes | None:
        n = self.take(">i")
        return None if n < 0 else self.blob(n)

    def partitions(self) -> tuple[TopicPartition, ...]:
        out: list[TopicPartition] = []
        for _ in range(self.count()):
            topic = self.string() or ""
            out += [TopicPartition(topic, self.take(">i")) for _ in range(self.count())]
        return tuple(out)

    @property
    def more(self) -> bool:
        return self.at < len(self.data)


def decode_subscription(data: bytes) -> Subscription:
    r = _Reader(data)
    version = r.take(">h")
    if version < 0:
        raise MalformedProtocolData(f"subscription version {version}")
    topics = tuple(t or "" for t in (r.string() for _ in range(r.count())))
    user_data = r.bytes_()
    owned: tuple[TopicPartition, ...] = ()
    generation = -1
    rack = None
    if version >= 1 and r.more:
        owned = r.partitions()
    if version >= 2 and r.more:
        generation = r.take(">i")
    if version >= 3 and r.more:
        rack = r.string()
    return Subscription(topics=topics, owned=owned, generation=generation, user_data=user_data, rack=rack)


def decode_assignment(data: bytes) -> Assignment:
    if not data:
        return Assignment(partitions=())  # a member given nothing may get empty bytes
    r = _Reader(data)
    version = r.take(">h")
    if version < 0:
        raise MalformedProtocolData(f"assignment version {version}")
    partitions = r.partitions()
    user_data = r.bytes_() if r.more else None
    return Assignment(partitions=partitions, user_data=user_data)
