"""Which lab worker runs which lab, recorded in ZooKeeper.

Under ``/kafka-lab/<installation id>``, beside the labs' own chroots (a slug never starts with
``_``, so these names cannot meet a lab's):

- ``_workers/<worker>``: one ephemeral node per live worker (JSON: its channel, host, pid, cap);
- ``_owners/<slug>``: the lab's owner, an ephemeral lease made by the worker that runs it. It
  vanishes with the worker's session (a worker killed, or cut off ZooKeeper for its session timeout);
- ``_placed/<slug>``: persistent, the worker that last owned the lab, so a survivor knows a lab whose
  lease vanished must run again, and can say where it came from.

Which worker should own a lab is decided by rendezvous hashing over the live workers (every process
computes the same order from the same names; a worker joining or leaving moves only the labs it
takes or had), skipping workers at their cap (``LAB_MAX_LABS_PER_WORKER``). A lab that runs stays
where it is when a worker joins: labs move only when their owner is gone.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import ConnectionLoss, NodeExistsError, NoNodeError
from kazoo.protocol.states import KazooState

from lab.engine.errors import PolicyViolation

SESSION_TIMEOUT_S = 4.0  # how long a dead worker's labs wait before a survivor takes them
ROOT = "/kafka-lab"

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class Worker:
    name: str
    channel: str
    host: str = ""
    pid: int = 0
    cap: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class Lease:
    slug: str
    worker: str
    since: float  # epoch seconds
    summary: dict[str, Any] | None = None  # the home page's line for the lab (lab.runtime.registry), JSON


def rendezvous(slug: str, workers: Iterable[str]) -> list[str]:
    """``workers`` in the order they should be asked to own ``slug`` (highest random weight first)."""

    def weight(worker: str) -> bytes:
        return hashlib.sha256(f"{slug}\0{worker}".encode()).digest()

    return sorted(workers, key=weight, reverse=True)


def _with_room(slug: str, workers: list[Worker], leases: list[Lease]) -> list[Worker]:
    if not workers:
        return []
    counts: dict[str, int] = {}
    for lease in leases:
        counts[lease.worker] = counts.get(lease.worker, 0) + 1
    by_name = {w.name: w for w in workers}
    room = [by_name[name] for name in rendezvous(slug, by_name) if counts.get(name, 0) < by_name[name].cap]
    if not room:
        raise PolicyViolation(full_message(max(w.cap for w in workers), len(workers)))
    return room


def full_message(cap: int, workers: int) -> str:
    return (
        f"the class server is full: every lab worker ({workers}) already runs its {cap} labs "
        "(LAB_MAX_LABS_PER_WORKER); stop a lab, or start the server with more workers"
    )


class Ownership:
    """One process's view of the workers and the labs' owners (a worker's or the web process's)."""

    def __init__(self, hosts: str, installation: str, *, timeout_s: float = SESSION_TIMEOUT_S) -> None:
        self.base = f"{ROOT}/{installation}"
        self.client = KazooClient(hosts=hosts, timeout=timeout_s)
        self.client.start(timeout=15)
        for folder in ("_workers", "_owners", "_placed"):
            self.client.ensure_path(f"{self.base}/{folder}")
        self.me: Worker | None = None
        self._lock = threading.Lock()
        self._owners: Owners | None = None

    def close(self) -> None:
        """End the session: this worker's registration and leases vanish at once."""
        try:
            self.client.stop()
        finally:
            self.client.close()

    # ------------------------------------------------------------------ reading (any process)

    def workers(self) -> list[Worker]:
        out = []
        for name in self.client.get_children(f"{self.base}/_workers"):
            try:
                data, _ = self.client.get(f"{self.base}/_workers/{name}")
            except NoNodeError:
                continue
            out.append(Worker(name=name, **json.loads(data)))
        return sorted(out, key=lambda w: w.name)

    def lease(self, slug: str) -> Lease | None:
        try:
            data, _ = self.client.get(f"{self.base}/_owners/{slug}")
        except NoNodeError:
            return None
        return Lease(slug=slug, **json.loads(data))

    def leases(self) -> list[Lease]:
        out = []
        for slug in self.client.get_children(f"{self.base}/_owners"):
            lease = self.lease(slug)
            if lease is not None:
                out.append(lease)
        return out

    def placed(self) -> dict[str, str]:
        """Every lab that ran on a worker, with the worker that last owned it."""
        out = {}
        for slug in self.client.get_children(f"{self.base}/_placed"):
            try:
                data, _ = self.client.get(f"{self.base}/_placed/{slug}")
            except NoNodeError:
                continue
            out[slug] = str(json.loads(data).get("worker", ""))
        return out

    def candidates(self, slug: str) -> list[Worker]:
        """The live workers with room, in the order they should be asked to own ``slug``; raises
        POLICY_VIOLATION ("the class server is full") when every one is at its cap."""
        return _with_room(slug, self.workers(), self.leases())

    def forget(self, slug: str) -> None:
        """A deleted lab: no worker should take it up again."""
        for folder in ("_placed", "_owners"):
            with contextlib.suppress(NoNodeError):
                self.client.delete(f"{self.base}/{folder}/{slug}")

    # ------------------------------------------------------------------ a worker's side

    def register(self, name: str, channel: str, cap: int, *, wait_s: float = 30.0) -> Worker:
        """Register this worker (an ephemeral node); a node of the same name left by a worker that died
        lasts until its session expires, so wait for it to go."""
        me = Worker(name=name, channel=channel, host=socket.gethostname(), pid=os.getpid(), cap=cap)
        data = json.dumps({"channel": channel, "host": me.host, "pid": me.pid, "cap": cap}).encode()
        deadline = time.monotonic() + wait_s
        while True:
            try:
                self.client.create(f"{self.base}/_workers/{name}", data, ephemeral=True)
                break
            except NodeExistsError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        self.me = me
        return me

    def owned(self) -> list[str]:
        me = self.me
        return sorted(lease.slug for lease in self.leases() if me is not None and lease.worker == me.name)

    def claim(self, slug: str) -> tuple[bool, str]:
        """Take the lease of ``slug``; (taken, the worker that owned it before, "" if none). Over this
        worker's cap: POLICY_VIOLATION, the class server is full. Taken by another: (False, "")."""
        me = self.me
        assert me is not None, "register() first"
        with self._lock:
            lease = self.lease(slug)
            if lease is not None:
                return lease.worker == me.name, ""
            if len(self.owned()) >= me.cap:
                raise PolicyViolation(full_message(me.cap, len(self.workers())))
            previous = self.placed().get(slug, "")
            data = json.dumps({"worker": me.name, "since": time.time()}).encode()
            try:
                self.client.create(f"{self.base}/_owners/{slug}", data, ephemeral=True)
            except NodeExistsError:
                return False, ""
            placed = json.dumps({"worker": me.name}).encode()
            try:
                self.client.create(f"{self.base}/_placed/{slug}", placed)
            except NodeExistsError:
                self.client.set(f"{self.base}/_placed/{slug}", placed)
            return True, previous if previous != me.name else ""

    def publish(self, slug: str, summary: dict[str, Any]) -> None:
        """Put the lab's summary (its brokers' states, its controller) on its lease, for the home page."""
        me = self.me
        lease = self.lease(slug)
        if me is None or lease is None or lease.worker != me.name:
            return
        data = json.dumps({"worker": me.name, "since": lease.since, "summary": summary}).encode()
        with contextlib.suppress(NoNodeError):
            self.client.set(f"{self.base}/_owners/{slug}", data)

    def release(self, slug: str) -> None:
        me = self.me
        lease = self.lease(slug)
        if me is not None and lease is not None and lease.worker == me.name:
            with contextlib.suppress(NoNodeError):
                self.client.delete(f"{self.base}/_owners/{slug}")

    def orphans(self) -> list[str]:
        """Labs that ran on a worker and have no owner now, which this worker should take up (the
        tree read once: a worker's death may leave many)."""
        me = self.me
        if me is None:
            return []
        workers, leases = self.workers(), self.leases()
        owned = {lease.slug for lease in leases}
        mine: list[str] = []
        for slug in sorted(set(self.placed()) - owned):
            try:
                order = _with_room(slug, workers, leases)
            except PolicyViolation:
                return mine
            if order and order[0].name == me.name:
                mine.append(slug)
                leases = [*leases, Lease(slug=slug, worker=me.name, since=0.0)]  # it counts against the cap
        return mine

    def watch(self, changed: Callable[[], None]) -> None:
        """Call ``changed()`` (on kazoo's thread: it must only note it, never call ZooKeeper) when a
        worker comes or goes or a lease vanishes."""
        self.client.ChildrenWatch(f"{self.base}/_workers", lambda _children: changed())
        self.client.ChildrenWatch(f"{self.base}/_owners", lambda _children: changed())

    def cached(self) -> Owners:
        """This process's view of the workers and the leases, kept by watches (see Owners)."""
        with self._lock:
            if self._owners is None:
                self._owners = Owners(self)
            return self._owners

    def on_session(self, lost: Callable[[], None]) -> None:
        """Call ``lost()`` when this worker's session is gone: its leases with it."""

        def listener(state: KazooState) -> None:
            if state == KazooState.LOST:
                lost()

        self.client.add_listener(listener)


class Owners:
    """Who runs which lab, as a web process asks it for every request: read from ZooKeeper once, then
    kept until ZooKeeper says a worker or a lease came or went (watches on ``_workers`` and
    ``_owners``), or the session's state changed. A request then costs no ZooKeeper round trip."""

    def __init__(self, ownership: Ownership) -> None:
        self._zk = ownership
        self._lock = threading.Lock()
        self._generation = 0  # moves at every change: a read begun before it is not kept
        self._workers: dict[str, Worker] | None = None
        self._leases: dict[str, str] = {}  # slug -> its owner's name
        client = ownership.client
        client.ChildrenWatch(f"{ownership.base}/_workers", self._workers_changed)
        client.ChildrenWatch(f"{ownership.base}/_owners", self._owners_changed)
        client.add_listener(self._session_changed)

    # kazoo's thread: note the change, never call ZooKeeper
    def _workers_changed(self, _children: list[str]) -> None:
        with self._lock:
            self._generation += 1
            self._workers = None

    def _owners_changed(self, _children: list[str]) -> None:
        with self._lock:
            self._generation += 1
            self._leases.clear()

    def _session_changed(self, _state: KazooState) -> None:
        with self._lock:
            self._generation += 1
            self._workers = None
            self._leases.clear()

    def workers(self) -> dict[str, Worker]:
        with self._lock:
            known, generation = self._workers, self._generation
        if known is not None:
            return known
        self._connected()
        read = {w.name: w for w in self._zk.workers()}
        with self._lock:
            if self._generation == generation:
                self._workers = read
        return read

    def _connected(self) -> None:
        """ConnectionLoss at once while ZooKeeper is out (kazoo would hold the read until it is back)."""
        if self._zk.client.state != KazooState.CONNECTED:
            raise ConnectionLoss("ZooKeeper is not answering this process")

    def known(self, slug: str) -> Worker | None:
        """The lab's worker if this cache holds it (None: ``owner`` would read ZooKeeper)."""
        with self._lock:
            workers, name = self._workers, self._leases.get(slug)
        return None if workers is None or name is None else workers.get(name)

    def owner(self, slug: str) -> Worker | None:
        """The live worker holding ``slug``'s lease, or None (ConnectionLoss: ZooKeeper is out and the
        owner was not known)."""
        workers = self.workers()
        with self._lock:
            name, generation = self._leases.get(slug), self._generation
        if name is None:
            self._connected()
            lease = self._zk.lease(slug)
            if lease is None:
                return None
            name = lease.worker
            with self._lock:
                if self._generation == generation:
                    self._leases[slug] = name
        return workers.get(name)
