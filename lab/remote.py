"""The web process's side of labs that run on lab workers (``make run WORKERS=N``).

``lab.labs.live_of`` answers a :class:`RemoteLab` when workers are on: the surface of ``LiveLab`` the
web code reads (state, error, store, zookeeper_outage, asleep, nap_text, spec, group) as the lab's
owner reported it when asked, and the one door for commands, ``act(name, args) -> Future``, carried
to the owner over the channel layer. The owner is the worker holding the lab's lease in ZooKeeper; a
lab nobody owns goes to the first live worker with room in rendezvous order (which claims it), and
when every worker is full the answer is Kafka's POLICY_VIOLATION, "the class server is full".

No lab state lives here: it is in the workers, the channel layer and the database, which is why the
web processes can sit behind any balancer without sticky sessions.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from lab.engine.errors import IllegalState, KafkaError
from lab.runtime.broadcast import group_name
from lab.runtime.courier import Courier
from lab.runtime.ownership import Ownership
from lab.runtime.registry import BrokerSummary, LabSummary
from lab.runtime.spec import LabSpec

ANSWER_S = 15.0  # a worker answers a status at once; a lab it has to start first answers while starting
FORGET_S = 60.0  # a deleted lab's owner stops it (its clients leave their groups) before its data goes
COMMAND = "lab.command"

_lock = threading.Lock()
_courier: Courier | None = None
_ownership: Ownership | None = None


def courier() -> Courier:
    global _courier
    with _lock:
        if _courier is None:
            from channels.layers import DEFAULT_CHANNEL_LAYER, channel_layers

            # A layer of its own: daphne's loop has the default one, and a layer belongs to one loop.
            _courier = Courier(channel_layers.make_backend(DEFAULT_CHANNEL_LAYER), name="web-courier")
        return _courier


def close() -> None:
    """Stop this web process's courier and ZooKeeper client, if it made them (at shutdown: before the
    Redis and ZooKeeper they use stop, so nothing is left reading a server that went)."""
    global _courier, _ownership
    with _lock:
        made, _courier = _courier, None
        zk, _ownership = _ownership, None
    if made is not None:
        made.close()
    if zk is not None:
        zk.close()


def ownership() -> Ownership:
    global _ownership
    with _lock:
        if _ownership is None:
            from lab.labs import instance_id

            _ownership = Ownership(settings.LAB_ZOOKEEPER, instance_id())
        return _ownership


def owner_channel(slug: str) -> tuple[str, str]:
    """(worker name, its channel) of the worker that owns ``slug``, or should: POLICY_VIOLATION when
    every worker is full, IllegalState when none runs."""
    zk = ownership()
    owner = zk.cached().owner(slug)  # no ZooKeeper round trip while nothing moved
    if owner is not None:
        return owner.name, owner.channel
    candidates = zk.candidates(slug)
    if not candidates:
        raise IllegalState("no lab worker is running: the lab cannot start (make run WORKERS=N starts them)")
    return candidates[0].name, candidates[0].channel


def owner_known(slug: str) -> bool:
    """Whether ``owner_channel(slug)`` would answer from this process's cache, with no ZooKeeper read."""
    with _lock:
        zk = _ownership
    return zk is not None and zk.cached().known(slug) is not None


def ask(slug: str, op: str, timeout_s: float = ANSWER_S, **fields: Any) -> Future[Any]:
    """Send ``op`` for lab ``slug`` to its owner; the future holds the answer (or Kafka's error)."""
    future: Future[Any] = Future()
    try:
        _worker, channel = owner_channel(slug)
    except KafkaError as error:
        future.set_exception(error)
        return future
    return courier().request(channel, {"type": COMMAND, "op": op, "slug": slug, **fields}, timeout_s)


def tell(slug: str, op: str, **fields: Any) -> None:
    """Send ``op`` for lab ``slug`` to its owner, with no answer."""
    try:
        _worker, channel = owner_channel(slug)
    except KafkaError:
        return
    courier().send(channel, {"type": COMMAND, "op": op, "slug": slug, **fields})


@dataclass(frozen=True, slots=True)
class NoViews:
    """A lab on a worker has its frames there: code that reads ``live.frame.views`` here finds none and
    draws what a view starts as; the page's websocket gets the owner's full state right after."""

    views: Mapping[str, object] = field(default_factory=dict)


class RemoteLab:
    """A lab run by a lab worker, as the web code sees it."""

    def __init__(self, slug: str, status: dict[str, Any] | None) -> None:
        """``status`` as the owner last told it; None for a lab not asked yet, whose status comes
        with the answer to its first command (``act``): the API asks once, not twice."""
        self.slug = slug
        self.group = group_name(slug)
        self.renderer = None
        self.frame = NoViews()
        # The owner answers commands once the lab runs (they wait while it starts): nothing to wait for here.
        self.ready: Future[None] = Future()
        self.ready.set_result(None)
        if status is not None:
            self._take(status)

    def _take(self, status: dict[str, Any]) -> None:
        self.state: str = status["state"]
        self.error: str = status["error"]
        self.store: str = status["store"]
        self.zookeeper: str = status["zookeeper"]
        self.fallback_reason: str = status["fallback_reason"]
        self.zookeeper_outage: str = status["zookeeper_outage"]
        self.asleep: bool = status["asleep"]
        self.starting_note: str = status["starting_note"]
        self.moved: str = status["moved"]
        self.worker: str = status["worker"]
        self._nap: str = status["nap"]
        self.listeners_json: dict[str, Any] = status["listeners"]
        s = status["spec"]
        self.spec = LabSpec.from_settings(
            slug=s["slug"],
            name=s["name"],
            data_dir=s["data_dir"],
            chroot=s["chroot"],
            brokers=s["brokers"],
            settings=s["settings"],
        )
        self.versioned_spec = (self.spec, int(s.get("version", 0)))

    def nap_text(self) -> str:
        return self._nap

    def act(self, name: str, args: Mapping[str, Any], *, by: str = "") -> Future[Any]:
        """The named command on the lab's owner, asked by ``by``; the future holds its JSON-safe answer."""
        answer = ask(self.slug, "act", settings.LAB_WORKER_TIMEOUT_S, name=name, args=dict(args), by=by)
        future: Future[Any] = Future()

        def done(f: Future[Any]) -> None:
            if future.cancelled():  # the caller gave up first (lab.api.driver.run's own deadline)
                return
            error = f.exception()
            if error is not None:
                future.set_exception(error)
                return
            reply = f.result()
            self._take(reply["status"])
            future.set_result(reply["result"])

        answer.add_done_callback(done)
        return future

    def submit(self, fn: Any) -> Future[Any]:
        future: Future[Any] = Future()
        future.set_exception(
            IllegalState("this control is not a named command yet, so it cannot reach a lab on a worker")
        )
        return future

    def wake(self, why: str) -> None:
        tell(self.slug, "wake", why=why)

    def page(self) -> dict[str, Any]:
        """The page's fragments and what the page template needs, drawn by the owner."""
        reply: dict[str, Any] = ask(self.slug, "page").result(ANSWER_S + 1)
        self._take(reply.pop("status"))
        return reply

    def unsubscribe(self) -> None:
        """Nothing to undo: a RemoteLab is not a page (RemotePage is)."""


class RemotePage:
    """A lab on a worker as a web process's pages watch it: the relay (``lab.relay``) subscribes once
    per process, with a channel of the lab's own. Subscribing is one message to the owner, which counts
    the subscription (a watched lab stays awake), starts the lab if nobody runs it, and sends the lab's
    full state to the channel (drawn from the fragments its frames drew: ``TemplateRenderer``); no
    status is asked first, so a class opening its labs at once waits for nothing but that."""

    def __init__(self, slug: str) -> None:
        self.slug = slug
        self.group = group_name(slug)
        self.channel = ""

    def subscribe(self, channel: str) -> Future[Any]:
        """Subscribe ``channel`` (again: the full state is sent each time); the future fails with
        Kafka's error when the lab cannot run (the class server is full, no worker runs) or
        TimeoutError when its owner does not answer."""
        self.channel = channel
        return ask(self.slug, "subscribe", ANSWER_S, channel=channel, full=True)

    def renew(self) -> None:
        """Sent every LAB_PAGE_RENEW_S while a page watches (a renewal sends nothing back)."""
        tell(self.slug, "subscribe", channel=self.channel)

    def unsubscribe(self) -> None:
        tell(self.slug, "unsubscribe", channel=self.channel)


def remote_lab(slug: str, why: str = "a page or an API call") -> RemoteLab:
    """The lab ``slug`` on its owner (claimed by a worker with room first if nobody runs it), woken."""
    timeout_s = float(settings.LAB_WORKER_TIMEOUT_S)  # a lab the worker must start answers while starting
    # TimeoutError when the owner does not answer: the views say 504, as for a command.
    status = ask(slug, "wake", timeout_s, why=why).result(timeout_s + 1)
    return RemoteLab(slug, status)


def running_labs() -> list[LabSummary]:
    """The labs the workers run, as the home page lists them (from their leases)."""
    out = []
    for lease in ownership().leases():
        summary = lease.summary
        if summary is None:
            continue
        out.append(
            LabSummary(
                name=str(summary["name"]),
                brokers=tuple(
                    BrokerSummary(id=int(b["id"]), state=str(b["state"])) for b in summary["brokers"]
                ),
                controller=summary.get("controller"),
                zookeeper_chroot=summary.get("zookeeper_chroot"),
            )
        )
    return sorted(out, key=lambda s: s.name)


def forget(slug: str) -> None:
    """A deleted lab: its owner stops it, and no worker takes it up again."""
    zk = ownership()
    lease = zk.lease(slug)
    workers = {w.name: w for w in zk.workers()}
    if lease is not None and lease.worker in workers:
        message = {"type": COMMAND, "op": "forget", "slug": slug}
        with contextlib.suppress(KafkaError, TimeoutError):
            courier().request(workers[lease.worker].channel, message, FORGET_S).result(FORGET_S + 1)
    zk.forget(slug)
