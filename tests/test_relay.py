"""A web process's frame relay, on the real Redis channel layer: one copy of a lab's frame reaches every
page of the process that watches the lab, and the lab's group has one member however many pages."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from lab.relay import FRAME, MOVED, Relay
from lab.runtime.redis_layer import LabRedisChannelLayer


class Page:
    def __init__(self) -> None:
        self.frames: list[str] = []
        self.moved: list[str] = []

    async def lab_frame(self, event: dict[str, Any]) -> None:
        self.frames.append(str(event["html"]))

    async def lab_moved(self, event: dict[str, Any]) -> None:
        self.moved.append(str(event["text"]))


async def _until(check: Any, timeout_s: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not check():
        assert asyncio.get_running_loop().time() < deadline, "not within the time"
        await asyncio.sleep(0.02)


def test_one_copy_of_a_frame_reaches_every_page_watching_the_lab(redis: str) -> None:
    async def run() -> None:
        layer = LabRedisChannelLayer(hosts=[{"address": redis, "socket_timeout": 30}])
        relay = Relay()
        # The session's Redis is shared by this process's other tests: groups of this test's own.
        run = uuid.uuid4().hex[:8]
        demo_group, own_group = f"lab.demo-{run}", f"lab.student-{run}"
        demo = [Page() for _ in range(30)]  # a class watching the instructor's demo
        own = Page()  # a student's own lab
        for page in demo:
            await relay.watch(layer, demo_group, page)
        await relay.watch(layer, own_group, own)
        try:
            # The demo's group has one member: this process's relay, not its 30 pages.
            async with layer.connection(layer.consistent_hash(demo_group)) as connection:
                assert await connection.zcard(layer._group_key(demo_group)) == 1
            await layer.group_send(demo_group, {"type": FRAME, "group": demo_group, "html": "<b>1</b>"})
            await layer.group_send(own_group, {"type": FRAME, "group": own_group, "html": "<i>a</i>"})
            await _until(lambda: all(p.frames for p in demo) and own.frames)
            assert relay.received == 2  # one message for 30 pages, one for one
            assert all(p.frames == ["<b>1</b>"] for p in demo)
            assert own.frames == ["<i>a</i>"]
            # The lab moved to another worker: every page hears it (each subscribes again there).
            await layer.group_send(demo_group, {"type": MOVED, "group": demo_group, "text": "moved"})
            await _until(lambda: all(p.moved == ["moved"] for p in demo))
            assert own.moved == []
            # Pages that leave get nothing more; the last one to leave takes the relay out of the group.
            for page in demo[1:]:
                await relay.unwatch(layer, demo_group, page)
            await layer.group_send(demo_group, {"type": FRAME, "group": demo_group, "html": "<b>2</b>"})
            await _until(lambda: demo[0].frames == ["<b>1</b>", "<b>2</b>"])
            assert all(p.frames == ["<b>1</b>"] for p in demo[1:])
            await relay.unwatch(layer, demo_group, demo[0])
            assert relay.watching(demo_group) == 0
            async with layer.connection(layer.consistent_hash(demo_group)) as connection:
                assert await connection.zcard(layer._group_key(demo_group)) == 0
        finally:
            await relay.unwatch(layer, own_group, own)
            await relay.close()
            await layer.close_pools()

    asyncio.run(run())
