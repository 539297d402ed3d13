"""Frames to a channel-layer group, sent from a driver thread on the loop that serves websockets.

The in-memory channel layer keeps asyncio queues that belong to the event loop daphne
runs; a driver thread must not touch them itself. The first websocket consumer to
connect tells the broadcaster which loop that is, and every send is handed to that loop.
Before anyone connects there is no one to send to, and nothing is sent.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

log = logging.getLogger(__name__)


def group_name(slug: str) -> str:
    """The channel-layer group of a lab (letters, digits, hyphens and dots only)."""
    return f"lab.{slug}"


class Broadcaster:
    def __init__(self, layer: Callable[[], Any] | None = None) -> None:
        self._layer_factory = layer
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()
        self.sent = 0

    def _layer(self) -> Any:
        if self._layer_factory is not None:
            return self._layer_factory()
        from channels.layers import get_channel_layer

        return get_channel_layer()

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        """The loop websocket consumers run on (called from that loop on each connect)."""
        with self._lock:
            self._loop = loop

    @property
    def loop(self) -> asyncio.AbstractEventLoop | None:
        with self._lock:
            loop = self._loop
        return None if loop is None or loop.is_closed() else loop

    def send(self, group: str, message: dict[str, Any]) -> Future[None] | None:
        """Queue ``message`` for ``group`` on the websocket loop; None when there is no loop."""
        loop = self.loop
        layer = self._layer()
        if loop is None or layer is None:
            return None
        try:
            future = asyncio.run_coroutine_threadsafe(layer.group_send(group, message), loop)
        except RuntimeError:  # the loop closed between the check and the call
            return None
        self.sent += 1
        future.add_done_callback(_log_failure)
        return future


def _log_failure(future: Future[None]) -> None:
    if future.cancelled():
        return
    error = future.exception()
    if error is not None:
        log.warning("a frame could not be sent: %s", error)


broadcaster = Broadcaster()
