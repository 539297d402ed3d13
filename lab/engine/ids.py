"""Identifiers with their own types."""

from __future__ import annotations

from dataclasses import dataclass

BrokerId = int
# A network node: a broker's id, or a client's name ("producer-1").
NodeId = int | str


@dataclass(frozen=True, slots=True, order=True)
class TopicPartition:
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
