"""Identifiers with their own types."""

from __future__ import annotations

import base64
from random import Random  # seeded instances only: never the global generator
from typing import NamedTuple

BrokerId = int
# A network node: a broker's id, or a client's name ("producer-1").
NodeId = int | str


class TopicPartition(NamedTuple):
    """A partition of a topic. A NamedTuple: it keys most of the engine's dicts, and a tuple's hash
    and equality need no Python call."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"

    @property
    def key(self) -> str:
        """The form snapshots use as a JSON key: ``orders/0``."""
        return f"{self.topic}/{self.partition}"

    @classmethod
    def parse(cls, text: str) -> TopicPartition:
        """``orders-0`` or ``orders/0``."""
        sep = "/" if "/" in text else "-"
        topic, _, part = text.rpartition(sep)
        return cls(topic, int(part))


def kafka_uuid(rng: Random) -> str:
    """A version-4 UUID as Kafka prints its cluster and topic ids: 16 bytes, base64url, no padding.

    From the cluster's own seeded generator, so a seed gives the same ids. Like Kafka's
    Uuid.randomUuid, never one starting with '-' (a command line would read it as an option).
    """
    while True:
        raw = bytearray(rng.getrandbits(128).to_bytes(16, "big"))
        raw[6] = (raw[6] & 0x0F) | 0x40  # version 4
        raw[8] = (raw[8] & 0x3F) | 0x80  # IETF variant
        text = base64.urlsafe_b64encode(bytes(raw)).decode("ascii").rstrip("=")
        if not text.startswith("-"):
            return text
