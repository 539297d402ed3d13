"""The controller: one broker, elected through /controller, that decides leadership for everyone.

As Kafka's KafkaController in ZooKeeper mode: one event queue (broker changes,
topic changes, deletions, ISR change notifications, admin requests), each event
handled to the end before the next; decisions written to the partition state
znodes in batched ``multi`` calls fenced by /controller_epoch's version, then
sent to brokers as LeaderAndIsr and UpdateMetadata requests. Every decision is
a journal event that says why.
"""

from __future__ import annotations

import contextlib
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from lab.engine.admin import TopicChange
from lab.engine.config import effective_topic_config
from lab.engine.errors import KafkaError
from lab.engine.ids import BrokerId, TopicPartition
from lab.engine.metadata import paths
from lab.engine.metadata.kafkazk import ControllerMoved
from lab.engine.metadata.store import (
    BadVersion,
    CheckOp,
    CreateOp,
    MetadataError,
    NodeExists,
    NoNode,
    Op,
    SetDataOp,
    Stat,
    WatchEvent,
)
from lab.engine.protocol import (
    ControlledShutdownResponse,
    LeaderAndIsrRequest,
    PartitionStateInfo,
    StopReplicaRequest,
    UpdateMetadataRequest,
)
from lab.engine.scheduler import Scheduler, Timer
from lab.engine.tasks import Pending, SerialQueue

if TYPE_CHECKING:
    from lab.engine.broker import Broker

NO_LEADER = -1
MULTI_CHUNK = 500  # state writes per ZooKeeper multi: well under jute.maxbuffer
CONTROLLER_REQUEST_TIMEOUT_MS = 5000
CONTROLLER_RETRY_BACKOFF_MS = 500


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaderIsr:
    """A partition state znode as the controller knows it, with the znode's version."""

    leader: BrokerId
    leader_epoch: int
    isr: tuple[BrokerId, ...]
    controller_epoch: int
    zk_version: int

    def encode(self) -> bytes:
        return paths.encode_partition_state(
            paths.PartitionState(
                leader=self.leader,
                leader_epoch=self.leader_epoch,
                isr=self.isr,
                controller_epoch=self.controller_epoch,
            )
        )


@dataclass(slots=True)
class ControllerContext:
    epoch: int = 0
    epoch_zk_version: int = -1
    live_brokers: dict[BrokerId, int] = field(default_factory=dict)  # id -> broker epoch (czxid)
    shutting_down: set[BrokerId] = field(default_factory=set)
    topics: set[str] = field(default_factory=set)
    assignments: dict[TopicPartition, tuple[BrokerId, ...]] = field(default_factory=dict)
    states: dict[TopicPartition, LeaderIsr] = field(default_factory=dict)
    topic_configs: dict[str, dict[str, str]] = field(default_factory=dict)
    topic_ids: dict[str, str] = field(default_factory=dict)  # KIP-516, from /brokers/topics/<t>
    reassignments: dict[TopicPartition, tuple[BrokerId, ...]] = field(default_factory=dict)
    # The replicas a reassignment adds (the znode's "adding_replicas"): the full set is the union.
    adding: dict[TopicPartition, tuple[BrokerId, ...]] = field(default_factory=dict)
    deleting: set[str] = field(default_factory=set)
    # A topic being deleted: the brokers that were sent its StopReplica, and those it waits for (down).
    deleted_on: dict[str, set[BrokerId]] = field(default_factory=dict)
    deletion_waits: dict[str, tuple[BrokerId, ...]] = field(default_factory=dict)

    def partitions_of(self, topic: str) -> list[TopicPartition]:
        return sorted(tp for tp in self.assignments if tp.topic == topic)

    def live(self, broker: BrokerId) -> bool:
        return broker in self.live_brokers


Decision = tuple[LeaderIsr, str]
Decide = Callable[[TopicPartition, LeaderIsr], Decision | None]


class Controller:
    def __init__(self, broker: Broker, *, epoch: int, epoch_zk_version: int) -> None:
        """The controller ``broker`` became by winning /controller at ``epoch`` (see kafkazk.py)."""
        self.broker = broker
        self.id = broker.id
        self.zk = broker._zk()
        self.ctx = ControllerContext(epoch=epoch, epoch_zk_version=epoch_zk_version)
        self.events = SerialQueue(self._failed)
        self._stopped = False
        self.loaded = False  # the context holds what ZooKeeper says (pictures may use it)
        self._rebalance_timer: Timer | None = None
        self._channels: dict[BrokerId, deque[Any]] = {}

    # ------------------------------------------------------------------ plumbing

    @property
    def now_ms(self) -> int:
        return self.broker.now_ms

    def journal(self, kind: str, text: str, **kw: Any) -> None:
        self.broker.ctx.journal.record(kind, text, **kw)

    def start(self) -> None:
        self.events.put("Startup", self._startup)

    def stop(self) -> None:
        self._stopped = True
        self.events.clear()
        Scheduler.cancel(self._rebalance_timer)

    def _enqueue(self, name: str, job: Callable[[], Any]) -> None:
        if not self._stopped:
            self.events.put(name, job)

    def _watch(self, name: str, job: Callable[[], Any]) -> Callable[[WatchEvent], None]:
        def fire(event: WatchEvent) -> None:
            self._enqueue(name, job)

        return fire

    def _failed(self, name: str, error: BaseException) -> None:
        if self._stopped:
            return
        if isinstance(error, ControllerMoved):
            self.journal(
                "controller_moved",
                f"broker {self.id}'s write was fenced: /controller_epoch moved on, another broker is the controller",
                broker=self.id,
            )
            self.broker._resign("another controller took over")
            return
        if isinstance(error, MetadataError):
            self.journal("controller_error", f"controller {self.id}: {name} failed: {error}", broker=self.id)
            return
        raise error

    def _topic_config(self, topic: str) -> dict[str, str]:
        return effective_topic_config(self.ctx.topic_configs.get(topic, {}), self.broker.config)

    def _unclean_allowed(self, topic: str) -> bool:
        return self._topic_config(topic)["unclean.leader.election.enable"] == "true"

    # ------------------------------------------------------------------ startup (failover)

    async def _startup(self) -> None:
        self.journal(
            "controller_elected",
            f"broker {self.id} is the controller (controller epoch {self.ctx.epoch})",
            broker=self.id,
            controller_epoch=self.ctx.epoch,
        )
        await self._read_brokers()
        topics = await self.zk.get_children(
            paths.BROKER_TOPICS, watch=self._watch("TopicChange", self._on_topic_change)
        )
        for topic in sorted(topics):
            await self._load_topic(topic)
        await self._read_states(list(self.ctx.assignments))
        self.loaded = True
        self.broker.ctx.controller_context = self.ctx
        self._send_update_metadata()
        for broker in sorted(self.ctx.live_brokers):
            self._send_leader_and_isr(broker, [tp for tp, r in self.ctx.assignments.items() if broker in r])
        # Brokers that died while nobody was controller still lead or sit in ISRs: handle them now.
        dead = frozenset(
            r
            for st in self.ctx.states.values()
            for r in (st.leader, *st.isr)
            if r >= 0 and not self.ctx.live(r)
        )
        if dead:
            await self._on_brokers_failed(
                dead, cause=f"controller failover, broker {_names(dead)} not registered"
            )
        await self._online_partitions(sorted(self.ctx.assignments), cause="controller failover")
        await self._on_isr_change()
        await self._on_config_change()
        await self._on_delete_topics()
        await self._on_reassign()
        await self._on_preferred_election()
        self._schedule_rebalance()

    async def _read_brokers(self) -> dict[BrokerId, int]:
        children = await self.zk.get_children(
            paths.BROKER_IDS, watch=self._watch("BrokerChange", self._on_broker_change)
        )
        ids = sorted(int(c) for c in children if c.isdigit())
        stats = [(b, self.zk.exists(paths.broker_path(b))) for b in ids]
        live: dict[BrokerId, int] = {}
        for broker, pending in stats:
            stat = await pending
            if stat is not None:
                live[broker] = stat.czxid
        previous = self.ctx.live_brokers
        self.ctx.live_brokers = live
        return previous

    async def _load_topic(self, topic: str) -> list[TopicPartition]:
        """Read a topic's assignment (watching it) and config; returns its partitions new to us."""
        try:
            raw, stat = await self.zk.get(
                paths.topic_path(topic),
                watch=self._watch("PartitionModifications", lambda: self._on_partitions_change(topic)),
            )
        except NoNode:
            return []
        assignment = paths.decode_topic_assignment(raw)
        if assignment.topic_id is None:
            assignment = await self._assign_topic_id(topic, assignment, stat.version)
        if assignment.topic_id is not None:
            self.ctx.topic_ids[topic] = assignment.topic_id
        try:
            config_raw, _ = await self.zk.get(paths.topic_config_path(topic))
            self.ctx.topic_configs[topic] = paths.decode_topic_config(config_raw)
        except NoNode:
            self.ctx.topic_configs[topic] = {}
        self.ctx.topics.add(topic)
        new: list[TopicPartition] = []
        for partition, replicas in sorted(assignment.partitions.items()):
            tp = TopicPartition(topic, partition)
            if tp not in self.ctx.assignments:
                new.append(tp)
            self.ctx.assignments[tp] = tuple(replicas)
            if partition in assignment.adding_replicas:
                self.ctx.adding[tp] = tuple(assignment.adding_replicas[partition])
        return new

    async def _assign_topic_id(
        self, topic: str, assignment: paths.TopicAssignment, version: int
    ) -> paths.TopicAssignment:
        """A topic an older Kafka wrote has no id: the controller gives it one, as Kafka 2.8+ does."""
        named = replace(assignment, topic_id=self.broker.ctx.new_topic_id())
        try:
            await self.zk.multi(
                [
                    CheckOp(path=paths.CONTROLLER_EPOCH, version=self.ctx.epoch_zk_version),
                    SetDataOp(
                        path=paths.topic_path(topic),
                        data=paths.encode_topic_assignment(named),
                        version=version,
                    ),
                ]
            )
        except BadVersion as exc:
            if exc.path == paths.CONTROLLER_EPOCH:
                raise ControllerMoved(paths.CONTROLLER_EPOCH) from None
            return assignment  # changed meanwhile: its watch brings it back here
        self.journal(
            "topic_id_assigned",
            f"controller {self.id} gave topic {topic} its topic id {named.topic_id} (KIP-516)",
            topic=topic,
            broker=self.id,
        )
        return named

    async def _read_states(self, tps: Sequence[TopicPartition]) -> None:
        reads = [(tp, self.zk.get(paths.partition_state_path(tp.topic, tp.partition))) for tp in tps]
        for tp, pending in reads:
            try:
                raw, stat = await pending
            except NoNode:
                self.ctx.states.pop(tp, None)
                continue
            state = paths.decode_partition_state(raw)
            self.ctx.states[tp] = LeaderIsr(
                leader=state.leader,
                leader_epoch=state.leader_epoch,
                isr=tuple(state.isr),
                controller_epoch=state.controller_epoch,
                zk_version=stat.version,
            )

    # ------------------------------------------------------------------ talking to brokers

    def _info(self, tp: TopicPartition, state: LeaderIsr, *, is_new: bool = False) -> PartitionStateInfo:
        return PartitionStateInfo(
            tp=tp,
            leader=state.leader,
            leader_epoch=state.leader_epoch,
            isr=state.isr,
            zk_version=state.zk_version,
            replicas=self.ctx.assignments.get(tp, ()),
            controller_epoch=self.ctx.epoch,
            is_new=is_new,
        )

    def _send(self, broker: BrokerId, request: Any) -> None:
        """Queue a request to a broker; it is sent in order, one at a time, until it gets through."""
        queue = self._channels.setdefault(broker, deque())
        queue.append(request)
        if len(queue) == 1:
            self._pump(broker)

    def _pump(self, broker: BrokerId) -> None:
        queue = self._channels.get(broker)
        if self._stopped or not queue:
            return
        if not self.ctx.live(broker):
            queue.clear()  # it is gone; it gets the whole state when it registers again
            return
        self.broker.endpoint.request(
            broker,
            queue[0],
            lambda response: self._sent(broker, response),
            timeout_ms=CONTROLLER_REQUEST_TIMEOUT_MS,
        )

    def _sent(self, broker: BrokerId, response: Any) -> None:
        queue = self._channels.get(broker)
        if self._stopped or not queue:
            return
        if isinstance(response, KafkaError):
            # Not delivered (cut off, or not answering): try again while the broker is registered.
            self.broker.later(
                CONTROLLER_RETRY_BACKOFF_MS, self._pump, broker, label="controller channel retry"
            )
            return
        queue.popleft()
        self._pump(broker)

    def _send_leader_and_isr(self, broker: BrokerId, tps: Iterable[TopicPartition]) -> None:
        infos = tuple(self._info(tp, self.ctx.states[tp]) for tp in sorted(tps) if tp in self.ctx.states)
        if infos and self.ctx.live(broker):
            self._send(
                broker,
                LeaderAndIsrRequest(
                    controller_id=self.id,
                    controller_epoch=self.ctx.epoch,
                    partitions=infos,
                    topic_ids={
                        tp.topic: self.ctx.topic_ids[tp.topic]
                        for tp in (i.tp for i in infos)
                        if tp.topic in self.ctx.topic_ids
                    },
                ),
            )

    def _send_update_metadata(self, deleted_topics: Sequence[str] = ()) -> None:
        infos = tuple(
            self._info(tp, state)
            for tp, state in sorted(self.ctx.states.items())
            if tp in self.ctx.assignments
        )
        request = UpdateMetadataRequest(
            controller_id=self.id,
            controller_epoch=self.ctx.epoch,
            live_brokers=tuple(sorted(self.ctx.live_brokers)),
            partitions=infos,
            deleted_topics=tuple(deleted_topics),
            topic_ids={t: i for t, i in self.ctx.topic_ids.items() if t not in deleted_topics},
        )
        for broker in sorted(self.ctx.live_brokers):
            self._send(broker, request)

    def _send_changes(self, changed: Iterable[TopicPartition]) -> None:
        by_broker: dict[BrokerId, list[TopicPartition]] = {}
        for tp in changed:
            for replica in self.ctx.assignments.get(tp, ()):
                by_broker.setdefault(replica, []).append(tp)
        for broker, tps in sorted(by_broker.items()):
            self._send_leader_and_isr(broker, tps)
        self._send_update_metadata()

    # ------------------------------------------------------------------ writing decisions

    async def _update(
        self, tps: Iterable[TopicPartition], decide: Decide, cause: str
    ) -> dict[TopicPartition, LeaderIsr]:
        """Apply ``decide`` to each partition's current state and write the results, fenced by our epoch.

        A state znode that changed under us (a leader wrote a new ISR) is read
        again and decided again. Returns the partitions whose state changed.
        """
        pending = [tp for tp in tps if tp in self.ctx.states]
        written: dict[TopicPartition, LeaderIsr] = {}
        for _attempt in range(5):
            plan: dict[TopicPartition, Decision] = {}
            for tp in pending:
                decision = decide(tp, self.ctx.states[tp])
                if decision is not None:
                    plan[tp] = decision
            if not plan:
                break
            retry = await self._write_plan(plan, cause, written)
            if not retry:
                break
            await self._read_states(retry)
            pending = [tp for tp in retry if tp in self.ctx.states]
        if written:
            self._send_changes(written)
        return written

    async def _write_plan(
        self, plan: dict[TopicPartition, Decision], cause: str, written: dict[TopicPartition, LeaderIsr]
    ) -> list[TopicPartition]:
        """Write in chunks, all chunks in flight at once. Returns partitions to re-read and retry."""
        items = sorted(plan.items())
        chunks = [items[i : i + MULTI_CHUNK] for i in range(0, len(items), MULTI_CHUNK)]
        fence = CheckOp(path=paths.CONTROLLER_EPOCH, version=self.ctx.epoch_zk_version)
        calls: list[tuple[list[tuple[TopicPartition, Decision]], Pending[list[Any]]]] = []
        for chunk in chunks:
            ops: list[Op] = [fence]
            ops += [
                SetDataOp(
                    path=paths.partition_state_path(tp.topic, tp.partition),
                    data=new.encode(),
                    version=self.ctx.states[tp].zk_version,
                )
                for tp, (new, _) in chunk
            ]
            calls.append((chunk, self.zk.multi(ops)))
        retry: list[TopicPartition] = []
        for chunk, call in calls:
            try:
                results = await call
            except BadVersion as exc:
                if exc.path == paths.CONTROLLER_EPOCH:
                    raise ControllerMoved(paths.CONTROLLER_EPOCH) from None
                retry += [tp for tp, _ in chunk]
                continue
            except NoNode:
                retry += [tp for tp, _ in chunk]
                continue
            for (tp, (new, why)), result in zip(chunk, results[1:], strict=True):
                assert isinstance(result, Stat)
                old = self.ctx.states[tp]
                new = replace(new, zk_version=result.version)
                self.ctx.states[tp] = new
                written[tp] = new
                self._journal_change(tp, old, new, cause, why)
        return retry

    def _journal_change(
        self, tp: TopicPartition, old: LeaderIsr, new: LeaderIsr, cause: str, why: str
    ) -> None:
        leader = (
            f"leader {_b(old.leader)} -> {_b(new.leader)}"
            if old.leader != new.leader
            else f"leader {_b(new.leader)}"
        )
        text = (
            f"{cause}: {tp} {leader}, leader_epoch {old.leader_epoch} -> {new.leader_epoch}, "
            f"isr {list(old.isr)} -> {list(new.isr)}"
        )
        if why:
            text += f" ({why})"
        kind = "leader_election" if old.leader != new.leader else "partition_state"
        if new.leader == NO_LEADER:
            kind = "partition_offline"
        self.journal(
            kind,
            text,
            topic=tp.topic,
            partition=tp.partition,
            broker=self.id,
            leader=new.leader,
            old_leader=old.leader,
            leader_epoch=new.leader_epoch,
            isr=list(new.isr),
            old_isr=list(old.isr),
            unclean="unclean" in why,
        )

    # ------------------------------------------------------------------ leader election rules

    def _offline_choice(
        self, tp: TopicPartition, state: LeaderIsr, dead: frozenset[BrokerId]
    ) -> Decision | None:
        replicas = self.ctx.assignments.get(tp, ())
        live = [r for r in replicas if self.ctx.live(r) and r not in dead]
        in_sync = [r for r in live if r in state.isr]
        if in_sync:
            leader = in_sync[0]
            isr = tuple(r for r in state.isr if r not in dead and self.ctx.live(r))
            return self._next(
                state, leader, isr
            ), f"first live replica in the ISR, in assignment order {list(replicas)}"
        if live and self._unclean_allowed(tp.topic):
            leader = live[0]
            return self._next(state, leader, (leader,)), (
                f"unclean election: no ISR member {list(state.isr)} is alive, unclean.leader.election.enable=true "
                f"elects out-of-sync broker {leader}; what it lacks is lost"
            )
        return None

    def _next(self, state: LeaderIsr, leader: BrokerId, isr: tuple[BrokerId, ...]) -> LeaderIsr:
        return LeaderIsr(
            leader=leader,
            leader_epoch=state.leader_epoch + 1,
            isr=isr,
            controller_epoch=self.ctx.epoch,
            zk_version=state.zk_version,
        )

    def _without(self, state: LeaderIsr, gone: frozenset[BrokerId]) -> tuple[BrokerId, ...]:
        isr = tuple(r for r in state.isr if r not in gone)
        # The last ISR member stays in the ISR, so it can come back as a clean leader.
        return isr or state.isr[-1:]

    # ------------------------------------------------------------------ broker changes

    async def _on_broker_change(self) -> None:
        previous = await self._read_brokers()
        current = self.ctx.live_brokers
        gone = sorted(b for b in previous if b not in current)
        bounced = sorted(b for b in previous if b in current and previous[b] != current[b])
        joined = sorted(b for b in current if b not in previous)
        if gone or bounced:
            for b in gone:
                self.journal(
                    "broker_gone", f"broker {b} left /brokers/ids: its ZooKeeper session ended", broker=b
                )
            for b in bounced:
                self.journal(
                    "broker_gone",
                    f"broker {b} re-registered with a new session: its old self is gone",
                    broker=b,
                )
            await self._on_brokers_failed(frozenset(gone + bounced))
        if joined or bounced:
            for b in joined:
                self.journal(
                    "broker_joined",
                    f"broker {b} registered: the controller sends it the cluster's state",
                    broker=b,
                )
            await self._on_brokers_started(joined + bounced)

    async def _on_brokers_failed(self, dead: frozenset[BrokerId], *, cause: str = "") -> None:
        self.ctx.shutting_down -= dead
        cause = cause or f"broker {_names(dead)} gone"

        def decide(tp: TopicPartition, state: LeaderIsr) -> Decision | None:
            if tp.topic in self.ctx.deleting:
                return None
            if state.leader in dead:
                choice = self._offline_choice(tp, state, dead)
                if choice is not None:
                    return choice
                return (
                    self._next(state, NO_LEADER, self._without(state, dead)),
                    "no live replica in the ISR and unclean election is off: the partition is offline",
                )
            if any(r in dead for r in state.isr):
                return self._next(state, state.leader, self._without(state, dead)), "a follower left the ISR"
            return None

        await self._update(sorted(self.ctx.states), decide, cause)

    async def _on_brokers_started(self, brokers: Sequence[BrokerId]) -> None:
        self._send_update_metadata()
        for broker in brokers:
            self._send_leader_and_isr(
                broker,
                [
                    tp
                    for tp, r in self.ctx.assignments.items()
                    if broker in r and tp.topic not in self.ctx.deleting
                ],
            )
        for topic in sorted(self.ctx.deleting):  # a deletion that waited for one of them resumes
            for broker in brokers:  # a broker back (or bounced) may hold its copy again: send it again
                self.ctx.deleted_on.get(topic, set()).discard(broker)
            await self._maybe_complete_deletion(topic)
        await self._online_partitions(
            sorted(self.ctx.assignments), cause=f"broker {', '.join(map(str, brokers))} joined"
        )
        await self._check_reassignments()

    async def _online_partitions(self, tps: Sequence[TopicPartition], *, cause: str) -> None:
        """Give a leader to each partition that has none (new, or offline) and could have one."""
        new = [tp for tp in tps if tp not in self.ctx.states and tp.topic not in self.ctx.deleting]
        if new:
            await self._create_states(new)

        def decide(tp: TopicPartition, state: LeaderIsr) -> Decision | None:
            if tp.topic in self.ctx.deleting or (state.leader != NO_LEADER and self.ctx.live(state.leader)):
                return None
            return self._offline_choice(tp, state, frozenset())

        await self._update([tp for tp in tps if tp in self.ctx.states], decide, cause)

    async def _create_states(self, tps: Sequence[TopicPartition]) -> None:
        created: list[TopicPartition] = []
        for topic in sorted({tp.topic for tp in tps}):
            with contextlib.suppress(NodeExists):
                await self.zk.create(paths.topic_partitions_path(topic))
        ops: list[Op] = [CheckOp(path=paths.CONTROLLER_EPOCH, version=self.ctx.epoch_zk_version)]
        states: dict[TopicPartition, LeaderIsr] = {}
        for tp in tps:
            replicas = self.ctx.assignments[tp]
            live = tuple(r for r in replicas if self.ctx.live(r))
            if not live:
                self.journal(
                    "partition_offline",
                    f"{tp} has no live replica among {list(replicas)}: it stays without a leader",
                    topic=tp.topic,
                    partition=tp.partition,
                )
                continue
            state = LeaderIsr(
                leader=live[0], leader_epoch=0, isr=live, controller_epoch=self.ctx.epoch, zk_version=0
            )
            states[tp] = state
            ops.append(CreateOp(path=paths.partition_path(tp.topic, tp.partition)))
            ops.append(CreateOp(path=paths.partition_state_path(tp.topic, tp.partition), data=state.encode()))
        if not states:
            return
        try:
            await self.zk.multi(ops)
        except BadVersion:
            raise ControllerMoved(paths.CONTROLLER_EPOCH) from None
        except NodeExists:
            await self._read_states(list(states))
            return
        for tp, state in states.items():
            self.ctx.states[tp] = state
            created.append(tp)
            self.journal(
                "leader_election",
                f"new partition {tp}: leader {state.leader}, leader_epoch 0, isr {list(state.isr)} "
                f"(replicas {list(self.ctx.assignments[tp])}; the first live replica leads)",
                topic=tp.topic,
                partition=tp.partition,
                broker=self.id,
                leader=state.leader,
                old_leader=NO_LEADER,
                leader_epoch=0,
                isr=list(state.isr),
                unclean=False,
            )
        self._send_changes(created)

    # ------------------------------------------------------------------ topics

    async def _on_topic_change(self) -> None:
        topics = set(
            await self.zk.get_children(
                paths.BROKER_TOPICS, watch=self._watch("TopicChange", self._on_topic_change)
            )
        )
        added = sorted(topics - self.ctx.topics)
        removed = sorted(self.ctx.topics - topics)
        new: list[TopicPartition] = []
        for topic in added:
            new += await self._load_topic(topic)
        for topic in added:
            self.journal(
                "topic_created",
                f"topic {topic} created with {len(self.ctx.partitions_of(topic))} partition(s): "
                + ", ".join(
                    f"{tp.partition} on {list(self.ctx.assignments[tp])}"
                    for tp in self.ctx.partitions_of(topic)
                ),
                topic=topic,
                broker=self.id,
            )
        if new:
            await self._online_partitions(new, cause=f"topic {', '.join(added)} created")
        for topic in removed:
            self._forget_topic(topic)

    async def _on_partitions_change(self, topic: str) -> None:
        if topic not in self.ctx.topics or topic in self.ctx.deleting:
            return
        before = len(self.ctx.partitions_of(topic))
        new = await self._load_topic(topic)
        if new:
            self.journal(
                "partitions_added",
                f"topic {topic} grew from {before} to {len(self.ctx.partitions_of(topic))} partitions",
                topic=topic,
                broker=self.id,
            )
            await self._online_partitions(new, cause=f"partitions added to {topic}")

    def _forget_topic(self, topic: str) -> None:
        for tp in self.ctx.partitions_of(topic):
            self.ctx.assignments.pop(tp, None)
            self.ctx.states.pop(tp, None)
            self.ctx.reassignments.pop(tp, None)
        self.ctx.topics.discard(topic)
        self.ctx.topic_configs.pop(topic, None)
        self.ctx.topic_ids.pop(topic, None)
        self.ctx.deleting.discard(topic)
        self.ctx.deleted_on.pop(topic, None)
        self.ctx.deletion_waits.pop(topic, None)

    async def _on_delete_topics(self) -> None:
        names = await self.zk.get_children(
            paths.DELETE_TOPICS, watch=self._watch("TopicDeletion", self._on_delete_topics)
        )
        for topic in sorted(names):
            if topic not in self.ctx.topics:
                with contextlib.suppress(NoNode):
                    await self.zk.delete(paths.delete_topic_path(topic))
                continue
            if topic not in self.ctx.deleting:
                self.ctx.deleting.add(topic)
                for hook in self.broker.ctx.on_topic_deletion:
                    hook(topic)
            await self._maybe_complete_deletion(topic)

    async def _maybe_complete_deletion(self, topic: str) -> None:
        """Kafka's TopicDeletionManager: every live replica is told to delete its copy (StopReplica); a
        replica on a broker that is down makes the topic ineligible for deletion until that broker is
        back, so the topic stays in ZooKeeper, marked for deletion, and no stray copy outlives it.
        Once no replica waits, the topic leaves ZooKeeper and every broker's metadata."""
        tps = self.ctx.partitions_of(topic)
        by_broker: dict[BrokerId, dict[TopicPartition, bool]] = {}
        for tp in tps:
            for replica in self.ctx.assignments[tp]:
                by_broker.setdefault(replica, {})[tp] = True
        done = self.ctx.deleted_on.setdefault(topic, set())
        for broker, parts in sorted(by_broker.items()):
            if self.ctx.live(broker) and broker not in done:
                done.add(broker)
                self._send(
                    broker,
                    StopReplicaRequest(
                        controller_id=self.id, controller_epoch=self.ctx.epoch, partitions=parts
                    ),
                )
        waiting = tuple(b for b in sorted(by_broker) if b not in done)
        if waiting:
            if self.ctx.deletion_waits.get(topic) != waiting:
                self.ctx.deletion_waits[topic] = waiting
                self.journal(
                    "topic_deletion_waiting",
                    f"topic {topic} marked for deletion: its copies on the live brokers are deleted, but "
                    f"broker {_names(frozenset(waiting))} is down and holds one; the controller waits for it "
                    "to come back (as Kafka's does), and the topic stays in ZooKeeper meanwhile",
                    topic=topic,
                    broker=self.id,
                )
            return
        with contextlib.suppress(NoNode):
            await self.zk.delete(paths.topic_path(topic), recursive=True)
        with contextlib.suppress(NoNode):
            await self.zk.delete(paths.topic_config_path(topic))
        self._forget_topic(topic)
        self._send_update_metadata(deleted_topics=[topic])
        self.journal(
            "topic_deleted",
            f"topic {topic} deleted: its {len(tps)} partition(s) removed from ZooKeeper and every replica",
            topic=topic,
            broker=self.id,
        )
        with contextlib.suppress(NoNode):
            await self.zk.delete(paths.delete_topic_path(topic))

    # ------------------------------------------------------------------ topic config changes

    async def _on_config_change(self) -> None:
        """/config/changes: read topic configs again. An offline partition may be electable now
        (unclean.leader.election.enable turned on), as Kafka's controller re-checks."""
        try:
            await self.zk.get_children(
                paths.CONFIG_CHANGES, watch=self._watch("TopicConfigChange", self._on_config_change)
            )
        except NoNode:
            return
        reads = [(t, self.zk.get(paths.topic_config_path(t))) for t in sorted(self.ctx.topics)]
        for topic, pending in reads:
            try:
                raw, _ = await pending
                self.ctx.topic_configs[topic] = paths.decode_topic_config(raw)
            except NoNode:
                self.ctx.topic_configs[topic] = {}
        offline = [
            tp for tp, st in self.ctx.states.items() if st.leader == NO_LEADER or not self.ctx.live(st.leader)
        ]
        if offline:
            await self._online_partitions(sorted(offline), cause="topic config changed")

    # ------------------------------------------------------------------ ISR change notifications

    async def _on_isr_change(self) -> None:
        children = await self.zk.get_children(
            paths.ISR_CHANGE_NOTIFICATION, watch=self._watch("IsrChangeNotification", self._on_isr_change)
        )
        changed: set[TopicPartition] = set()
        for child in sorted(children):
            path = f"{paths.ISR_CHANGE_NOTIFICATION}/{child}"
            try:
                raw, _ = await self.zk.get(path)
                changed |= {TopicPartition(t, p) for t, p in paths.decode_isr_change(raw)}
            except NoNode:
                continue
            with contextlib.suppress(NoNode):
                await self.zk.delete(path)
        known = sorted(tp for tp in changed if tp in self.ctx.assignments)
        if known:
            await self._read_states(known)
            self._send_update_metadata()
            await self._check_reassignments()

    # ------------------------------------------------------------------ preferred leaders

    async def _on_preferred_election(self) -> None:
        stat = await self.zk.exists(
            paths.PREFERRED_REPLICA_ELECTION,
            watch=self._watch("PreferredReplicaElection", self._on_preferred_election),
        )
        if stat is None:
            return
        try:
            raw, _ = await self.zk.get(paths.PREFERRED_REPLICA_ELECTION)
        except NoNode:
            return
        tps = [TopicPartition(t, p) for t, p in paths.decode_preferred_replica_election(raw)]
        await self.elect_preferred(tps, cause="preferred leader election requested")
        with contextlib.suppress(NoNode):
            await self.zk.delete(paths.PREFERRED_REPLICA_ELECTION)

    async def elect_preferred(
        self, tps: Sequence[TopicPartition], *, cause: str
    ) -> dict[TopicPartition, LeaderIsr]:
        def decide(tp: TopicPartition, state: LeaderIsr) -> Decision | None:
            replicas = self.ctx.assignments.get(tp, ())
            if not replicas or tp.topic in self.ctx.deleting:
                return None
            preferred = replicas[0]
            if state.leader == preferred or not self.ctx.live(preferred) or preferred not in state.isr:
                return None
            if preferred in self.ctx.shutting_down:
                return None
            return self._next(
                state, preferred, state.isr
            ), f"broker {preferred} is the preferred (first) replica"

        return await self._update(tps, decide, cause)

    def _schedule_rebalance(self) -> None:
        if self._stopped or not self.broker.config.bool("auto.leader.rebalance.enable"):
            return
        interval = self.broker.config.int("leader.imbalance.check.interval.seconds") * 1000
        self._rebalance_timer = self.broker.later(
            interval,
            self._enqueue,
            "AutoPreferredReplicaLeaderElection",
            self._auto_rebalance,
            label="leader-imbalance",
        )

    async def _auto_rebalance(self) -> None:
        threshold = self.broker.config.int("leader.imbalance.per.broker.percentage")
        for broker in sorted(self.ctx.live_brokers):
            preferred_here = [
                tp
                for tp, r in self.ctx.assignments.items()
                if r and r[0] == broker and tp.topic not in self.ctx.deleting
            ]
            if not preferred_here:
                continue
            not_led = [
                tp for tp in preferred_here if tp in self.ctx.states and self.ctx.states[tp].leader != broker
            ]
            ratio = 100 * len(not_led) / len(preferred_here)
            if ratio > threshold:
                await self.elect_preferred(
                    sorted(not_led),
                    cause=(
                        f"auto leader rebalance: broker {broker} leads {len(preferred_here) - len(not_led)} of its "
                        f"{len(preferred_here)} preferred partitions ({ratio:.0f}% imbalance > "
                        f"leader.imbalance.per.broker.percentage={threshold})"
                    ),
                )
        self._schedule_rebalance()

    # ------------------------------------------------------------------ reassignment

    async def _on_reassign(self) -> None:
        stat = await self.zk.exists(
            paths.REASSIGN_PARTITIONS, watch=self._watch("PartitionReassignment", self._on_reassign)
        )
        if stat is None:
            return
        try:
            raw, _ = await self.zk.get(paths.REASSIGN_PARTITIONS)
        except NoNode:
            return
        wanted = {TopicPartition(t, p): tuple(r) for (t, p), r in paths.decode_reassignment(raw).items()}
        for tp, target in sorted(wanted.items()):
            if tp in self.ctx.reassignments or tp not in self.ctx.assignments:
                continue
            await self._start_reassignment(tp, target)
        await self._check_reassignments()

    async def _start_reassignment(self, tp: TopicPartition, target: tuple[BrokerId, ...]) -> None:
        origin = self.ctx.assignments[tp]
        if origin == target:
            return
        # A new controller finds the union already written; the znode said which replicas were new.
        adding = self.ctx.adding.get(tp) or tuple(r for r in target if r not in origin)
        removing = tuple(r for r in origin if r not in target)
        union = target + removing
        await self._write_assignment(tp.topic, {tp.partition: (union, adding, removing)})
        self.ctx.assignments[tp] = union
        self.ctx.reassignments[tp] = target
        self.ctx.adding[tp] = adding
        self.journal(
            "reassignment_started",
            f"reassignment of {tp}: {list(origin)} -> {list(target)}; adding {list(adding)}, removing {list(removing)}; "
            "the new replicas catch up first",
            topic=tp.topic,
            partition=tp.partition,
            broker=self.id,
        )
        # A new epoch tells every replica, old and new, the wider replica set.
        await self._update(
            [tp], lambda _tp, s: (self._next(s, s.leader, s.isr), "replica set widened"), "reassignment"
        )

    async def _write_assignment(
        self,
        topic: str,
        changes: dict[int, tuple[tuple[BrokerId, ...], tuple[BrokerId, ...], tuple[BrokerId, ...]]],
    ) -> None:
        raw, stat = await self.zk.get(paths.topic_path(topic))
        current = paths.decode_topic_assignment(raw)
        partitions = dict(current.partitions)
        adding = dict(current.adding_replicas)
        removing = dict(current.removing_replicas)
        for partition, (replicas, add, remove) in changes.items():
            partitions[partition] = replicas
            if add:
                adding[partition] = add
            else:
                adding.pop(partition, None)
            if remove:
                removing[partition] = remove
            else:
                removing.pop(partition, None)
        data = paths.encode_topic_assignment(
            paths.TopicAssignment(
                partitions=partitions,
                adding_replicas=adding,
                removing_replicas=removing,
                topic_id=current.topic_id,
            )
        )
        await self.zk.multi(
            [
                CheckOp(path=paths.CONTROLLER_EPOCH, version=self.ctx.epoch_zk_version),
                SetDataOp(path=paths.topic_path(topic), data=data, version=stat.version),
            ]
        )

    async def _check_reassignments(self) -> None:
        for tp, target in sorted(self.ctx.reassignments.items()):
            state = self.ctx.states.get(tp)
            if state is None or not all(r in state.isr for r in target):
                continue
            await self._finish_reassignment(tp, target)

    async def _finish_reassignment(self, tp: TopicPartition, target: tuple[BrokerId, ...]) -> None:
        removed = tuple(r for r in self.ctx.assignments[tp] if r not in target)

        def decide(_tp: TopicPartition, state: LeaderIsr) -> Decision | None:
            isr = tuple(r for r in state.isr if r in target)
            if state.leader in target and self.ctx.live(state.leader):
                return self._next(state, state.leader, isr), "reassignment complete"
            candidates = [r for r in target if self.ctx.live(r) and r in state.isr]
            if not candidates:
                return None
            return self._next(state, candidates[0], isr), "reassignment moves leadership to a target replica"

        self.ctx.assignments[tp] = target
        written = await self._update([tp], decide, "reassignment")
        if tp not in written:
            self.ctx.assignments[tp] = target + removed
            return
        await self._write_assignment(tp.topic, {tp.partition: (target, (), ())})
        for broker in removed:
            if self.ctx.live(broker):
                self._send(
                    broker,
                    StopReplicaRequest(
                        controller_id=self.id, controller_epoch=self.ctx.epoch, partitions={tp: True}
                    ),
                )
        del self.ctx.reassignments[tp]
        self.ctx.adding.pop(tp, None)
        self.journal(
            "reassignment_done",
            f"reassignment of {tp} done: replicas {list(target)}; removed {list(removed)} deleted their copies",
            topic=tp.topic,
            partition=tp.partition,
            broker=self.id,
        )
        # Its replicas are in ZooKeeper now: whoever keeps the topics (a lab's spec) hears, as of any
        # topic TopicAdmin writes.
        moving = self.ctx.reassignments
        placed = {
            q.partition: tuple(moving.get(q, r))
            for q, r in self.ctx.assignments.items()
            if q.topic == tp.topic
        }
        self.broker.ctx.topics_changed(
            TopicChange(
                topic=tp.topic,
                partitions=len(placed),
                replication_factor=len(placed.get(0, target)),
                replicas=dict(sorted(placed.items())),
                reassigned=True,
            )
        )
        await self._rewrite_reassign_znode()

    async def _rewrite_reassign_znode(self) -> None:
        try:
            raw, stat = await self.zk.get(paths.REASSIGN_PARTITIONS)
        except NoNode:
            return
        wanted = paths.decode_reassignment(raw)
        left = {
            key: replicas
            for key, replicas in wanted.items()
            if TopicPartition(*key) in self.ctx.reassignments
        }
        with contextlib.suppress(NoNode, BadVersion):
            if left:
                await self.zk.set(paths.REASSIGN_PARTITIONS, paths.encode_reassignment(left), stat.version)
            else:
                await self.zk.delete(paths.REASSIGN_PARTITIONS, stat.version)

    # ------------------------------------------------------------------ controlled shutdown

    def controlled_shutdown(
        self, broker: BrokerId, reply: Callable[[ControlledShutdownResponse], None]
    ) -> None:
        self._enqueue("ControlledShutdown", lambda: self._controlled_shutdown(broker, reply))

    async def _controlled_shutdown(
        self, broker: BrokerId, reply: Callable[[ControlledShutdownResponse], None]
    ) -> None:
        if not self.ctx.live(broker):
            reply(
                ControlledShutdownResponse(
                    error="BROKER_NOT_AVAILABLE", message=f"broker {broker} is not registered"
                )
            )
            return
        self.ctx.shutting_down.add(broker)
        gone = frozenset({broker})

        def decide(tp: TopicPartition, state: LeaderIsr) -> Decision | None:
            replicas = self.ctx.assignments.get(tp, ())
            if state.leader == broker:
                candidates = [
                    r
                    for r in replicas
                    if r != broker and r in state.isr and self.ctx.live(r) and r not in self.ctx.shutting_down
                ]
                if not candidates:
                    return None
                return (
                    self._next(state, candidates[0], self._without(state, gone)),
                    f"broker {broker} is shutting down: leadership moves first",
                )
            if broker in state.isr and len(state.isr) > 1:
                return self._next(
                    state, state.leader, self._without(state, gone)
                ), f"broker {broker} is shutting down"
            return None

        await self._update(sorted(self.ctx.states), decide, f"controlled shutdown of broker {broker}")
        remaining = tuple(
            tp
            for tp, state in sorted(self.ctx.states.items())
            if state.leader == broker and len(self.ctx.assignments.get(tp, ())) > 1
        )
        reply(ControlledShutdownResponse(remaining=remaining))


def _names(brokers: Iterable[BrokerId]) -> str:
    return ", ".join(map(str, sorted(brokers)))


def _b(broker: BrokerId) -> str:
    return "none" if broker == NO_LEADER else str(broker)
