"""Kafka Lab's engine: a Kafka-like cluster in pure Python. Start with ``from lab.engine import Cluster``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lab.engine.cluster import Cluster

__all__ = ["Cluster"]


def __getattr__(name: str) -> Any:
    # Lazy, so that importing one engine module does not load them all.
    if name == "Cluster":
        from lab.engine.cluster import Cluster

        return Cluster
    raise AttributeError(name)
