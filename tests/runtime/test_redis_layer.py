"""The lab's Redis channel layer on the real Redis: channels-redis's behaviour (order, capacity, expiry,
groups) with one round trip per send and one pop for every message waiting on a process's channels."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from channels.exceptions import ChannelFull

from lab.runtime.redis_layer import LabRedisChannelLayer


def _run(redis: str, test: Callable[[LabRedisChannelLayer], Awaitable[Any]], **config: Any) -> Any:
    async def run() -> Any:
        # A prefix of the test's own: the session's Redis is shared with the process's other tests.
        layer = LabRedisChannelLayer(
            hosts=[{"address": redis, "socket_timeout": 30}], prefix=f"t{uuid.uuid4().hex[:8]}", **config
        )
        try:
            return await test(layer)
        finally:
            await layer.close_pools()

    return asyncio.run(run())


def test_messages_waiting_for_a_process_are_taken_in_one_pop_each_to_its_channel_in_order(
    redis: str,
) -> None:
    async def test(layer: LabRedisChannelLayer) -> tuple[list[int], list[int], int]:
        a, b = await layer.new_channel(), await layer.new_channel()
        for n in range(40):
            await layer.send(a if n % 2 == 0 else b, {"type": "lab.frame", "n": n})
        got_a = [(await layer.receive(a))["n"] for _ in range(20)]
        got_b = [(await layer.receive(b))["n"] for _ in range(20)]
        return got_a, got_b, layer.pops

    got_a, got_b, pops = _run(redis, test)
    assert got_a == list(range(0, 40, 2))
    assert got_b == list(range(1, 40, 2))
    assert pops == 1  # forty messages, one round trip (channels-redis makes four per message)


def test_a_full_channel_refuses_a_message_and_keeps_what_it_holds(redis: str) -> None:
    async def test(layer: LabRedisChannelLayer) -> tuple[list[int], bool]:
        channel = await layer.new_channel()
        for n in range(3):
            await layer.send(channel, {"type": "t", "n": n})
        with pytest.raises(ChannelFull):
            await layer.send(channel, {"type": "t", "n": 3})
        got = [(await layer.receive(channel))["n"] for _ in range(3)]
        await layer.send(channel, {"type": "t", "n": 4})  # room again
        later = (await layer.receive(channel))["n"] == 4
        return got, later

    assert _run(redis, test, capacity=3) == ([0, 1, 2], True)


def test_a_send_drops_messages_older_than_the_expiry(redis: str) -> None:
    async def test(layer: LabRedisChannelLayer) -> tuple[int, list[int]]:
        channel = await layer.new_channel()
        key = layer.prefix + layer.non_local_name(channel)
        stale = layer.serialize({"type": "t", "n": -1, "__asgi_channel__": channel})
        async with layer.connection(layer.consistent_hash(channel)) as connection:
            await connection.zadd(key, {stale: time.time() - 120})  # two minutes old: past the 60 s
        await layer.send(channel, {"type": "t", "n": 0})
        async with layer.connection(layer.consistent_hash(channel)) as connection:
            held = await connection.zcard(key)
        return held, [(await layer.receive(channel))["n"]]

    assert _run(redis, test) == (1, [0])


def test_a_group_send_reaches_each_member_channel_of_the_process(redis: str) -> None:
    async def test(layer: LabRedisChannelLayer) -> list[str]:
        members = [await layer.new_channel() for _ in range(3)]
        for channel in members:
            await layer.group_add("lab.demo", channel)
        await layer.group_send("lab.demo", {"type": "lab.frame", "html": "<b>1</b>"})
        return [(await asyncio.wait_for(layer.receive(c), 10))["html"] for c in members]

    assert _run(redis, test) == ["<b>1</b>"] * 3


def test_a_receive_cancelled_while_it_waits_loses_no_message(redis: str) -> None:
    async def test(layer: LabRedisChannelLayer) -> int:
        channel = await layer.new_channel()
        waiting = asyncio.get_running_loop().create_task(layer.receive(channel))
        while layer.pops < 2:  # until it waits in the blocking pop (nothing was waiting)
            await asyncio.sleep(0.01)
        waiting.cancel()
        await layer.send(channel, {"type": "t", "n": 7})
        message = await asyncio.wait_for(layer.receive(channel), 10)
        return int(message["n"])

    assert _run(redis, test) == 7


def test_a_member_whose_channel_is_full_misses_a_group_message_and_the_others_get_it(redis: str) -> None:
    async def test(layer: LabRedisChannelLayer) -> tuple[list[int], list[int]]:
        full = await layer.new_channel(prefix="full")  # a process of its own: a set of its own
        other = await layer.new_channel(prefix="other")
        for channel in (full, other):
            await layer.group_add("lab.demo", channel)
        await layer.send(full, {"type": "t", "n": 0})  # at its capacity of 1
        await layer.group_send("lab.demo", {"type": "t", "n": 1})
        return [(await layer.receive(full))["n"]], [(await layer.receive(other))["n"]]

    assert _run(redis, test, capacity=1) == ([0], [1])
