"""One harness per metadata store, so the contract tests run unchanged on both.

The memory harness advances the scheduler event by event (virtual time, no
waiting); the ZooKeeper harness paces virtual time on the wall clock and
drains kazoo's answers, against the real server of the ``zookeeper`` fixture.
Each ZooKeeper harness works under its own chroot and deletes it afterwards.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pytest

from lab.engine.metadata.memory import MemoryStore
from lab.engine.metadata.store import MetadataStore, Session, SessionState
from lab.engine.scheduler import Scheduler
from lab.engine.tasks import Pending, Task

T = TypeVar("T")

_chroots = itertools.count()


@dataclass
class Client:
    """A session and every state its owner was told, in order."""

    session: Session
    states: list[SessionState] = field(default_factory=list)


class Harness:
    """Drive one store (and sibling stores on the same server) from a test body."""

    kind = ""

    def __init__(self, store: MetadataStore, scheduler: Scheduler) -> None:
        self.store = store
        self.scheduler = scheduler
        self.stores: list[MetadataStore] = [store]

    @property
    def now_ms(self) -> int:
        return self.scheduler.now_ms

    def open(self, name: str, timeout_ms: int = 1500, store: MetadataStore | None = None) -> Client:
        client = Client(session=None)  # type: ignore[arg-type]
        client.session = (store or self.store).open_session(
            name=name, timeout_ms=timeout_ms, on_state=client.states.append
        )
        return client

    def _advance(self, until_ms: int, stop: Callable[[], bool]) -> bool:
        raise NotImplementedError

    def wait(self, pending: Pending[T], within_ms: int = 5000) -> T:
        """Run until ``pending`` is done; its value, or its error raised."""
        if not self._advance(self.now_ms + within_ms, pending.done):
            raise AssertionError(f"{pending!r} not done within {within_ms} ms")
        return pending.result()

    def run(self, coro: Coroutine[Any, Any, T], within_ms: int = 5000) -> T:
        return self.wait(Task.start(coro).outcome, within_ms)

    def run_for(self, ms: int) -> None:
        self._advance(self.now_ms + ms, lambda: False)

    def until(self, predicate: Callable[[], bool], within_ms: int, what: str = "condition") -> None:
        if not self._advance(self.now_ms + within_ms, predicate):
            raise AssertionError(f"{what}: not true within {within_ms} ms")

    def eventually(
        self, check: Callable[[], Pending[T]], ok: Callable[[T], bool], within_ms: int, every_ms: int = 100
    ) -> T:
        """Poll ``check()`` until ``ok`` holds for its value."""
        deadline = self.now_ms + within_ms
        while True:
            value = self.wait(check())
            if ok(value):
                return value
            if self.now_ms >= deadline:
                raise AssertionError(f"last value {value!r} still not ok after {within_ms} ms")
            self.run_for(every_ms)

    def sibling(self) -> MetadataStore:
        """Another store on the same server (its own chroot on ZooKeeper)."""
        raise NotImplementedError

    def close(self) -> None:
        for store in self.stores:
            store.close()


class MemoryHarness(Harness):
    kind = "memory"

    def __init__(self) -> None:
        scheduler = Scheduler(seed=7)
        super().__init__(MemoryStore(scheduler, latency_ms=1), scheduler)

    def _advance(self, until_ms: int, stop: Callable[[], bool]) -> bool:
        while not stop():
            nxt = self.scheduler.next_time()
            if nxt is None or nxt > until_ms:
                self.scheduler.run_until(until_ms)
                return stop()
            self.scheduler.step()
        return True

    def sibling(self) -> MetadataStore:
        store = MemoryStore(self.scheduler, latency_ms=1)
        self.stores.append(store)
        return store


class ZooKeeperHarness(Harness):
    kind = "zookeeper"

    def __init__(self, hosts: str, label: str) -> None:
        from lab.engine.metadata.zookeeper import ZooKeeperStore

        self.hosts = hosts
        self.label = label
        scheduler = Scheduler(seed=7)
        super().__init__(ZooKeeperStore(hosts, chroot=self._chroot()), scheduler)
        self.store.begin_pacing(scheduler.now_ms)

    def _chroot(self) -> str:
        return f"/kafka-lab-test/{self.label}-{os.getpid()}-{next(_chroots)}"

    def _advance(self, until_ms: int, stop: Callable[[], bool]) -> bool:
        while True:
            for store in self.stores:
                store.drain()
            if stop():
                return True
            if self.now_ms >= until_ms:
                return False
            target = until_ms
            nxt = self.scheduler.next_time()
            if nxt is not None:
                target = max(self.now_ms, min(target, nxt))
            if len(self.stores) > 1:  # pace() wakes for its own store only: look at the others often
                target = min(target, self.now_ms + 5)
            self.scheduler.run_until(self.store.pace(target))

    def sibling(self) -> MetadataStore:
        from lab.engine.metadata.zookeeper import ZooKeeperStore

        store = ZooKeeperStore(self.hosts, chroot=self._chroot())
        self.stores.append(store)
        return store

    def close(self) -> None:
        from lab.engine.metadata.zookeeper import ZooKeeperStore

        super().close()
        for store in self.stores:
            assert isinstance(store, ZooKeeperStore)
            store.delete_chroot()


@pytest.fixture(params=["memory", pytest.param("zookeeper", marks=pytest.mark.zookeeper)])
def harness(request: pytest.FixtureRequest) -> Iterator[Harness]:
    h: Harness
    if request.param == "memory":
        h = MemoryHarness()
    else:
        hosts = request.getfixturevalue("zookeeper")
        h = ZooKeeperHarness(hosts, label=request.node.originalname)
    try:
        yield h
    finally:
        h.close()
