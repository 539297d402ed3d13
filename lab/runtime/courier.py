"""Messages between the web process and the lab workers, over the channel layer.

A :class:`Courier` is an asyncio loop on a thread of its own with a channel of its own: any thread
can ``send`` a message to a channel, ``request`` an answer (a ``concurrent.futures.Future`` that a
reply to this courier's channel resolves, or that fails with ``KafkaTimeout`` when none comes in
time), and ``serve`` what arrives on its channel with a handler. A worker's drivers publish frames
through it (their thread must not touch a loop's layer), and the web process asks workers through
it without holding daphne's loop.

Everything that travels is JSON-safe (channels-redis packs it with msgpack): a Kafka error travels as
its name and message and is raised again on the other side as the same class.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
import uuid
from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from typing import Any

from channels.exceptions import ChannelFull

from lab.engine.errors import KafkaError, from_wire

log = logging.getLogger(__name__)

REPLY = "courier.reply"

Handler = Callable[[dict[str, Any]], Awaitable[None]]


def json_safe(value: Any) -> Any:
    """``value`` as plain JSON data (what msgpack and every process can read)."""
    return json.loads(json.dumps(value, default=str))


def error_out(error: BaseException) -> dict[str, str]:
    if isinstance(error, KafkaError):
        return {"name": error.name, "message": error.message}
    return {"name": "UNKNOWN_SERVER_ERROR", "message": f"{type(error).__name__}: {error}"}


def error_in(data: dict[str, str]) -> KafkaError:
    return from_wire(str(data.get("name", "UNKNOWN_SERVER_ERROR")), str(data.get("message", "")))


class Courier:
    def __init__(self, layer: Any, *, name: str = "courier") -> None:
        self.layer = layer
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name=name, daemon=True)
        self._thread.start()
        self.channel: str = self.call(self.layer.new_channel()).result(10)
        self._pending: dict[str, Future[Any]] = {}
        self._handler: Handler | None = None
        self._receiving: asyncio.Task[None] | None = None
        self._closing = False
        self.call(self._start()).result(10)

    async def _start(self) -> None:
        self._receiving = asyncio.get_running_loop().create_task(self._receive())

    def call(self, coroutine: Awaitable[Any]) -> Future[Any]:
        """Run ``coroutine`` on the courier's loop (from any other thread)."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop)  # type: ignore[arg-type]

    def serve(self, handler: Handler) -> None:
        """Hand every message that is not a reply to ``handler`` (a coroutine, on the courier's loop)."""
        self._handler = handler

    def send(self, channel: str, message: dict[str, Any]) -> Future[Any]:
        return self.call(self.deliver(channel, message))

    async def deliver(self, channel: str, message: dict[str, Any]) -> None:
        """Send, once more after a failure: a Redis that restarted leaves its old connections in the
        pool, and the first use of each fails."""
        try:
            await self.layer.send(channel, message)
        except Exception:
            await asyncio.sleep(0.1)
            await self.layer.send(channel, message)

    def group_send(self, group: str, message: dict[str, Any]) -> Future[Any]:
        return self.call(self.layer.group_send(group, message))

    def request(self, channel: str, message: dict[str, Any], timeout_s: float) -> Future[Any]:
        """Send ``message`` with a reply address; the future holds the answer's ``result`` or its error,
        or ``TimeoutError`` when no answer came within ``timeout_s`` (the web says 504)."""
        request = uuid.uuid4().hex
        future: Future[Any] = Future()
        self._pending[request] = future

        def expire() -> None:
            pending = self._pending.pop(request, None)
            if pending is not None and not pending.done():
                pending.set_exception(TimeoutError(f"the lab's worker did not answer within {timeout_s:g} s"))

        def post() -> None:
            self.loop.call_later(timeout_s, expire)
            task = self.loop.create_task(
                self.deliver(channel, {**message, "reply_to": self.channel, "request": request})
            )
            task.add_done_callback(lambda t: _failed_send(t, future, self._pending, request))

        self.loop.call_soon_threadsafe(post)
        return future

    async def reply(
        self, message: dict[str, Any], *, result: Any = None, error: BaseException | None = None
    ) -> None:
        """Answer a request (on the courier's loop)."""
        reply_to = message.get("reply_to")
        if not reply_to:
            return
        answer: dict[str, Any] = {"type": REPLY, "request": message.get("request", "")}
        if error is not None:
            answer["error"] = error_out(error)
        else:
            answer["result"] = json_safe(result)
        await self.deliver(reply_to, answer)

    def close(self) -> None:
        """Stop receiving, close the layer's connections, and end the loop thread."""
        with contextlib.suppress(Exception):
            self.call(self._shutdown()).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)
        if not self._thread.is_alive():
            self.loop.close()

    async def _shutdown(self) -> None:
        self._closing = True
        task = self._receiving
        if task is not None:
            task.cancel()
            # channels-redis may hold a cancelled receive a while (its own clean-up): not past a second.
            await asyncio.wait({task}, timeout=1.0)
        close_pools = getattr(self.layer, "close_pools", None)
        if close_pools is not None:
            await close_pools()

    async def _receive(self) -> None:
        while not self._closing:
            try:
                message = await self.layer.receive(self.channel)
            except asyncio.CancelledError:
                raise
            except Exception:  # Redis restarting: try again shortly
                if self._closing:
                    return  # channels-redis turned the cancellation into an error of its own
                log.warning("the courier could not receive; trying again", exc_info=True)
                await asyncio.sleep(0.5)
                continue
            if message.get("type") == REPLY:
                future = self._pending.pop(str(message.get("request", "")), None)
                if future is None or future.done():
                    continue  # answered after its deadline
                if "error" in message:
                    future.set_exception(error_in(message["error"]))
                else:
                    future.set_result(message.get("result"))
            elif self._handler is not None:
                self.loop.create_task(self._handle(message))

    async def _handle(self, message: dict[str, Any]) -> None:
        assert self._handler is not None
        try:
            await self._handler(message)
        except Exception as error:
            log.exception("a message could not be handled: %s", message.get("type"))
            await self.reply(message, error=error)


def _failed_send(
    task: asyncio.Task[Any], future: Future[Any], pending: dict[str, Future[Any]], request: str
) -> None:
    if task.cancelled() or task.exception() is None:
        return
    pending.pop(request, None)
    error = task.exception()
    if isinstance(error, ChannelFull):  # the worker is that far behind: as if it had not answered
        error = TimeoutError(
            "the lab's worker is too busy to take more (its queue is full); try again shortly"
        )
    if not future.done():
        future.set_exception(error or RuntimeError("send failed"))
