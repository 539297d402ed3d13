"""Bringing a live lab's cluster up without holding its driver thread.

A start (or a reset) used to be one call on the driver: ``Cluster.create`` waited up to 30 s for the
brokers to register, and up to 10 s per connection while ZooKeeper did not answer, with no frame
published meanwhile. A ``Startup`` is the same work in steps the driver takes once a tick:

1. *connect*: the cluster object is made on a helper thread (its brokers open their logs and their
   ZooKeeper sessions, which block while ZooKeeper does not answer); nothing else touches it until it
   is handed over. A failure to reach ZooKeeper is tried again with a backoff, and ``note`` says so.
2. *register*: the driver runs the engine a slice at a time until the brokers have registered and
   elected a controller (30 s of the lab's time at most, longer while ZooKeeper is out).
3. *topics*: the spec's topics are created and given leaders (30 s of the lab's time at most).

Between steps the driver publishes frames ("starting", with ``note``), and the lab's callers wait.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future

from lab.engine.cluster import Cluster
from lab.engine.errors import InconsistentClusterId, KafkaTimeout
from lab.engine.metadata.store import ConnectionLoss
from lab.engine.scram import ScramCredential
from lab.engine.scram_store import ScramStore
from lab.engine.tasks import Pending
from lab.runtime.spec import TopicSpec

START_MS = 30_000  # Cluster.create's bound: the lab's time for the brokers, then for the topics' leaders
RETRY_S = (1.0, 2.0, 4.0, 8.0)  # between tries to reach ZooKeeper (the last repeats)
SLICE_MS = 1_000  # the most of the lab's time a tick runs while starting, on the memory store


class Startup:
    """One start of a lab's cluster, taken a step per driver tick (``step``)."""

    def __init__(
        self,
        make: Callable[[], Cluster],
        *,
        topics: Sequence[TopicSpec],
        brokers: int,
        users: Mapping[str, Mapping[str, str]] | None = None,
        tick_ms: int,
        hosts: str = "",
        wall: Callable[[], float] = time.monotonic,
    ) -> None:
        self._make = make
        self._topics = tuple(topics)
        self._users = {u: dict(found) for u, found in (users or {}).items()}
        self._users_written: Pending[None] | None = None
        self._brokers = brokers
        self._hosts = hosts
        self._tick_ms = max(1, tick_ms)
        self._wall = wall
        self.phase = "connect"  # connect | register | topics | done
        self.note = ""  # what the start waits for, for the page
        self.cluster: Cluster | None = None
        self._building: Future[Cluster] | None = None
        self._tries = 0
        self._next_try = 0.0
        self._deadline_ms = 0
        self._abandoned = False
        self._lock = threading.Lock()

    def step(self) -> bool:
        """Take the next step (driver thread); True once the cluster runs with its topics. Raises why
        the start failed (the cluster, if any, is then closed)."""
        try:
            if self.phase == "connect":
                self._connect()
            if self.phase == "register":
                self._register()
            if self.phase == "topics":
                self._wait_for_topics()
        except Exception:
            self.abandon()
            raise
        return self.phase == "done"

    def abandon(self) -> None:
        """The lab stops (or the start failed): close the cluster, now or when its helper has made it."""
        with self._lock:
            self._abandoned = True
            cluster, self.cluster = self.cluster, None
            building = self._building
        if cluster is not None:
            cluster.close(delete_data=False)
        elif building is not None:
            building.add_done_callback(_close_made)

    # ------------------------------------------------------------------ the steps

    def _connect(self) -> None:
        building = self._building
        if building is None:
            if self._wall() < self._next_try:
                return
            self._tries += 1
            building = self._building = Future()
            threading.Thread(target=self._build, args=(building,), name="lab-start", daemon=True).start()
            return
        if not building.done():
            return
        self._building = None
        error = building.exception()
        if isinstance(error, ConnectionLoss):  # ZooKeeper did not answer: try again, and say so
            wait = RETRY_S[min(self._tries, len(RETRY_S)) - 1]
            self._next_try = self._wall() + wait
            tries = "once" if self._tries == 1 else f"{self._tries} times"
            self.note = (
                f"ZooKeeper at {self._hosts} does not answer ({error}); "
                f"the lab tries again in {wait:g} s (tried {tries})"
            )
            return
        if error is not None:
            raise error
        cluster = building.result()
        with self._lock:
            if self._abandoned:
                cluster.close(delete_data=False)
                return
            self.cluster = cluster
        self.note = "the brokers recover their logs and register"
        self._deadline_ms = cluster.now_ms + START_MS
        self.phase = "register"

    def _build(self, building: Future[Cluster]) -> None:
        try:
            building.set_result(self._make())
        except BaseException as error:  # the driver reads it from the future
            building.set_exception(error)

    def _run(self, cluster: Cluster, until: Callable[[], object]) -> None:
        """Run the engine a slice: a tick's worth of wall time on ZooKeeper, a second of lab time in memory."""
        cluster.run_until_true(lambda: bool(until()), self._tick_ms if cluster.store.realtime else SLICE_MS)

    def _register(self) -> None:
        cluster = self.cluster
        assert cluster is not None
        self._run(cluster, cluster.started)
        started = cluster.started()
        if isinstance(started, str):
            raise InconsistentClusterId(started)
        if not started:
            outage = cluster.store.outage()
            if outage:
                self.note = f"{outage}; the brokers register when it answers"
                self._deadline_ms = cluster.now_ms + START_MS
            elif cluster.now_ms >= self._deadline_ms:
                raise KafkaTimeout(
                    f"timed out after {START_MS} ms waiting for the brokers to register and elect a controller"
                )
            return
        for topic in self._topics:
            if topic.name not in cluster.topics():
                cluster.create_topic(
                    topic.name,
                    partitions=topic.partitions,
                    replication_factor=min(topic.replication_factor, self._brokers),
                    config=dict(topic.config),
                    assignment=topic.assignment(self._brokers),  # a reassignment's replicas
                    wait=False,
                    restoring=True,
                )
        if self._users:  # the lab runs once they are written, so a client's first login finds them
            self._users_written = cluster.begin_scram(self._write_users, "the lab's users")
        self.note = "the topics' partitions elect their leaders"
        self._deadline_ms = cluster.now_ms + START_MS
        self.phase = "topics"

    async def _write_users(self, store: ScramStore) -> None:
        """The spec's users, as credentials a fresh cluster lacks (one that has them keeps its own)."""
        for user, found in sorted(self._users.items()):
            have = await store.credentials(user)
            for mechanism, text in sorted(found.items()):
                if mechanism not in have:
                    await store.upsert(user, ScramCredential.from_text(mechanism, text))

    def _wait_for_topics(self) -> None:
        cluster = self.cluster
        assert cluster is not None

        def usable() -> bool:
            written = self._users_written is None or self._users_written.done()
            return written and all(cluster.topic_usable(t.name) for t in self._topics)

        if not usable():
            self._run(cluster, usable)
        if usable():
            self.note = ""
            self.phase = "done"
        elif cluster.now_ms >= self._deadline_ms:
            names = ", ".join(t.name for t in self._topics if not cluster.topic_usable(t.name))
            if not names:
                raise KafkaTimeout(f"timed out after {START_MS} ms waiting for the lab's users to be written")
            raise KafkaTimeout(
                f"timed out after {START_MS} ms waiting for every partition of {names} to have a leader"
            )


def _close_made(building: Future[Cluster]) -> None:
    if building.exception() is None:
        building.result().close(delete_data=False)
