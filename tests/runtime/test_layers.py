"""The lab's channel layer: channels' in-memory layer semantics, at a fan-out's cost."""

from __future__ import annotations

import asyncio

from asgiref.sync import async_to_sync

from lab.runtime.layers import LabChannelLayer


def test_a_group_send_reaches_every_member_with_its_own_copy() -> None:
    async def run() -> tuple[list[dict], dict]:
        layer = LabChannelLayer()
        channels = [await layer.new_channel() for _ in range(3)]
        for channel in channels:
            await layer.group_add("lab.demo", channel)
        message = {"type": "lab.frame", "html": "<b>", "frame": 7}
        await layer.group_send("lab.demo", message)
        got = [await asyncio.wait_for(layer.receive(c), 1) for c in channels]
        got[0]["html"] = "changed"
        return got, message

    got, sent = async_to_sync(run)()
    assert [m["frame"] for m in got] == [7, 7, 7]
    assert got[1]["html"] == "<b>"
    assert sent["html"] == "<b>"


def test_mutable_values_are_deep_copied_and_a_full_channel_misses_the_message() -> None:
    async def run() -> tuple[dict, int]:
        layer = LabChannelLayer(capacity=1)
        full, other = await layer.new_channel(), await layer.new_channel()
        await layer.group_add("g", full)
        await layer.group_add("g", other)
        payload = {"type": "t", "items": [1, 2]}
        await layer.group_send("g", payload)
        payload["items"].append(3)
        await layer.group_send("g", {"type": "t", "items": []})  # both queues are full: dropped
        first = await layer.receive(other)
        return first, layer.channels[full].qsize()

    first, left = async_to_sync(run)()
    assert first["items"] == [1, 2]
    assert left == 1


def test_expired_messages_are_swept_at_most_once_a_second() -> None:
    async def run() -> int:
        layer = LabChannelLayer(expiry=0)
        channel = await layer.new_channel()
        await layer.group_add("g", channel)
        await layer.group_send("g", {"type": "t"})  # expires at once
        layer._swept_at = 0.0  # as if the last sweep were long ago
        await layer.group_send("g", {"type": "t"})  # the sweep drops the expired one and the member
        return len(layer.groups.get("g", {}))

    assert async_to_sync(run)() == 0
