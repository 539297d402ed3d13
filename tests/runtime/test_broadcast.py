"""Frames reach a channel-layer group on the websocket loop, sent from another thread."""

from __future__ import annotations

import asyncio
import threading

from channels.layers import InMemoryChannelLayer

from lab.runtime.broadcast import Broadcaster, group_name


def test_without_a_loop_nothing_is_sent() -> None:
    broadcast = Broadcaster(layer=InMemoryChannelLayer)
    assert broadcast.send("lab.x", {"type": "lab.frame"}) is None
    assert broadcast.sent == 0


def test_a_frame_sent_from_a_thread_arrives_on_the_loop() -> None:
    loop = asyncio.new_event_loop()
    runner = threading.Thread(target=loop.run_forever, daemon=True)
    runner.start()
    layer = InMemoryChannelLayer()
    broadcast = Broadcaster(layer=lambda: layer)
    try:
        channel = asyncio.run_coroutine_threadsafe(layer.new_channel(), loop).result(5)
        asyncio.run_coroutine_threadsafe(layer.group_add(group_name("demo"), channel), loop).result(5)
        broadcast.attach(loop)
        sent: list[object] = []
        sender = threading.Thread(
            target=lambda: sent.append(broadcast.send("lab.demo", {"type": "lab.frame", "html": "<b>"}))
        )
        sender.start()
        sender.join(5)
        sent[0].result(5)  # type: ignore[attr-defined]
        message = asyncio.run_coroutine_threadsafe(layer.receive(channel), loop).result(5)
        assert message == {"type": "lab.frame", "html": "<b>"}
        assert broadcast.sent == 1
    finally:
        loop.call_soon_threadsafe(loop.stop)
        runner.join(5)
        loop.close()
    assert broadcast.loop is None  # a closed loop is forgotten


def test_frames_made_while_their_labs_last_is_on_its_way_go_as_one_message_in_order() -> None:
    loop = asyncio.new_event_loop()
    runner = threading.Thread(target=loop.run_forever, daemon=True)
    runner.start()
    layer = InMemoryChannelLayer()
    release = asyncio.Event()
    real_group_send = layer.group_send

    async def slow_group_send(group: str, message: dict[str, object]) -> None:
        await release.wait()  # a busy loop: the first frame is still on its way
        await real_group_send(group, message)

    layer.group_send = slow_group_send  # type: ignore[method-assign]
    broadcast = Broadcaster(layer=lambda: layer)
    try:
        channel = asyncio.run_coroutine_threadsafe(layer.new_channel(), loop).result(5)
        asyncio.run_coroutine_threadsafe(layer.group_add(group_name("demo"), channel), loop).result(5)
        broadcast.attach(loop)
        first = broadcast.send("lab.demo", {"type": "lab.frame", "html": "<a>", "frame": 1, "made_at": 1.0})
        second = broadcast.send("lab.demo", {"type": "lab.frame", "html": "<b>", "frame": 2, "made_at": 2.0})
        third = broadcast.send("lab.demo", {"type": "lab.frame", "html": "<c>", "frame": 3, "made_at": 3.0})
        assert first is not None
        assert second is third
        assert broadcast.sent == 1
        loop.call_soon_threadsafe(release.set)
        third.result(5)  # type: ignore[union-attr]
        received = [
            asyncio.run_coroutine_threadsafe(layer.receive(channel), loop).result(5) for _ in range(2)
        ]
        assert received == [
            {"type": "lab.frame", "html": "<a>", "frame": 1, "made_at": 1.0},
            {"type": "lab.frame", "html": "<b><c>", "frame": 3, "made_at": 2.0},
        ]
        assert (broadcast.sent, broadcast.merged) == (2, 1)
        # Nothing on its way any more: the next frame goes at once, alone.
        fourth = broadcast.send("lab.demo", {"type": "lab.frame", "html": "<d>", "frame": 4, "made_at": 4.0})
        fourth.result(5)  # type: ignore[union-attr]
        assert asyncio.run_coroutine_threadsafe(layer.receive(channel), loop).result(5)["html"] == "<d>"
    finally:
        loop.call_soon_threadsafe(loop.stop)
        runner.join(5)
        loop.close()
