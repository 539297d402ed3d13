"""Frames to a channel-layer group, sent from a driver thread on the loop that serves websockets.

The in-memory channel layer keeps asyncio queues that belong to the event loop daphne
runs; a driver thread must not touch them itself. The first websocket consumer to
connect tells the broadcaster which loop that is, and every send is handed to that loop.
Before anyone connects there is no one to send to, and nothing is sent.

A lab's frames go one at a time: a frame made while the lab's last one is still on its way waits,
and frames that waited together go as one message (their fragments in order: the page applies them
as it would have one by one). However busy the loop (a worker's courier among many labs' drivers),
a lab has at most one frame on its way and one waiting, never a queue of stale ones.
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
        self.merged = 0  # frames that went with another (made while their lab's last was on its way)
        self._flying: set[str] = set()  # groups with a frame on its way
        self._waiting: dict[str, tuple[dict[str, Any], Future[None]]] = {}  # the next frame, merged

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
        """Queue ``message`` for ``group`` on the websocket loop; None when there is no loop. A frame
        (``lab.frame``) made while the group's last one is on its way goes with the next one."""
        loop = self.loop
        layer = self._layer()
        if loop is None or layer is None:
            return None
        if message.get("type") != FRAME:
            return self._launch(loop, layer, group, message)
        with self._lock:
            if group in self._flying:
                waiting = self._waiting.get(group)
                if waiting is None:
                    later: Future[None] = Future()
                    self._waiting[group] = (message, later)
                else:
                    self.merged += 1
                    later = waiting[1]
                    self._waiting[group] = (merge(waiting[0], message), later)
                return later
            self._flying.add(group)
        future = self._launch(loop, layer, group, message)
        if future is None:
            with self._lock:
                self._flying.discard(group)
            return None
        future.add_done_callback(lambda _: self._landed(loop, layer, group))
        return future

    def _launch(
        self, loop: asyncio.AbstractEventLoop, layer: Any, group: str, message: dict[str, Any]
    ) -> Future[None] | None:
        try:
            future = asyncio.run_coroutine_threadsafe(layer.group_send(group, message), loop)
        except RuntimeError:  # the loop closed between the check and the call
            return None
        self.sent += 1
        future.add_done_callback(_log_failure)
        return future

    def _landed(self, loop: asyncio.AbstractEventLoop, layer: Any, group: str) -> None:
        """The group's frame is sent: the one waiting (if any) goes now."""
        with self._lock:
            waiting = self._waiting.pop(group, None)
            if waiting is None:
                self._flying.discard(group)
                return
        message, later = waiting
        future = self._launch(loop, layer, group, message)
        if future is None:
            with self._lock:
                self._flying.discard(group)
            later.cancel()
            return

        def done(sent: Future[None]) -> None:
            if sent.cancelled() or sent.exception() is not None:
                later.cancel()
            else:
                later.set_result(None)
            self._landed(loop, layer, group)

        future.add_done_callback(done)


FRAME = "lab.frame"


def merge(first: dict[str, Any], then: dict[str, Any]) -> dict[str, Any]:
    """Two frames as one message: both pages' fragments in order (the later ones win where both drew
    one), the later frame's number, the frame the earlier followed, and when the earlier was made (what the page shows is at most as
    late as that says)."""
    merged = {**then, "html": str(first.get("html", "")) + str(then.get("html", ""))}
    if "made_at" in first:
        merged["made_at"] = first["made_at"]
    if "after" in first:
        merged["after"] = first["after"]
    return merged


def _log_failure(future: Future[None]) -> None:
    if future.cancelled():
        return
    error = future.exception()
    if error is not None:
        log.warning("a frame could not be sent: %s", error)


broadcaster = Broadcaster()
