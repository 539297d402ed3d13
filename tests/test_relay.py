"""A web process's relay, on the real Redis channel layer: one copy of a lab's frame reaches every page
of the process that watches the lab, the lab's group has one member however many pages, and the lab's
worker hears of the process once: one subscription, one full state for the pages that wait at once."""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from lab import relay as relay_module
from lab import remote
from lab.engine.errors import PolicyViolation
from lab.relay import FRAME, MOVED, Relay
from lab.runtime.courier import Courier
from lab.runtime.ownership import Ownership
from lab.runtime.redis_layer import LabRedisChannelLayer


class Page:
    def __init__(self) -> None:
        self.frames: list[str] = []
        self.moved: list[str] = []

    async def lab_frame(self, event: dict[str, Any]) -> None:
        self.frames.append(str(event["html"]))

    async def lab_moved(self, event: dict[str, Any]) -> None:
        self.moved.append(str(event["text"]))

    async def unavailable(self, error: BaseException) -> None:
        raise AssertionError(f"the lab was unavailable: {error}")


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


# ---------------------------------------------------------------------- subscribing once per process


class Watcher(Page):
    """A page that also hears why its lab is unavailable."""

    def __init__(self) -> None:
        super().__init__()
        self.full: list[str] = []
        self.errors: list[str] = []

    async def lab_frame(self, event: dict[str, Any]) -> None:
        (self.full if event.get("full") else self.frames).append(str(event["html"]))

    async def unavailable(self, error: BaseException) -> None:
        self.errors.append(str(error))


class Owner:
    """The lab's worker as the web process reaches it: a courier on the real Redis layer, registered in
    the real ZooKeeper, answering ``subscribe`` as ``lab.worker`` does (it counts the channel, and
    sends the full state to it); it holds each answer until the test lets it go."""

    def __init__(self, redis: str, zookeeper: str, install: str) -> None:
        self.courier = Courier(LabRedisChannelLayer(hosts=[{"address": redis, "socket_timeout": 30}]))
        self.ownership = Ownership(zookeeper, install)
        self.asked: list[dict[str, Any]] = []
        self.channels: set[str] = set()
        self.go = threading.Event()
        self.refuse: Exception | None = None
        self.drawn = 0
        self.seqs: list[int] = []  # the lab's latest frame as each full state is drawn (1, 2, ...)
        self.lose = 0  # full states said sent that never arrive (lost on the way)

        async def handle(message: dict[str, Any]) -> None:
            self.asked.append(message)
            if message["op"] == "unsubscribe":
                self.channels.discard(message["channel"])
                return
            new = message["channel"] not in self.channels
            self.channels.add(message["channel"])
            await asyncio.to_thread(self.go.wait, 30)
            if self.refuse is not None:
                await self.courier.reply(message, error=self.refuse)
                return
            if new or message.get("full"):
                self.drawn += 1
                seq = self.seqs.pop(0) if self.seqs else self.drawn
                full = {"type": FRAME, "html": f"full {self.drawn}", "frame": seq, "run": "r1", "full": True}
                if self.lose:
                    self.lose -= 1
                else:
                    await self.courier.deliver(message["channel"], full)
            await self.courier.reply(message, result="subscribed")

        self.courier.serve(handle)
        self.ownership.register("1", self.courier.channel, cap=10)

    def ops(self, op: str) -> int:
        return sum(m["op"] == op for m in self.asked)

    def close(self) -> None:
        self.ownership.close()
        self.courier.close()


@pytest.fixture
def owner(redis: str, zookeeper: str, settings: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[Owner]:
    install = f"tests-relay-{uuid.uuid4().hex[:8]}"
    settings.LAB_ZOOKEEPER = zookeeper
    worker = Owner(redis, zookeeper, install)
    web = Courier(LabRedisChannelLayer(hosts=[{"address": redis, "socket_timeout": 30}]), name="web")
    web_zk = Ownership(zookeeper, install)
    monkeypatch.setattr(remote, "_courier", web)
    monkeypatch.setattr(remote, "_ownership", web_zk)
    try:
        yield worker
    finally:
        worker.go.set()
        web_zk.close()
        web.close()
        worker.close()


def _watching(redis: str, test: Any) -> None:
    async def run() -> None:
        layer = LabRedisChannelLayer(hosts=[{"address": redis, "socket_timeout": 30}])
        relay = Relay()
        try:
            await test(layer, relay)
        finally:
            await relay.close()
            await layer.close_pools()

    asyncio.run(run())


def test_a_class_opening_one_lab_subscribes_to_its_worker_once_and_every_page_gets_the_full_state(
    redis: str, owner: Owner
) -> None:
    slug = f"demo-{uuid.uuid4().hex[:8]}"
    group = f"lab.{slug}"

    async def test(layer: LabRedisChannelLayer, relay: Relay) -> None:
        class_ = [Watcher() for _ in range(30)]
        for page in class_:
            await relay.watch(layer, group, page, remote.RemotePage(slug))
        owner.go.set()  # the worker answers now: every page of the class had opened before
        await _until(lambda: all(p.full for p in class_))
        assert all(p.full == ["full 1"] for p in class_)
        assert (owner.ops("subscribe"), relay.subscribes, len(owner.channels)) == (1, 1, 1)
        # A frame of the lab reaches every page, in one copy.
        await layer.group_send(group, {"type": FRAME, "group": group, "html": "<b>1</b>", "frame": 1})
        await _until(lambda: all(p.frames == ["<b>1</b>"] for p in class_))
        # A latecomer gets a full state drawn after it came, asked for it alone.
        late = Watcher()
        await relay.watch(layer, group, late, remote.RemotePage(slug))
        await _until(lambda: late.full)
        assert late.full == ["full 2"]
        assert all(p.full == ["full 1"] for p in class_)
        # Pages that missed a frame together ask together: one full state for all of them.
        for page in class_[:10]:
            await relay.resync(group, page)
        await _until(lambda: all(len(p.full) == 2 for p in class_[:10]))
        assert owner.ops("subscribe") == 3  # the nine that asked meanwhile share the first one's
        # The worker hears the process stop watching once, when its last page leaves.
        for page in [*class_, late]:
            await relay.unwatch(layer, group, page)
        await _until(lambda: owner.ops("unsubscribe") == 1)
        assert owner.channels == set()

    _watching(redis, test)


def test_a_lab_its_worker_cannot_run_tells_every_page_that_waited(redis: str, owner: Owner) -> None:
    slug = f"full-{uuid.uuid4().hex[:8]}"
    owner.refuse = PolicyViolation("the class server is full")

    async def test(layer: LabRedisChannelLayer, relay: Relay) -> None:
        pages = [Watcher() for _ in range(3)]
        for page in pages:
            await relay.watch(layer, f"lab.{slug}", page, remote.RemotePage(slug))
        owner.go.set()
        await _until(lambda: all(p.errors for p in pages))
        assert all(p.errors == ["POLICY_VIOLATION: the class server is full"] for p in pages)
        assert all(p.full == [] for p in pages)

    _watching(redis, test)


def test_a_lab_that_moved_is_subscribed_to_again_once_for_every_page(redis: str, owner: Owner) -> None:
    slug = f"moved-{uuid.uuid4().hex[:8]}"
    group = f"lab.{slug}"
    owner.go.set()

    async def test(layer: LabRedisChannelLayer, relay: Relay) -> None:
        pages = [Watcher() for _ in range(5)]
        for page in pages:
            await relay.watch(layer, group, page, remote.RemotePage(slug))
        await _until(lambda: all(p.full for p in pages))
        before = owner.ops("subscribe")
        await layer.group_send(group, {"type": MOVED, "group": group, "text": "moved"})
        await _until(lambda: all(len(p.full) == 2 and p.moved == ["moved"] for p in pages))
        assert owner.ops("subscribe") == before + 1

    _watching(redis, test)


def test_a_page_that_saw_a_newer_frame_than_the_full_state_on_its_way_gets_the_next(
    redis: str, owner: Owner
) -> None:
    slug = f"late-{uuid.uuid4().hex[:8]}"
    group = f"lab.{slug}"
    owner.seqs = [3, 6]  # the first full state is drawn at frame 3, the next at frame 6

    async def test(layer: LabRedisChannelLayer, relay: Relay) -> None:
        first, second = Watcher(), Watcher()
        await relay.watch(layer, group, first, remote.RemotePage(slug))
        frame = {"type": FRAME, "group": group, "html": "<b>5</b>", "frame": 5, "after": 4, "run": "r1"}
        await layer.group_send(group, frame)
        await _until(lambda: first.frames == ["<b>5</b>"])
        await relay.watch(layer, group, second, remote.RemotePage(slug))  # it came after frame 5
        owner.go.set()
        await _until(lambda: bool(first.full and second.full))
        assert (first.full, second.full) == (["full 1"], ["full 2"])  # frame 3's would miss frame 5
        assert relay.subscribes == 2

    _watching(redis, test)


def test_a_full_state_that_never_came_is_asked_for_again(
    redis: str, owner: Owner, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(relay_module, "FULL_STATE_S", 0.2)  # not 15 s: the test waits for the retry
    slug = f"lost-{uuid.uuid4().hex[:8]}"
    owner.lose = 1
    owner.go.set()

    async def test(layer: LabRedisChannelLayer, relay: Relay) -> None:
        page = Watcher()
        await relay.watch(layer, f"lab.{slug}", page, remote.RemotePage(slug))
        await _until(lambda: bool(page.full))
        assert page.full == ["full 2"]
        assert relay.subscribes == 2

    _watching(redis, test)
