"""The table of APIs a lab's broker serves: key, Kafka's name, the versions, the handler."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lab.wire.codec import Request
    from lab.wire.connection import Connection

# A handler answers with a kio response entity of the request's version, or None (acks=0).
Handler = Callable[["Connection", "Request"], Awaitable[Any]]


@dataclass(frozen=True, slots=True)
class Api:
    key: int
    name: str
    min_version: int
    max_version: int
    handler: Handler


APIS: dict[int, Api] = {}


def serves(key: int, name: str, min_version: int, max_version: int) -> Callable[[Handler], Handler]:
    def register(handler: Handler) -> Handler:
        APIS[key] = Api(key, name, min_version, max_version, handler)
        return handler

    return register
