"""A lab's frames reach every page of this web process through one channel-layer message, not one per page.

With labs on workers (``make run WORKERS=N``) a frame travels over Redis. Were each page's websocket in
the lab's group, a frame of the instructor's demo watched by a class of 30 would be packed, stored in
Redis, popped and unpacked 30 times (channels-redis does each member's copy on its own). Here the web
process joins each watched lab's group once, with a channel of its own, and hands each frame to every
page of this process that watches the lab: one copy per process, however many pages.

A message for a lab's group says which (``group``: frames and ``lab.moved`` do); the relay runs on
daphne's loop, where the pages' consumers run.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any, Protocol

log = logging.getLogger(__name__)

FRAME = "lab.frame"
MOVED = "lab.moved"


class Page(Protocol):
    async def lab_frame(self, event: dict[str, Any]) -> None: ...

    async def lab_moved(self, event: dict[str, Any]) -> None: ...


class Relay:
    def __init__(self) -> None:
        self._pages: dict[str, set[Page]] = {}
        self._channel = ""
        self._layer: Any = None
        self._receiving: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()
        self.received = 0  # messages taken from the channel layer (one per frame, however many pages)

    def watching(self, group: str) -> int:
        """How many of this process's pages watch ``group``."""
        return len(self._pages.get(group, ()))

    async def watch(self, layer: Any, group: str, page: Page) -> None:
        """``page`` gets ``group``'s frames from now on (the group is joined with the first page)."""
        async with self._lock:
            if self._receiving is None or self._receiving.done() or layer is not self._layer:
                await self._start(layer)
            pages = self._pages.setdefault(group, set())
            if not pages:
                await layer.group_add(group, self._channel)
            pages.add(page)

    async def unwatch(self, layer: Any, group: str, page: Page) -> None:
        """``page`` gets no more of ``group``'s frames (the group is left with the last page)."""
        async with self._lock:
            pages = self._pages.get(group)
            if pages is None or page not in pages:
                return
            pages.discard(page)
            if not pages:
                del self._pages[group]
                with contextlib.suppress(Exception):  # Redis away: the group's members expire there
                    await layer.group_discard(group, self._channel)

    async def close(self) -> None:
        """Stop receiving (before the layer's pools close, so the receiver does not see Redis go away)."""
        if self._receiving is not None:
            self._receiving.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._receiving
            self._receiving = None

    async def _start(self, layer: Any) -> None:
        if self._receiving is not None:
            self._receiving.cancel()
        self._layer = layer
        self._channel = await layer.new_channel()
        for group in self._pages:  # a new channel (a new loop, a new layer): join again
            await layer.group_add(group, self._channel)
        self._receiving = asyncio.get_running_loop().create_task(self._receive(layer, self._channel))

    async def _receive(self, layer: Any, channel: str) -> None:
        while True:
            try:
                message = await layer.receive(channel)
            except asyncio.CancelledError:
                raise
            except Exception:  # Redis restarting: try again shortly
                log.warning("the frame relay could not receive; trying again", exc_info=True)
                await asyncio.sleep(0.5)
                continue
            self.received += 1
            await self._hand_out(message)

    async def _hand_out(self, message: dict[str, Any]) -> None:
        pages = list(self._pages.get(str(message.get("group", "")), ()))
        kind = message.get("type")
        for page in pages:
            try:
                if kind == FRAME:
                    await page.lab_frame(message)
                elif kind == MOVED:  # it subscribes again on the new owner: not in the relay's way
                    asyncio.get_running_loop().create_task(page.lab_moved(message))
            except Exception:
                log.exception("a frame could not be handed to a page")


relay = Relay()
