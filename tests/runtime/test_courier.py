"""Messages between processes' couriers over the real Redis channel layer: requests and their answers,
Kafka's errors by class, no answer in time, and groups."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from lab.engine.errors import PolicyViolation
from lab.runtime.courier import Courier
from lab.runtime.redis_layer import LabRedisChannelLayer


def _courier(redis: str, name: str) -> Courier:
    return Courier(LabRedisChannelLayer(hosts=[{"address": redis, "socket_timeout": 30}]), name=name)


@pytest.fixture
def pair(redis: str) -> Iterator[tuple[Courier, Courier]]:
    asking, answering = _courier(redis, "asking"), _courier(redis, "answering")
    yield asking, answering
    asking.close()
    answering.close()


def test_a_request_is_answered_with_json_safe_data(pair: tuple[Courier, Courier]) -> None:
    asking, answering = pair

    async def handle(message: dict[str, Any]) -> None:
        await answering.reply(message, result={"echo": message["text"], "when": (1, 2)})

    answering.serve(handle)
    answer = asking.request(answering.channel, {"type": "lab.command", "text": "hello"}, 10).result(15)
    assert answer == {"echo": "hello", "when": [1, 2]}


def test_a_kafka_error_travels_by_its_class(pair: tuple[Courier, Courier]) -> None:
    asking, answering = pair

    async def handle(message: dict[str, Any]) -> None:
        raise PolicyViolation("the class server is full")

    answering.serve(handle)
    future = asking.request(answering.channel, {"type": "lab.command"}, 10)
    with pytest.raises(PolicyViolation, match="the class server is full"):
        future.result(15)


def test_no_answer_in_time_is_a_timeout_and_a_late_answer_is_dropped(pair: tuple[Courier, Courier]) -> None:
    asking, answering = pair
    held: list[dict[str, Any]] = []

    async def handle(message: dict[str, Any]) -> None:
        held.append(message)  # answered only later

    answering.serve(handle)
    started = time.monotonic()
    future = asking.request(answering.channel, {"type": "lab.command"}, 0.5)
    with pytest.raises(TimeoutError, match=r"did not answer within 0\.5 s"):
        future.result(10)
    assert time.monotonic() - started < 5
    answering.call(answering.reply(held[0], result="late")).result(5)
    again = asking.request(answering.channel, {"type": "lab.command"}, 0.5)
    with pytest.raises(TimeoutError):
        again.result(10)  # the late answer resolved nothing else


def test_a_group_send_reaches_every_channel_in_the_group(pair: tuple[Courier, Courier]) -> None:
    asking, answering = pair
    got: list[dict[str, Any]] = []

    async def handle(message: dict[str, Any]) -> None:
        got.append(message)

    answering.serve(handle)
    group = f"lab.demo-{uuid.uuid4().hex[:8]}"  # the session's Redis is shared with other tests
    answering.call(answering.layer.group_add(group, answering.channel)).result(5)
    try:
        asking.group_send(group, {"type": "lab.frame", "html": "<div id=x></div>"}).result(5)
        deadline = time.monotonic() + 10
        while not got and time.monotonic() < deadline:
            time.sleep(0.02)
        assert got == [{"type": "lab.frame", "html": "<div id=x></div>"}]
    finally:
        answering.call(answering.layer.group_discard(group, answering.channel)).result(5)


def test_a_worker_whose_channel_is_full_is_a_timeout_that_says_so(redis: str) -> None:
    # A worker far behind (its channel holds channels-redis's capacity of messages) takes no more: the
    # asker hears why at once, as the 504 a person sees, not as a server error.
    asking = _courier(redis, "asking")
    busy = LabRedisChannelLayer(hosts=[{"address": redis, "socket_timeout": 30}], capacity=3)
    full = f"busy-worker-{uuid.uuid4().hex}"  # its messages expire with channels-redis's expiry
    try:
        for _ in range(3):
            asking.call(busy.send(full, {"type": "lab.command"})).result(5)
        asking.layer = busy  # the same server, with the small capacity the channel is already at
        future = asking.request(full, {"type": "lab.command", "op": "status"}, 10)
        with pytest.raises(TimeoutError, match="the lab's worker is too busy to take more"):
            future.result(5)
    finally:
        asking.close()
