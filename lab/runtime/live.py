"""A live lab: a Cluster, the one thread that drives it, and the frames it publishes.

The Cluster is not thread-safe, so only the driver thread touches it: it builds the
cluster, runs the commands web code submits (each answers through a
``concurrent.futures.Future``), advances virtual time at the clock's rate, and after
each frame publishes what changed. Web code reads ``frame``: the last published,
immutable view models.

A frame is coalesced: the driver advances the engine every ``tick_s`` but publishes
at most every ``publish_interval_s``, and only the fragments whose view model changed.
When nothing changed, nothing is sent.
"""

from __future__ import annotations

import gc
import json
import logging
import math
import secrets
import shutil
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from concurrent import futures
from concurrent.futures import Future
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from lab.engine.acl import AclBinding
from lab.engine.admin import TopicChange
from lab.engine.cluster import Cluster
from lab.engine.errors import IllegalArgument, IllegalState, KafkaError, KafkaTimeout, ZooKeeperNotAvailable
from lab.engine.events import Event
from lab.engine.scram import ScramCredential
from lab.engine.tasks import Pending
from lab.runtime import actions, tls
from lab.runtime.broadcast import Broadcaster, broadcaster, group_name
from lab.runtime.budget import FrameBudget, frame_budget
from lab.runtime.changes import state_key, tree_key
from lab.runtime.clock import LabClock
from lab.runtime.commands.reads import INTERNAL_PREFIX
from lab.runtime.journal import CommandJournal
from lab.runtime.listeners import Listeners, ports_by_protocol, server_properties
from lab.runtime.registry import BrokerSummary, LabSummary, register_lab, unregister_lab, update_lab
from lab.runtime.sleep import SLEEP_AFTER_S, Nap
from lab.runtime.spec import ClientSpec, LabSpec, TopicSpec, acl_entry
from lab.runtime.starting import Startup
from lab.visuals.charts import Sample
from lab.visuals.clock import LabStatus
from lab.visuals.frame import FrameInputs, Memo, build
from lab.wire.connection import WireServer

log = logging.getLogger(__name__)

LISTEN_WAIT_S = 5.0  # the most a start waits for its listeners' sockets to listen
MEMORY_STORE_LOGS = "memory-store"  # where a lab on the memory store keeps its logs, under its data dir

SAMPLES_KEPT = 1200  # two minutes of frames at 10 a second
EVENTS_KEPT = 400
REBALANCES_KEPT = 200
GOODBYE_MS = 200  # virtual time for LeaveGroup requests to arrive when the server stops
MAX_FRAME_MS = 2_000  # the most virtual time one tick runs; beyond it the clock re-anchors
# A quiet lab (lab.runtime.changes' key did not move in the last frame slot, nothing awaited) ticks
# this often instead of every frame slot: what anyone sends wakes it at once, and idle brokers'
# routine (followers' empty fetches, checkpoints) runs in one batch instead of ten.
QUIET_TICK_S = 0.5
# The ZooKeeper tree is read again once the lab changed (lab.runtime.changes); in a quiet lab only
# this often, for what changes in ZooKeeper without the lab (a person with zkCli).
TREE_QUIET_INTERVAL_S = 30.0
# However costly its frames and busy its process (lab.runtime.budget), a lab that changes gets a frame
# this often.
SLOWEST_FRAMES_S = 1.0


# Why a broker's listener closed, by the broker's state (the timeline says it to the clients dropped).
_GONE = {
    "dead": "was killed",
    "stopped": "was stopped",
    "shutting_down": "is shutting down",
    "starting": "is starting",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Listen:
    """Where a lab's Kafka listeners bind, and the host clients are told to reach them at."""

    bind_host: str = "127.0.0.1"
    advertised_host: str = "127.0.0.1"


class Renderer(Protocol):
    def fragment(self, key: str, views: Mapping[str, object]) -> str:
        """One fragment as out-of-band HTML, from the frame's views."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class FrameMeta:
    seq: int
    time_ms: int
    made_at: float  # wall clock (epoch seconds) when the state was read from the engine
    event_at: float  # wall clock of the first engine step since the frame before


@dataclass(frozen=True, slots=True, kw_only=True)
class Frame:
    seq: int
    views: Mapping[str, object]
    meta: FrameMeta


def json_args(args: Mapping[str, Any]) -> dict[str, Any]:
    """A command's arguments as JSON carries them (what can travel to another process and be journalled):
    IllegalArgument, named, for anything else (a Python object, a tuple, a key that is not text)."""
    try:
        text = json.dumps(dict(args), allow_nan=False)
    except (TypeError, ValueError) as error:
        raise IllegalArgument(f"a command's arguments are JSON values: {error}") from None
    loaded: dict[str, Any] = json.loads(text)
    if loaded != dict(args):
        raise IllegalArgument("a command's arguments are JSON values: lists, not tuples; text keys")
    return loaded


class LiveLab:
    """One running lab. ``start()`` it, ``submit``/``act`` on it, read ``frame``, ``stop()`` it."""

    def __init__(
        self,
        spec: LabSpec,
        *,
        zookeeper: str | None,
        fallback_reason: str = "",
        renderer: Renderer | None = None,
        broadcast: Broadcaster | None = None,
        tick_s: float = 0.02,
        publish_interval_s: float = 0.1,
        tree_interval_s: float = 1.0,
        quiet_tick_s: float = QUIET_TICK_S,
        wall: Callable[[], float] = time.monotonic,
        listen: Listen | None = None,
        sleep_after_s: float | None = SLEEP_AFTER_S,
        on_spec_change: Callable[[LiveLab], None] | None = None,
        budget: FrameBudget | None = None,
    ) -> None:
        # The spec and its version, as one value (another thread reads both at once): a save says which
        # version it writes, and the lab's row keeps the newest (``lab.labs.save_spec``).
        self._versioned: tuple[LabSpec, int] = (spec, 0)
        self._spec = spec
        # Called (driver thread) when the spec changed with no command to save it after: an ACL or a
        # user a Kafka client made. The Django side saves the spec off this thread.
        self.on_spec_change = on_spec_change
        self.zookeeper = zookeeper
        self.fallback_reason = fallback_reason
        self.renderer = renderer
        self.broadcast = broadcast or broadcaster
        self.group = group_name(spec.slug)
        # Frames are numbered per run of the lab: a page tells a frame of this run from one of the run
        # a worker had before it stopped (whose numbers start again).
        self.run_id = secrets.token_hex(4)
        self.tick_s = tick_s
        self.publish_interval_s = publish_interval_s
        # The process's frame share, which its labs divide (lab.runtime.budget).
        self.budget = budget or frame_budget
        self.tree_interval_s = tree_interval_s
        self.quiet_tick_s = quiet_tick_s
        self.clock = LabClock(rate=spec.rate, wall=wall)
        # Sleeping (lab.runtime.sleep): None never sleeps. ``_nudged`` says why someone needs the
        # lab (set from any thread under ``_cond``); the driver reads the rest.
        self.sleep_after_s = sleep_after_s
        self._wall = wall
        self.asleep = False
        self.nap: Nap | None = None  # the current or the last sleep
        self._nudged = ""
        self._idle_since: float | None = None
        self._busy_hooks: dict[str, Callable[[], bool]] = {}
        # Frames are built only when this key (lab.runtime.changes) moved, or a page asked for one.
        self._published_key: object = None
        self._fresh_frame = False
        self._quiet = False  # the last frame slot found nothing changed
        self._arrived = False  # ZooKeeper sent something: the next tick is now, quiet or not
        self.ticks = 0  # driver loop iterations, for tests that wait for "a few ticks later"
        self.ready: Future[None] = Future()
        self.state = "starting"
        self.error = ""
        # "ZooKeeper is not answering ..." while the lab cannot reach it, "" otherwise: set by the
        # driver every tick, read by pages and the API from any thread.
        self.zookeeper_outage = ""
        self._cluster: Cluster | None = None
        self._thread: threading.Thread | None = None
        self._cond = threading.Condition()
        self.commands = CommandJournal(spec.data_dir)  # what changed the lab, for a replay
        self._inbox: deque[tuple[actions.Act, Future[Any]]] = deque()
        self._posted: deque[Callable[[], None]] = deque()  # listeners' work: frames in, in order
        self.listen = listen
        self.wire: WireServer | None = None
        self.listeners: Listeners | None = None
        self._waiting: list[tuple[actions.Waiting, Future[Any]]] = []
        # While the cluster starts (``_starting``), commands wait here; what it waits for, for the page.
        self._startup: Startup | None = None
        self._deferred: list[tuple[actions.Act, Future[Any]]] = []
        self.starting_note = ""
        self._stopping = False
        self._lock = threading.Lock()  # guards the published frame and the subscriber count
        self._frame = Frame(
            seq=0, views={}, meta=FrameMeta(seq=0, time_ms=0, made_at=time.time(), event_at=time.time())
        )
        # The tick in which something last changed the lab other than its clock (a command run, a Kafka
        # client's request, an answer given): the last frame's snapshot answers a read only if it was
        # taken in a later tick, so a read after an answer sees at least what a read queued behind
        # it would (the engine one tick further on).
        self._changed_tick = 0
        self._last_snapshot: tuple[dict[str, Any], int, float] | None = None  # (snapshot, tick, when)
        self._subscribers = 0
        # Extensions (exercise checks, scenario players) hook in here instead of editing the loop:
        # tick hooks run on the driver thread after each advance; view hooks add view models to
        # every frame (rendered by a fragment registered with the renderer).
        self._tick_hooks: dict[str, Callable[[LiveLab], None]] = {}
        self._view_hooks: dict[str, Callable[[LiveLab], object]] = {}
        self._reset_state()
        # A first frame before the cluster exists, so a page can be drawn while the lab starts.
        self._frame = Frame(
            seq=0, views={**build(self._collect()), "frame": self._frame.meta}, meta=self._frame.meta
        )

    def _reset_state(self) -> None:
        self._events: deque[Event] = deque(maxlen=EVENTS_KEPT)
        self._rebalances: deque[Event] = deque(maxlen=REBALANCES_KEPT)
        self._journal_seq = 0
        self._samples: deque[Sample] = deque(maxlen=SAMPLES_KEPT)
        self._tree: list[dict[str, Any]] | None = None
        self._tree_prev: list[dict[str, Any]] | None = None
        self._tree_error: str | None = None
        self._tree_at = -math.inf
        self._tree_reading: Pending[list[dict[str, Any]]] | None = None  # a read in flight
        self._tree_key: object = None  # lab.runtime.changes.tree_key when the tree last read began
        self._tree_reading_key: object = None
        self._tree_checked_at = -math.inf
        self._last_publish = 0.0
        self._memo = Memo()  # the views a frame may take over from the last one
        self._events_seen: tuple[Event, ...] = ()
        self._first_step_at: float | None = None
        self._produced = 0
        self._consumed = 0
        self._leo_seen: dict[str, int] = {}
        self._out_seen: dict[int, tuple[int, int]] = {}  # broker -> (id of its Broker object, count)
        self._producers: dict[str, Any] = {}
        self._clients: dict[str, Any] = {}
        self._summary: LabSummary | None = None

    # ------------------------------------------------------------------ what web code calls

    @property
    def slug(self) -> str:
        return self._spec.slug

    @property
    def spec(self) -> LabSpec:
        return self._spec

    @property
    def versioned_spec(self) -> tuple[LabSpec, int]:
        """The spec and its version, read together: a later change has a higher version, also after the
        lab started again in another process (the version is the wall clock's, in ns, when it changed)."""
        return self._versioned

    @property
    def _spec(self) -> LabSpec:
        return self._versioned[0]

    @_spec.setter
    def _spec(self, spec: LabSpec) -> None:
        old, version = self._versioned
        if spec is not old:
            self._versioned = (spec, max(version + 1, time.time_ns()))

    @property
    def store(self) -> str:
        return "zookeeper" if self.zookeeper else "memory"

    @property
    def frame(self) -> Frame:
        return self._frame

    @property
    def cluster(self) -> Cluster:
        """The engine: only for code running on the driver thread (actions, submitted functions)."""
        if threading.current_thread() is not self._thread:
            raise IllegalState(
                "only the lab's driver thread may touch its cluster; submit() a function instead"
            )
        if self._cluster is None:
            raise IllegalState(
                f"lab {self.slug} has no cluster ({self.state}{': ' + self.error if self.error else ''})"
            )
        return self._cluster

    def start(self) -> LiveLab:
        if self._thread is not None:
            raise IllegalState(f"lab {self.slug} is already started")
        self._thread = threading.Thread(target=self._run, name=f"lab-{self.slug}", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout_s: float = 30.0) -> None:
        """Stop the driver and close the cluster, keeping its data for the next start."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout_s)

    def submit(self, fn: actions.Act) -> Future[Any]:
        """Run ``fn(self)`` on the driver thread at its next tick; the future holds its result or error."""
        future: Future[Any] = Future()
        with self._cond:
            if self._stopping:
                future.set_exception(IllegalState(f"lab {self.slug} is stopping"))
                return future
            self._inbox.append((fn, future))
            self._nudged = self._nudged or "an API call or a command"
            self._cond.notify_all()
        return future

    def post(self, fn: Callable[[], None]) -> None:
        """Run ``fn()`` on the driver thread soon, in the order posted, with no answer (listeners)."""
        with self._cond:
            if self._stopping:
                return
            self._posted.append(fn)
            self._nudged = self._nudged or "a Kafka client"
            self._cond.notify_all()

    def act(self, name: str, args: Mapping[str, Any], *, by: str = "") -> Future[Any]:
        """Command ``name`` (``lab.runtime.actions``) with JSON ``args``, asked by ``by`` (a user name):
        the one door pages and the API use. Bad arguments fail the future at once; a command that ran
        and changed the lab is kept in its journal (``lab.runtime.journal``)."""
        try:
            args = json_args(args)
            fn = actions.plan(name, args)
        except KafkaError as error:
            future: Future[Any] = Future()
            future.set_exception(error)
            return future
        if actions.is_read(name):
            if name == "snapshot":
                snapshot = self._recent_snapshot()
                if snapshot is not None:  # the last frame's: no wait behind the lab's queue
                    answered: Future[Any] = Future()
                    answered.set_result(snapshot)
                    return answered
            return self.submit(fn)

        def run(lab: LiveLab) -> Any:
            cluster = lab._cluster  # None for a failed lab, which a reset may still start again
            at_ms = 0 if cluster is None else cluster.now_ms
            result = fn(lab)  # refused: nothing changed, nothing kept
            if cluster is not None and lab._cluster is cluster:  # a reset journals afresh
                lab.commands.append(at_ms=at_ms, name=name, args=args, by=by)
            return result

        return self.submit(run)

    def subscribe(self) -> Frame:
        """A page connects: count it, wake the lab, and return the frame to send it in full (a
        fresh one follows at the next tick: the last one may be old, the lab having been idle)."""
        with self._lock:
            self._subscribers += 1
            frame = self._frame
        self.wake("a page opened")
        return frame

    def _recent_snapshot(self) -> dict[str, Any] | None:
        """The last frame's snapshot, if it is the lab as of at most a frame ago (nothing but the clock
        changed it since), else None."""
        with self._lock:
            last = self._last_snapshot
            changed_tick = self._changed_tick
        if last is None or self.state != "running" or self.asleep or self._stopping:
            return None
        snapshot, tick, at = last
        fresh_s = self._frame_interval() + self.publish_interval_s
        if tick <= changed_tick or time.monotonic() - at > fresh_s:
            return None
        return snapshot

    def _changed(self) -> None:
        with self._lock:
            self._changed_tick = self.ticks

    def nap_text(self) -> str:
        """What the lab's current or last sleep was ("" if it never slept), for the page and the API."""
        nap = self.nap
        return nap.text(self._wall()) if nap is not None else ""

    def wake(self, why: str) -> None:
        """Someone needs the lab (``why``, for the timeline): a sleeping lab wakes, an idle one waits
        the grace period again, and a fresh frame is made."""
        with self._cond:
            self._nudged = why
            self._fresh_frame = True
            self._cond.notify_all()

    def unsubscribe(self) -> None:
        with self._lock:
            self._subscribers = max(0, self._subscribers - 1)

    @property
    def subscribers(self) -> int:
        with self._lock:
            return self._subscribers

    def render_full(self, frame: Frame | None = None) -> str:
        """Every fragment of ``frame`` (default: the latest), for a page that just connected."""
        frame = frame or self._frame
        if self.renderer is None:
            return ""
        keys = list(frame.views)
        return "".join(self.renderer.fragment(k, frame.views) for k in keys)

    def full_state(self) -> dict[str, Any]:
        """The latest frame drawn whole, as the message a page that connects (or missed a frame) gets."""
        frame = self._frame
        html = self.render_full(frame)
        return {"type": "lab.frame", "html": html, "frame": frame.seq, "run": self.run_id, "full": True}

    def wait_for_frame(self, predicate: Callable[[Frame], bool], timeout_s: float = 10.0) -> Frame:
        """Block until a published frame satisfies ``predicate`` (for tests and scripts)."""
        deadline = time.monotonic() + timeout_s
        while True:
            frame = self._frame
            if predicate(frame):
                return frame
            if time.monotonic() >= deadline:
                raise KafkaTimeout(
                    f"no frame of lab {self.slug} matched within {timeout_s} s (last: {frame.seq})"
                )
            with self._cond:
                self._cond.wait(0.02)

    # ------------------------------------------------------------------ for actions (driver thread)

    def update_spec(self, spec: LabSpec) -> None:
        self._spec = spec

    # What ZooKeeper took, whoever wrote it (the page, the API, a scenario, a Kafka client's CreateAcls,
    # DeleteAcls or AlterUserScramCredentials), goes into the spec: one path for every door.

    def _acls_changed(self, added: Sequence[AclBinding], removed: Sequence[AclBinding]) -> None:
        spec = self._spec
        for binding in added:
            if (entry := acl_entry(binding)) not in spec.acls:
                spec = spec.with_acl(entry)
        if removed:
            spec = spec.without_acls([acl_entry(b) for b in removed])
        self._spec_changed(spec)

    def _credential_changed(self, user: str, mechanism: str, credential: ScramCredential | None) -> None:
        spec = self._spec
        if credential is not None:
            spec = spec.with_user(user, mechanism, credential.to_text())
        else:
            spec = spec.without_user(user, mechanism)
        self._spec_changed(spec)

    def _topic_changed(self, change: TopicChange) -> None:
        """A topic's new shape (or its deletion) into the spec, in its place; internal topics are made on
        first use, never kept."""
        if change.topic.startswith(INTERNAL_PREFIX):
            return
        spec = self._spec
        if change.deleted:
            self._spec_changed(replace(spec, topics=tuple(t for t in spec.topics if t.name != change.topic)))
            return
        known = next((t for t in spec.topics if t.name == change.topic), None)
        if change.config is not None:
            config = dict(change.config)
        elif known is not None:
            config = dict(known.config)
        else:  # grown before the spec knew it: the overrides as the controller has them
            ctx = self._cluster.ctx.controller_context if self._cluster is not None else None
            config = dict(ctx.topic_configs.get(change.topic, {})) if ctx is not None else {}
        # Replicas a reassignment placed are kept, and follow the partitions added after it.
        replicas = known.replicas if known is not None else ()
        if change.replicas is not None and (change.reassigned or replicas):
            replicas = tuple(tuple(change.replicas[q]) for q in sorted(change.replicas))
        shape = TopicSpec(
            name=change.topic,
            partitions=change.partitions,
            replication_factor=change.replication_factor,
            config=config,
            replicas=replicas if len(replicas) == change.partitions else (),
        )
        topics = tuple(shape if t.name == change.topic else t for t in spec.topics)
        self._spec_changed(replace(spec, topics=topics if known is not None else (*topics, shape)))

    def _spec_changed(self, spec: LabSpec) -> None:
        if spec == self._spec:
            return
        self._spec = spec
        if self.on_spec_change is not None:
            try:
                self.on_spec_change(self)
            except Exception:  # saving is the Django side's; the lab carries on
                log.exception("lab %s: the spec could not be saved", self.slug)

    def producer(self, acks: str) -> Any:
        producer = self._producers.get(acks)
        if producer is None or producer.closed:
            producer = self.cluster.producer(acks=acks, client_id=f"dashboard-acks-{acks}")
            self._producers[acks] = producer
        return producer

    def add_client(self, client: ClientSpec, *, record: bool = True) -> str:
        cluster = self.cluster
        for topic in client.topics:
            if topic not in cluster.topics():
                raise IllegalArgument(f"there is no topic {topic!r}; create it first")
        name = client.start(cluster)
        self._clients[name] = cluster.simulated[name]
        if record:
            self._spec = self._spec.with_client(replace(client, name=name))
        return name

    def client_op(self, name: str, op: str) -> str:
        cluster = self.cluster
        simulated: dict[str, Any] = getattr(cluster, "simulated", self._clients)
        if op == "remove":
            cluster.remove_client(name)
            self._clients.pop(name, None)
            self._spec = self._spec.without_client(name)
            return f"{name} removed."
        obj = simulated.get(name)
        if obj is None:
            raise IllegalArgument(f"there is no simulated client named {name!r}")
        if obj.state != "running":
            raise IllegalState(f"{name} is already {obj.state}")
        getattr(obj, op)()
        self._spec = self._spec.without_client(name)
        return f"{name} {'stopped' if op == 'stop' else 'crashed'}."

    def reset_now(self) -> None:
        """Throw the cluster away with its data and znodes, and begin building it afresh (driver thread):
        ``state`` is "resetting" until the brokers are up with the spec's topics; calls wait meanwhile."""
        outage = self._outage()
        if outage:
            raise ZooKeeperNotAvailable(
                f"{outage}; the lab cannot be reset until it answers (its znodes are deleted with its data)"
            )
        self.state = "resetting"
        self._close_listeners("the lab was reset")
        self._close_cluster(delete=True)
        self._reset_state()
        self._build()  # the driver takes the start's steps from its next tick: the lab shows "resetting"

    # ------------------------------------------------------------------ extensions

    def add_tick_hook(
        self, name: str, hook: Callable[[LiveLab], None], *, busy: Callable[[], bool] | None = None
    ) -> None:
        """Run ``hook(lab)`` on the driver thread after every advance of the clock (replaces ``name``).
        The lab does not sleep while ``busy()`` (default: while the hook is there)."""
        self._tick_hooks[name] = hook
        self._busy_hooks[name] = busy or (lambda: True)

    def remove_tick_hook(self, name: str) -> None:
        self._tick_hooks.pop(name, None)
        self._busy_hooks.pop(name, None)

    def add_view(self, key: str, view: Callable[[LiveLab], object]) -> None:
        """Add ``view(lab)`` to every frame under ``key`` (driver thread; a renderer fragment draws it)."""
        self._view_hooks[key] = view

    def remove_view(self, key: str) -> None:
        self._view_hooks.pop(key, None)

    def _run_tick_hooks(self) -> None:
        for name, hook in list(self._tick_hooks.items()):
            try:
                hook(self)
            except ZooKeeperNotAvailable:
                continue  # what it needs waits for ZooKeeper: it runs again next tick
            except Exception:
                log.exception("lab %s: tick hook %s failed; it is removed", self.slug, name)
                self.remove_tick_hook(name)

    def _hooked_views(self) -> dict[str, object]:
        out: dict[str, object] = {}
        for key, view in list(self._view_hooks.items()):
            try:
                out[key] = view(self)
            except Exception:
                log.exception("lab %s: view hook %s failed; it is removed", self.slug, key)
                self._view_hooks.pop(key, None)
        return out

    # ------------------------------------------------------------------ the driver

    def _run(self) -> None:
        self._maybe_publish()  # "starting", for pages already watching
        try:
            self._build()
        except Exception as error:  # the page shows why; a reset tries again
            self._failed(error)
        try:
            while True:
                with self._cond:
                    if not (self._inbox or self._posted or self._stopping or self._arrived or self._nudged):
                        self._cond.wait(self._next_tick_in())
                    if self._stopping:
                        break
                    work = list(self._inbox)
                    self._inbox.clear()
                    posted = list(self._posted)
                    self._posted.clear()
                    nudged, self._nudged = self._nudged, ""
                    self._arrived = False
                self.ticks += 1
                self.zookeeper_outage = self._outage()
                if self._startup is not None:
                    self._starting()
                if self._cluster is not None:
                    for job in posted:
                        self._run_posted(job)
                self._run_commands(work)
                if self._cluster is not None and self.state == "running":
                    try:
                        self._advance()
                        self._settle_waiting()
                        self._run_tick_hooks()
                        self._sync_listeners()
                        self._maybe_poll_tree()
                    except Exception as error:
                        log.exception("lab %s: the engine failed", self.slug)
                        self._failed(error)
                else:
                    self._settle_waiting()  # a reset's answer, or what waited on a cluster now gone
                self._maybe_publish()
                self._maybe_sleep(active=bool(work or posted or nudged))
        finally:
            if self._startup is not None:
                self._startup.abandon()
                self._startup = self._cluster = None
            self._close_listeners()
            self._say_goodbye()
            self._close_cluster(delete=False)
            for _, future in self._waiting:
                future.set_exception(IllegalState(f"lab {self.slug} stopped"))
            with self._cond:
                leftover = [*self._deferred, *self._inbox]
                self._deferred.clear()
                self._inbox.clear()
            for _, future in leftover:
                future.set_exception(IllegalState(f"lab {self.slug} stopped"))
            unregister_lab(self.slug)
            self.budget.forget(self.slug)
            self.state = "stopped"

    def _run_commands(self, work: list[tuple[actions.Act, Future[Any]]]) -> None:
        """Run what callers submitted, in order; while the cluster starts (or a command reset it),
        the rest waits for it to run, and the frames go on."""
        queue = deque([*self._deferred, *work])
        self._deferred.clear()
        while queue and self._startup is None:
            self._execute(*queue.popleft())
        self._deferred.extend(queue)
        if self._startup is None and not self.ready.done():
            self.ready.set_result(None)

    # ------------------------------------------------------------------ sleeping (lab.runtime.sleep)

    def _keeps_awake(self) -> str:
        """Why the lab may not sleep now ("" if nothing keeps it awake)."""
        if self.sleep_after_s is None:
            return "sleeping is off"
        if self.state in ("starting", "resetting"):
            return f"the lab is {self.state}"
        if self.subscribers:
            return "a page watches"
        if self._waiting:
            return "an answer is awaited"
        if self.wire is not None and self.wire.connections:
            return "a Kafka client is connected"
        for name, busy in list(self._busy_hooks.items()):
            if name in self._tick_hooks and busy():
                return f"{name} is busy"
        return ""

    def _next_tick_in(self) -> float:
        """How long the driver waits for its next tick (what anyone sends wakes it sooner).

        A busy lab ticks every ``tick_s``, and no later than its next frame slot. A quiet one (its key
        did not move in the last slot) every ``quiet_tick_s`` (``QUIET_TICK_S``): the brokers' routine
        (followers' empty fetches, checkpoints) runs in one batch instead of one per slot, and a change
        the engine's own timers make (an ISR shrinking, a group's member expiring) shows at the tick
        after. A
        fast clock ticks as often as it takes for a tick to run at most half of ``MAX_FRAME_MS``.
        A connected client, an awaited answer or a busy extension are never quiet: their timers
        are not frames, and they tick every ``tick_s``. A lab busy by itself (its simulated clients)
        ticks once per frame slot: what its engine did in between shows at the frame anyway, and a class
        of such labs wakes five times less (fewer threads wanting the GIL at once: the workers' couriers
        answer sooner)."""
        ticking = self._ticking()
        if self._quiet and not ticking:
            rate = self.clock.effective_rate
            return self.quiet_tick_s if rate <= 0 else min(self.quiet_tick_s, MAX_FRAME_MS / 2 / 1000 / rate)
        due = self._last_publish + self._frame_interval() - time.monotonic()
        step = self.tick_s if ticking else max(self.tick_s, self.publish_interval_s)
        return max(0.0, min(step, due))

    def _ticking(self) -> bool:
        """Something the engine's next milliseconds matter to: an answer awaited, a Kafka client
        connected, a busy extension."""
        if self._waiting or (self.wire is not None and self.wire.connections):
            return True
        return any(name in self._tick_hooks and busy() for name, busy in list(self._busy_hooks.items()))

    def _zookeeper_sent(self) -> None:
        """(kazoo's thread) An answer or a watch is waiting: a quiet tick ends now (a sleep does not)."""
        with self._cond:
            self._arrived = True
            self._cond.notify_all()

    def _maybe_sleep(self, *, active: bool) -> None:
        if active:
            self._quiet = False  # what someone asked for may need the engine's next ticks
        after = self.sleep_after_s  # read once: another thread may turn sleeping off meanwhile
        if active or after is None or self._keeps_awake():
            self._idle_since = None
            return
        now = self._wall()
        if self._idle_since is None:
            self._idle_since = now
        if now - self._idle_since >= after:
            self._sleep()

    def _sleep(self) -> None:
        """Stop the clock and park until someone needs the lab; then carry on where it stopped."""
        cluster = self._cluster
        self.nap = Nap(time_ms=cluster.now_ms if cluster is not None else 0, slept_at=self._wall())
        self.asleep = True
        self._publish_now()  # the frame the API and a page opening read says so
        if cluster is not None:
            # The brokers' sessions stay open (their znodes register them); the lab's own client goes.
            cluster.release_admin()
        with self._cond:
            while not (self._inbox or self._posted or self._nudged or self._stopping):
                self._cond.wait()  # no timeout: a sleeping lab costs nothing until notified
            why = self._nudged or ("a Kafka client" if self._posted else "an API call or a command")
        self.asleep = False
        self._idle_since = None
        nap = self.nap = replace(self.nap, woke_at=self._wall(), woke_for=why)
        if self._stopping or cluster is None or cluster is not self._cluster:
            return
        self.clock.anchor(cluster.now_ms)  # the clock goes on from where it stopped
        cluster.journal.record("lab_slept", nap.text(self._wall()), slept_s=round(nap.seconds(0), 1))
        self._publish_now()

    def _run_posted(self, job: Callable[[], None]) -> None:
        try:
            job()
        except Exception:  # a bug in the wire layer: the lab carries on
            log.exception("lab %s: a listener's work failed", self.slug)
        finally:
            self._changed()
        cluster = self._cluster
        if cluster is not None and cluster.now_ms > self.clock.target():
            self.clock.anchor(cluster.now_ms)

    def _open_listeners(self, cluster: Cluster) -> None:
        self.wire = WireServer(cluster, clock=time.monotonic)  # requests/s in wall time, as clients send
        if self.listen is not None and self._spec.ports:
            self.listeners = Listeners(
                self,
                bind_host=self.listen.bind_host,
                advertised_host=self.listen.advertised_host,
                ports=self._spec.ports,
                secured=self._spec.listeners,
                tls=self.lab_tls,
            )
            cluster.ctx.listener_config = {b: self.listeners.server_properties(b) for b in cluster.broker_ids}
            # A lab is "running" once its brokers' sockets listen: a client told the lab is up may
            # connect at once. Binding a local socket takes the listeners' loop a moment, no more.
            futures.wait(self._sync_listeners(), timeout=LISTEN_WAIT_S)

    @property
    def lab_tls(self) -> tls.LabTls:
        """The lab's CA and brokers' certificates (made when a TLS listener first opens)."""
        host = self.listen.advertised_host if self.listen is not None else "127.0.0.1"
        return tls.LabTls(self._spec.data_dir, lab=self.slug, hosts=[host])

    def _sync_listeners(self) -> list[Future[Any]]:
        cluster, wire, listeners = self._cluster, self.wire, self.listeners
        if cluster is None or wire is None or listeners is None:
            return []
        return listeners.sync(
            wire,
            {b: broker.alive for b, broker in cluster.brokers.items()},
            {
                b: f"broker {b} {_GONE.get(broker.state.value, 'is not running')}"
                for b, broker in cluster.brokers.items()
            },
        )

    def _close_listeners(self, why: str = "the lab stopped") -> None:
        listeners, self.listeners = self.listeners, None
        if self.wire is not None:
            self.wire.close(why)
            self.wire = None
        if listeners is not None:
            listeners.close()

    def _say_goodbye(self) -> None:
        """Stop the simulated clients cleanly, as an application does when its server stops:
        consumers leave their groups, so the next start does not wait out their sessions."""
        cluster = self._cluster
        clients = list(getattr(cluster, "simulated", {}).values()) if cluster is not None else []
        if cluster is None or not clients:
            return
        try:
            for obj in clients:
                if obj.state == "running":
                    obj.stop()
            cluster.run_until(cluster.now_ms + GOODBYE_MS, pace=False)
        except Exception:
            log.exception("lab %s: stopping its clients failed", self.slug)

    def _outage(self) -> str:
        """Why ZooKeeper cannot be reached now, as the store sees it (at once, even with the clock paused)."""
        cluster = self._cluster
        return (cluster.store.outage() or "") if cluster is not None else ""

    def _failed(self, error: BaseException) -> None:
        self.state = "failed"
        self.error = str(error)

    def _build(self) -> None:
        """Begin building the cluster; the driver takes the start's steps each tick (``_starting``)."""
        spec = self._spec
        data_dir = Path(spec.data_dir)
        data_dir.mkdir(parents=True, exist_ok=True)
        self.commands.begin({**spec.settings(), "brokers": spec.brokers})

        # The brokers register their listeners' addresses in /brokers/ids/<id>, so they are known before
        # the brokers start (the sockets open once the lab runs).
        listener_config = {}
        if self.listen is not None and spec.ports:
            by_protocol = ports_by_protocol(spec.ports, spec.listeners)
            listener_config = {
                b: server_properties(
                    by_protocol,
                    b,
                    bind_host=self.listen.bind_host,
                    advertised_host=self.listen.advertised_host,
                )
                for b in range(1, spec.brokers + 1)
            }

        def make() -> Cluster:
            logs = data_dir
            if not self.zookeeper:
                # The memory store's metadata ends with its run, and logs without it are orphans the next
                # run cannot serve (their topic ids are gone): a memory-store run keeps its logs apart,
                # cleared at each start, and what ZooKeeper runs wrote stays for when it answers again.
                logs = data_dir / MEMORY_STORE_LOGS
                shutil.rmtree(logs, ignore_errors=True)
            return Cluster.create(
                brokers=spec.brokers,
                seed=spec.seed,
                config=dict(spec.config),
                zookeeper=self.zookeeper,
                data_dir=logs,
                name=spec.slug,
                chroot=spec.chroot,
                epoch_ms=int(time.time() * 1000),  # virtual zero is now: znode timestamps read as wall time
                wait=False,
                listener_config=listener_config,
            )

        self._startup = Startup(
            make,
            topics=spec.topics,
            brokers=spec.brokers,
            users=spec.users,
            tick_ms=int(self.tick_s * 1000),
            hosts=self.zookeeper or "",
        )

    def _starting(self) -> None:
        """One step of the start (driver thread): frames go on meanwhile, and callers wait."""
        startup = self._startup
        assert startup is not None
        try:
            done = startup.step()
        except Exception as error:  # the page shows why; a reset tries again (the cluster is closed)
            self._startup = self._cluster = None
            self.starting_note = ""
            self._failed(error)
            return
        self.starting_note = startup.note
        if startup.cluster is not None and self._cluster is None:
            self._cluster = startup.cluster
            self._cluster.after_step.append(self._stepped)
            self._cluster.ctx.acl_watchers.append(self._acls_changed)
            self._cluster.ctx.credential_watchers.append(self._credential_changed)
            on_arrival = getattr(self._cluster.store, "on_arrival", None)
            if on_arrival is not None:
                on_arrival(self._zookeeper_sent)  # a quiet tick ends when ZooKeeper sends something
        if done:
            self._startup = None
            self._started()

    def _restore_acls(self, cluster: Cluster) -> None:
        """The spec's ACLs, written again where ZooKeeper lacks them (after a reset, or on the memory
        store); without waiting: the brokers' authorizers read them from the change nodes."""
        if not self._spec.acls:
            return
        from lab.engine.acl import parse_binding

        try:
            bindings = [parse_binding(**{k: v for k, v in a.items() if k != "text"}) for a in self._spec.acls]
            cluster.begin_create_acls(bindings)
        except KafkaError as error:
            log.warning("lab %s: ACLs not restored: %s", self.slug, error)

    def _started(self) -> None:
        cluster = self._cluster
        assert cluster is not None
        # From now on: the spec's own topics, made again as the lab started (their replication factor at
        # most the brokers there are), are the spec already and must not rewrite it.
        cluster.ctx.topic_watchers.append(self._topic_changed)
        self._restore_acls(cluster)
        for client in self._spec.clients:
            try:
                self.add_client(client, record=False)
            except KafkaError as error:
                log.warning("lab %s: simulated client %s not restored: %s", self.slug, client.name, error)
        self.clock.anchor(cluster.now_ms)
        self._open_listeners(cluster)
        self.state = "running"
        self.error = ""
        self._register()
        # What exists now (the cluster, its logs and indexes, Django) lives as long as the lab:
        # keep it out of the collector's full sweeps, which otherwise stall every frame for
        # tens of milliseconds as the heap grows.
        gc.collect()
        gc.freeze()

    def _close_cluster(self, *, delete: bool) -> None:
        cluster, self._cluster = self._cluster, None
        if cluster is None:
            if delete:
                self._delete_data(None)
            return
        store = cluster.store
        try:
            cluster.close(delete_data=False)
        except Exception:
            log.exception("lab %s: closing the cluster failed", self.slug)
        if delete:
            self._delete_data(store)

    def _delete_data(self, store: Any) -> None:
        data_dir = Path(self._spec.data_dir)
        if data_dir.exists():
            for item in data_dir.iterdir():  # the lab's CA stays: clients keep the CA file they took
                if item.name in tls.KEPT_ON_RESET:
                    continue
                if item.is_dir() and not item.is_symlink():
                    shutil.rmtree(item)
                else:
                    item.unlink()
        data_dir.mkdir(parents=True, exist_ok=True)
        if store is None and self.zookeeper:
            # The cluster never came up; its chroot may still hold what an earlier run left.
            from lab.engine.metadata.zookeeper import ZooKeeperStore

            store = ZooKeeperStore(self.zookeeper, chroot=self._spec.chroot)
            try:
                store.delete_chroot()
            finally:
                store.close()
            return
        delete_chroot = getattr(store, "delete_chroot", None)
        if delete_chroot is not None:
            delete_chroot()

    def _execute(self, fn: actions.Act, future: Future[Any]) -> None:
        if not future.set_running_or_notify_cancel():
            return
        try:
            try:
                result = fn(self)
            finally:
                # Before the caller hears: a read after the answer never gets a snapshot from before it
                # (one while it runs may have what stood before it).
                self._changed()
        except KafkaError as error:
            future.set_exception(error)
        except Exception as error:  # a bug, not a person's mistake: say so and keep the lab running
            log.exception("lab %s: a command failed", self.slug)
            future.set_exception(error)
        else:
            if isinstance(result, actions.Waiting):
                self._waiting.append((result, future))
            else:
                future.set_result(result)
        finally:
            cluster = self._cluster
            if cluster is not None and cluster.now_ms > self.clock.target():
                self.clock.anchor(cluster.now_ms)  # a command that waited moved the engine on

    def _settle_waiting(self) -> None:
        still = []
        now = time.monotonic()
        for waiting, future in self._waiting:
            try:
                if waiting.ready():
                    answer = waiting.result()
                elif now >= waiting.deadline:
                    answer = waiting.on_timeout()
                else:
                    still.append((waiting, future))
                    continue
            except Exception as error:
                self._changed()
                future.set_exception(error)
            else:
                self._changed()  # before the caller hears: a read after it gets no snapshot from before
                future.set_result(answer)
        self._waiting = still

    def _stepped(self) -> None:
        if self._first_step_at is None:
            self._first_step_at = time.time()

    def _advance(self) -> None:
        cluster = self._cluster
        assert cluster is not None
        if self.clock.paused:
            return
        target = self.clock.target()
        now = cluster.now_ms
        if target <= now:
            # What is due now still runs: a client's request that just arrived must not wait for
            # the wall clock's next millisecond and the driver's next tick.
            cluster.run_until(now, pace=False)
            return
        if target - now > MAX_FRAME_MS:
            # More work than a frame holds (or the thread was held up): run a frame's worth, then
            # carry on from there instead of racing to catch up.
            target = now + MAX_FRAME_MS
            cluster.run_until(target, pace=False)
            self.clock.anchor(cluster.now_ms)
            return
        cluster.run_until(target, pace=False)

    def _maybe_poll_tree(self) -> None:
        """About once a second, when what the lab writes to ZooKeeper moved since the last read
        (``lab.runtime.changes.tree_key``: records do not move it) or every TREE_QUIET_INTERVAL_S, ask
        for the ZooKeeper tree, and take it when it has arrived: a slow ZooKeeper holds up the tree,
        never the driver (one read at a time)."""
        cluster = self._cluster
        assert cluster is not None
        reading = self._tree_reading
        if reading is not None:
            if not reading.done() and self.clock.paused:
                cluster.run_until(cluster.now_ms, pace=False)  # take what ZooKeeper sent; time stands
            if reading.done():
                self._tree_reading = None
                self._take_tree(cluster, reading)
            return
        if self.clock.paused and self._tree is not None:
            return
        now = time.monotonic()
        if now - max(self._tree_at, self._tree_checked_at) < self.tree_interval_s:
            return
        self._tree_checked_at = now
        if tree_key(cluster) == self._tree_key and now - self._tree_at < TREE_QUIET_INTERVAL_S:
            return  # nothing the lab did can have changed the tree (records may have): no reads of every znode
        self._tree_at = now
        self._tree_reading_key = tree_key(cluster)  # what a change during the read must differ from
        try:
            self._tree_reading = cluster.begin_zookeeper_tree()
        except KafkaError as error:
            self._tree_error = f"the tree could not be read: {error}"

    def _take_tree(self, cluster: Cluster, reading: Pending[list[dict[str, Any]]]) -> None:
        error = reading.failed_with()
        if error is not None:
            self._tree_error = f"the tree could not be read: {error}"
            return
        tree = reading.result()
        self._tree_error = None
        # A changed tree is read once more a poll later, so its "new" and "gone" marks last one poll.
        self._tree_key = (
            None if tree != self._tree or self._tree_prev != self._tree else self._tree_reading_key
        )
        if tree != self._tree:
            self._tree_prev, self._tree = self._tree, tree
        elif self._tree_prev != self._tree:
            self._tree_prev = self._tree  # a node stays "new" or "gone" for one poll only

    # ------------------------------------------------------------------ frames

    def _status(self) -> LabStatus:
        return LabStatus(
            state=self.state,
            store=self.store,
            zookeeper=self.zookeeper or "",
            chroot=self._spec.chroot,
            error=self.error,
            fallback_reason=self.fallback_reason,
            zookeeper_outage=self.zookeeper_outage,
            note=self.starting_note,
            nap=self.nap_text(),
        )

    def _collect(self) -> FrameInputs:
        cluster = self._cluster
        snapshot: dict[str, Any] = (
            cluster.snapshot()
            if cluster is not None
            else {"time_ms": 0, "brokers": [], "topics": {}, "groups": {}, "clients": [], "in_flight": []}
        )
        if cluster is not None:
            new = False
            for event in cluster.events(self._journal_seq):
                new = True
                self._events.append(event)
                if event.kind == "rebalance":
                    self._rebalances.append(event)
            self._journal_seq = cluster.journal.last_seq
            if new or len(self._events_seen) != len(self._events):
                self._events_seen = tuple(self._events)  # the same object while nothing happened (Memo)
            if not self._samples or self._samples[-1].time_ms < cluster.now_ms:
                self._samples.append(self._sample(cluster, snapshot))
        config = dict(cluster.config.values) if cluster is not None else dict(self._spec.config)
        return FrameInputs(
            snapshot=snapshot,
            config=config,
            events=self._events_seen,
            rebalances=tuple(self._rebalances),
            tree=self._tree,
            tree_previous=self._tree_prev,
            tree_error=self._tree_error,
            samples=tuple(self._samples),
            rate=self.clock.rate,
            paused=self.clock.paused,
            status=self._status(),
            simulated_clients=hasattr(Cluster, "simulated_producer"),
            wire_clients=tuple(self.wire.snapshot()) if self.wire is not None else (),
            bootstrap_servers=self.listeners.bootstrap_servers if self.listeners is not None else "",
        )

    def _sample(self, cluster: Cluster, snapshot: Mapping[str, Any]) -> Sample:
        from lab.visuals.charts import sample

        # Records appended: growth of each user partition's longest log (leaders change, logs persist).
        for name, topic in snapshot.get("topics", {}).items():
            if name.startswith("__"):
                continue
            for part in topic["partitions"]:
                key = f"{name}/{part['partition']}"
                longest = max((int(v["log_end_offset"]) for v in part["logs"].values()), default=0)
                self._produced += max(0, longest - self._leo_seen.get(key, 0))
                self._leo_seen[key] = max(longest, self._leo_seen.get(key, 0))
        # Records served to consumers: each broker's counter, which starts again at 0 after a restart.
        for bid, broker in cluster.brokers.items():
            count = broker.stats.records_out_to_consumers
            ident, seen = self._out_seen.get(bid, (id(broker), 0))
            if ident != id(broker):
                seen = 0
            self._consumed += max(0, count - seen)
            self._out_seen[bid] = (id(broker), count)
        return sample(snapshot, produced=self._produced, consumed=self._consumed)

    def _publish_now(self) -> None:
        self._fresh_frame = True
        self._last_publish = -math.inf
        self._maybe_publish()

    def _change_key(self, hooked: Mapping[str, object]) -> tuple[object, ...]:
        """What a frame is built from, but time: equal keys, equal frames (lab.runtime.changes)."""
        cluster = self._cluster
        return (
            state_key(cluster) if cluster is not None else None,
            dict(cluster.config.values) if cluster is not None else None,
            id(self._tree),
            id(self._tree_prev),
            self._tree_error,
            self._status(),
            self.clock.rate,
            self.clock.paused,
            dict(hooked),
        )

    def _frame_interval(self) -> float:
        """The wall seconds between two frames: ``publish_interval_s``, or longer when this lab's frames
        at that pace would cost more than its part of the process's frame share (lab.runtime.budget)."""
        return self.budget.interval(self.slug, fastest_s=self.publish_interval_s, slowest_s=SLOWEST_FRAMES_S)

    def _maybe_publish(self) -> None:
        now = time.monotonic()
        if now - self._last_publish < self._frame_interval():
            return
        self._last_publish = now
        made_at = time.time()  # the slot's start: frames stay a slot apart however long the key takes
        hooked = self._hooked_views()
        key = self._change_key(hooked)
        fresh, self._fresh_frame = self._fresh_frame, False
        self._quiet = key == self._published_key
        if self._quiet and not fresh and self._frame.seq:
            return  # nothing changed: no snapshot, no views, no frame (the page runs its clock itself)
        self._published_key = key
        began = time.thread_time()
        try:
            self._make_frame(made_at, hooked)
        finally:
            self.budget.charge(self.slug, time.thread_time() - began)

    def _make_frame(self, made_at: float, hooked: Mapping[str, object]) -> None:
        inputs = self._collect()
        with self._lock:
            self._last_snapshot = (dict(inputs.snapshot), self.ticks, time.monotonic())
        views = build(inputs, self._memo)
        views.update(hooked)
        first_step = self._first_step_at or made_at
        self._first_step_at = None
        previous = self._frame
        changed = [k for k, v in views.items() if previous.views.get(k) != v]
        if not changed and previous.seq:
            return
        time_ms = int(inputs.snapshot.get("time_ms") or 0)
        meta = FrameMeta(
            seq=previous.seq + 1, time_ms=time_ms, made_at=made_at, event_at=min(first_step, made_at)
        )
        frame = Frame(seq=meta.seq, views={**views, "frame": meta}, meta=meta)
        with self._lock:
            self._frame = frame
            send = self._subscribers > 0
        with self._cond:
            self._cond.notify_all()
        self._update_registry(inputs.snapshot)
        if send and self.renderer is not None:
            # A renderer that can draw less than a changed fragment (a topic's partitions that changed)
            # does; the page holds the previous frame's fragments.
            changes = getattr(self.renderer, "changes", None)
            html = "".join(
                changes(k, frame.views, previous.views)
                if changes is not None
                else self.renderer.fragment(k, frame.views)
                for k in [*changed, "frame"]
            )
            self.broadcast.send(
                self.group,
                # ``group``: a web process relays one copy of a frame to its pages of the lab (lab.relay)
                {
                    "type": "lab.frame",
                    "group": self.group,
                    "html": html,
                    "frame": frame.seq,
                    "after": previous.seq,  # what its fragments changed: a page missing it draws again
                    "run": self.run_id,
                    "made_at": meta.made_at,
                },
            )

    # ------------------------------------------------------------------ the home page's registry

    def _summarize(self, snapshot: Mapping[str, Any]) -> LabSummary:
        return LabSummary(
            name=self.slug,
            brokers=tuple(
                BrokerSummary(id=int(b["id"]), state=str(b["state"])) for b in snapshot.get("brokers", ())
            ),
            controller=snapshot.get("controller"),
            zookeeper_chroot=self._spec.chroot if self.zookeeper else None,
        )

    def _register(self) -> None:
        cluster = self._cluster
        assert cluster is not None
        summary = self._summarize(cluster.snapshot())
        unregister_lab(self.slug)
        register_lab(summary)
        self._summary = summary

    def _update_registry(self, snapshot: Mapping[str, Any]) -> None:
        if self._cluster is None:
            return
        summary = self._summarize(snapshot)
        if summary != self._summary:
            try:
                update_lab(summary)
            except KeyError:
                register_lab(summary)
            self._summary = summary
