"""The channel layer the lab runs on: channels' in-memory layer, made cheap for fan-out.

One process serves the lab, so frames go through channels' ``InMemoryChannelLayer``. As
shipped it does per-receive work proportional to every channel in the process (it sweeps
for expired messages on each ``receive`` and ``group_send``), a task per member on each
``group_send``, and a deep copy of the message per member. With a hundred pages watching a
lab at ten frames a second that is the cost of the whole fan-out. This layer sweeps at
most once a second, and hands each member its own shallow copy directly when the message
holds only immutable values (text, numbers), as frames do; anything else is deep-copied.
Semantics are unchanged: capacity, expiry and ``ChannelFull`` behave as before.
"""

from __future__ import annotations

import asyncio
import time
from copy import deepcopy
from typing import Any

from channels.exceptions import ChannelFull
from channels.layers import InMemoryChannelLayer

SWEEP_INTERVAL_S = 1.0
_IMMUTABLE = (str, bytes, int, float, bool, type(None))


class LabChannelLayer(InMemoryChannelLayer):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._swept_at = 0.0

    def _clean_expired(self) -> None:
        now = time.monotonic()
        if now - self._swept_at < SWEEP_INTERVAL_S:
            return
        self._swept_at = now
        super()._clean_expired()

    async def group_send(self, group: str, message: dict[str, Any]) -> None:
        assert isinstance(message, dict), "Message is not a dict"
        self.require_valid_group_name(group)
        self._clean_expired()
        flat = all(isinstance(v, _IMMUTABLE) for v in message.values())
        expires = time.time() + self.expiry
        for channel in list(self.groups.get(group, {})):
            queue = self.channels.setdefault(channel, asyncio.Queue(maxsize=self.get_capacity(channel)))
            try:
                queue.put_nowait((expires, dict(message) if flat else deepcopy(message)))
            except asyncio.QueueFull:
                continue  # as the in-memory layer does: a full channel misses this message
            except ChannelFull:  # pragma: no cover - the queue raises QueueFull, kept for parity
                continue
