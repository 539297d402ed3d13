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
