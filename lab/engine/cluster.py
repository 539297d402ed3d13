"""The facade: one call for each thing a script, a scenario, a test or the web does to a cluster.

``Cluster.create`` builds brokers over a metadata store (memory, in virtual
time; or a real ZooKeeper) and a network, all driven by one scheduler.
Admin calls (create a topic, reassign, elect) write ZooKeeper as Kafka's
admin tools do in ZooKeeper mode, after checking the request, so a bad one
gets Kafka's error and changes nothing.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from pathlib import Path
from random import Random  # seeded instances only: never the global generator
from typing import TYPE_CHECKING, Any, Literal, TypeVar, overload

from lab.engine import errors
from lab.engine.acl import (
    LAB_CONTEXT,
    AclBinding,
    AclFilter,
    Authorizer,
    RequestContext,
    check_principal,
)
from lab.engine.admin import (
    TopicAdmin,
    validate_new_topic_name,
)
from lab.engine.broker import Broker, BrokerState
from lab.engine.clients import Consumer, Producer
from lab.engine.config import BrokerConfig
from lab.engine.context import EngineContext
from lab.engine.errors import (
    IllegalArgument,
    IllegalState,
    KafkaTimeout,
    UnknownTopicOrPartition,
    ZooKeeperNotAvailable,
)
from lab.engine.events import Event, Journal
from lab.engine.ids import BrokerId, TopicPartition, kafka_uuid
from lab.engine.ledger import Ledger
from lab.engine.limits import BROKERS
from lab.engine.metadata import paths
from lab.engine.metadata.memory import MemoryStore
from lab.engine.metadata.store import (
    ConnectionLoss,
    LinkState,
    MetadataStore,
    Session,
    SessionState,
)
from lab.engine.network import Network
from lab.engine.scheduler import Scheduler
from lab.engine.scram_store import ScramStore
from lab.engine.tasks import Pending, Task

if TYPE_CHECKING:
    from lab.engine.membership import GroupConsumer
    from lab.engine.simclients import SimulatedConsumer, SimulatedProducer, SimulatedTransformer

T = TypeVar("T")

LAB_EPOCH_MS = 1_704_067_200_000  # 2024-01-01T00:00:00Z: virtual time zero unless told otherwise
Isolation = Literal["zookeeper", "brokers", "clients"]
ADMIN_SESSION_MS = 6_000  # the lab's admin client: Kafka's zookeeper.session.timeout.ms before 2.5
WHILE_OUT = (
    "Brokers keep serving producers and consumers with the leaders and ISRs they know; what writes to "
    "ZooKeeper (topic and config changes, leader elections, ISR changes, a broker starting) waits until it "
    "answers again."
)


class Cluster:
    def __init__(
        self,
        *,
        scheduler: Scheduler,
        store: MetadataStore,
        network: Network,
        config: BrokerConfig,
        data_dir: Path,
        broker_ids: Sequence[BrokerId],
        owns_data_dir: bool,
        name: str,
        epoch_ms: int = 0,
    ) -> None:
        self.name = name
        self.scheduler = scheduler
        self.store = store
        self.network = network
        self.config = config
        self.data_dir = data_dir
        self._owns_data_dir = owns_data_dir
        self.journal = Journal(scheduler)
        self.ledger = Ledger()
        self.ctx = EngineContext(
            scheduler=scheduler,
            network=network,
            store=store,
            journal=self.journal,
            config=config,
            data_dir=data_dir,
            epoch_ms=epoch_ms,
            cluster_id_proposal=kafka_uuid(Random(f"cluster.id:{name}:{scheduler.seed}")),
            topic_ids=Random(f"topic.id:{name}:{scheduler.seed}:{epoch_ms}"),
            broker_ids=list(broker_ids),
        )
        self.brokers: dict[BrokerId, Broker] = {}
        self.broker_ids = list(broker_ids)
        # A deleted topic's records go on purpose, whoever deletes it: they are not lost.
        self.ctx.on_topic_deletion.append(self.ledger.forget_topic)
        self.topic_admin = TopicAdmin(
            self._admin_session,
            broker_ids=self.broker_ids,
            new_topic_id=self.ctx.new_topic_id,
            journal=self.journal,
            on_change=self.ctx.topics_changed,
        )
        self.isolation: dict[BrokerId, set[str]] = {}
        self.slow: dict[BrokerId, int] = {}
        self.clients: dict[str, Producer | Consumer] = {}
        self.simulated: dict[str, SimulatedProducer | SimulatedConsumer | SimulatedTransformer] = {}
        self._client_seq = 0
        self.after_step: list[Callable[[], None]] = []
        self.snapshot_hooks: list[Callable[[dict[str, Any]], None]] = []
        self._admin: Session | None = None
        self._admin_opening: Pending[Session] | None = None
        self._asked: list[Pending[Any]] = []  # questions to ZooKeeper in flight (``_asking``)
        self._closed = False
        self._outage: str | None = None
        self._out_since_ms: int | None = None
        store.on_outage(self._on_outage)
        from lab.engine.invariants import LossWatcher

        self.loss_watcher = LossWatcher(self)

    # ------------------------------------------------------------------ creation

    @classmethod
    def create(
        cls,
        brokers: int = 3,
        *,
        seed: int = 0,
        config: Mapping[str, object] | None = None,
        zookeeper: str | None = None,
        data_dir: str | Path | None = None,
        name: str = "lab",
        chroot: str | None = None,
        store: MetadataStore | None = None,
        wait: bool = True,
        epoch_ms: int = LAB_EPOCH_MS,
        listener_config: Mapping[int, Mapping[str, str]] | None = None,
    ) -> Cluster:
        """A cluster of ``brokers`` brokers (ids 1..n), on the memory store unless ``zookeeper`` is given.

        ``epoch_ms`` is the wall-clock time of virtual time zero, for the timestamps Kafka writes
        into znodes; the engine reads no clock, so a live lab passes the time it starts and
        everything else gets a fixed epoch (a run stays the same from its seed). ``listener_config``:
        each broker's listeners as its server.properties says them, when a runtime serves them (what the
        brokers register and DescribeConfigs reports); without it a broker registers PLAINTEXT at
        127.0.0.1:9092+id.
        """
        if not BROKERS.low <= brokers <= BROKERS.high:
            raise IllegalArgument(f"a lab cluster has {BROKERS.low} to {BROKERS.high} brokers, not {brokers}")
        broker_config = BrokerConfig.of(config)
        scheduler = Scheduler(seed)
        if store is None:
            if zookeeper:
                from lab.engine.metadata.zookeeper import ZooKeeperStore

                store = ZooKeeperStore(zookeeper, chroot=chroot or f"/kafka-lab/{name}")
            else:
                store = MemoryStore(
                    scheduler, latency_ms=broker_config.int("lab.zookeeper.latency.ms"), epoch_ms=epoch_ms
                )
        owns = data_dir is None
        path = Path(tempfile.mkdtemp(prefix="kafka-lab-")) if data_dir is None else Path(data_dir)
        path.mkdir(parents=True, exist_ok=True)
        network = Network(scheduler, latency_ms=broker_config.int("lab.network.latency.ms"))
        cluster = cls(
            scheduler=scheduler,
            store=store,
            network=network,
            config=broker_config,
            data_dir=path,
            broker_ids=range(1, brokers + 1),
            owns_data_dir=owns,
            name=name,
            epoch_ms=epoch_ms,
        )
        cluster.ctx.listener_config = {b: dict(c) for b, c in (listener_config or {}).items()}
        for broker_id in cluster.broker_ids:
            cluster._start_broker(broker_id)
        if wait:
            cluster.wait_for(
                lambda: cluster._is_settled() or cluster._refusal() is not None,
                30_000,
                "the brokers to register and elect a controller",
            )
            refusal = cluster._refusal()
            if refusal is not None:
                cluster.close(delete_data=False)
                raise errors.InconsistentClusterId(refusal)
        return cluster

    def _refusal(self) -> str | None:
        """Why a broker refused to start (its log directory belongs elsewhere), if one did."""
        return next((f"broker {b.id}: {b.refused}" for b in self.brokers.values() if b.refused), None)

    def _start_broker(self, broker_id: BrokerId) -> Broker:
        before = self.brokers.get(broker_id)
        broker = Broker(self.ctx, broker_id)
        if before is not None and before.session is not None and before.session.expires_in_ms is not None:
            broker.previous_session = before.session  # killed: ZooKeeper has not expired it yet
        self.brokers[broker_id] = broker
        broker.start()
        if "zookeeper" in self.isolation.get(broker_id, set()):
            broker.set_zookeeper_link(LinkState.CUT)
        return broker

    def started(self) -> bool | str:
        """True once the brokers have registered and elected a controller; why one refused to start
        (a string), if one did; False while they are on their way (``create(wait=False)``)."""
        return self._refusal() or self._is_settled()

    def topic_usable(self, topic: str) -> bool:
        """Every partition of ``topic`` has a leader, and every running broker can tell clients so."""
        known = self._known()  # the controller's view: no ZooKeeper round trip
        if known is None or topic not in known.topics:
            return False
        return self._usable([tp for tp in known.assignments if tp.topic == topic])

    def _is_settled(self) -> bool:
        running = [b for b in self.brokers.values() if b.alive]
        return all(b.state is BrokerState.RUNNING for b in running) and self.controller_id() is not None

    # ------------------------------------------------------------------ the clock

    @property
    def now_ms(self) -> int:
        return self.scheduler.now_ms

    def run_until(self, time_ms: int, *, pace: bool = True) -> None:
        """Advance to virtual ``time_ms``, running every event due. On ZooKeeper this takes real time."""
        self._check_open()
        if not self.store.realtime:
            # Nothing arrives from outside the engine (the memory store): events run back to back.
            self.scheduler.run_until(time_ms, self._stepped)
            return
        realtime = pace
        if realtime:
            self.store.begin_pacing(self.now_ms)
        while True:
            self.store.drain()
            nxt = self.scheduler.next_time()
            target = time_ms if nxt is None else min(time_ms, nxt)
            if realtime and target > self.now_ms:
                reached = self.store.pace(target)
                self.scheduler.advance_to(reached)
                if reached < target:
                    continue  # something arrived from ZooKeeper: take it first
            if nxt is not None and nxt <= time_ms:
                self.scheduler.step()
                self._stepped()
            else:
                break
        self.scheduler.advance_to(time_ms)

    def run_for(self, ms: int, *, pace: bool = True) -> None:
        self.run_until(self.now_ms + ms, pace=pace)

    def step(self) -> bool:
        """Run the next event (after taking what ZooKeeper sent). False when nothing is scheduled."""
        self._check_open()
        self.store.drain()
        ran = self.scheduler.step()
        if ran:
            self._stepped()
        return ran

    def _stepped(self) -> None:
        self.loss_watcher.check()
        for hook in self.after_step:
            hook()

    def wait_for(self, predicate: Callable[[], bool], timeout_ms: int, what: str = "the condition") -> None:
        """Drive the clock until ``predicate`` holds; KafkaTimeout after ``timeout_ms``."""
        if not self.run_until_true(predicate, timeout_ms):
            raise KafkaTimeout(f"timed out after {timeout_ms} ms waiting for {what}")

    def run_until_true(self, predicate: Callable[[], bool], timeout_ms: int) -> bool:
        deadline = self.now_ms + timeout_ms
        realtime = self.store.realtime
        if realtime:
            self.store.begin_pacing(self.now_ms)
        while not predicate():
            if self.store.drain() and predicate():  # nothing drained: nothing changed
                return True
            nxt = self.scheduler.next_time()
            if realtime:
                target = deadline if nxt is None else min(deadline, nxt)
                if target > self.now_ms:
                    reached = self.store.pace(target)
                    self.scheduler.advance_to(reached)
                    if reached < target:
                        continue
            if nxt is None or nxt > deadline:
                self.scheduler.advance_to(deadline)
                return predicate()
            self.scheduler.step()
            self._stepped()
        return True

    def wait(self, pending: Pending[Any], timeout_ms: int = 30_000, what: str = "an answer") -> Any:
        self.wait_for(pending.done, timeout_ms, what)
        return pending.result()

    # ------------------------------------------------------------------ who is who

    @property
    def cluster_id(self) -> str | None:
        """The id in /cluster/id, as the brokers read it when they registered."""
        return next((b.cluster_id for b in self.brokers.values() if b.cluster_id), None)

    def topic_id(self, topic: str) -> str | None:
        """KIP-516's id of ``topic`` (Kafka's URL-safe base64), from what the controller knows."""
        known = self.ctx.controller_context
        return known.topic_ids.get(topic) if known is not None else None

    def controller_id(self) -> BrokerId | None:
        """The controller: of the brokers that believe they are, the one with the newest controller epoch.

        An old controller cut off from ZooKeeper keeps believing until it hears its session expired;
        the snapshot shows it as a stale controller.
        """
        best: tuple[int, BrokerId] | None = None
        for broker in self.brokers.values():
            controller = broker.controller
            if broker.alive and controller is not None and broker.state is not BrokerState.PAUSED:
                rank = (controller.ctx.epoch, -broker.id)
                if best is None or rank > (best[0], -best[1]):
                    best = (controller.ctx.epoch, broker.id)
        return None if best is None else best[1]

    def controller(self) -> Any:
        cid = self.controller_id()
        return None if cid is None else self.brokers[cid].controller

    def bootstrap_brokers(self) -> list[BrokerId]:
        """Brokers a client may ask for metadata (it cannot tell which ones are down)."""
        return list(self.broker_ids)

    def broker(self, broker_id: BrokerId) -> Broker:
        if broker_id not in self.brokers:
            raise IllegalArgument(
                f"there is no broker {broker_id} (brokers: {', '.join(map(str, self.broker_ids))})"
            )
        return self.brokers[broker_id]

    def leader_of(self, topic: str, partition: int) -> BrokerId | None:
        """The broker that leads the partition now: the leader ZooKeeper names, once it has taken the lead.

        An older leader that has not heard it was replaced (paused, cut off) is a zombie, not the
        leader; a new leader that has not yet received its LeaderAndIsr does not lead yet either.
        """
        tp = TopicPartition(topic, partition)
        ctx = self.ctx.controller_context
        state = None if ctx is None else ctx.states.get(tp)
        if state is None or state.leader < 0:
            return None
        broker = self.brokers.get(state.leader)
        if broker is None or not broker.alive:
            return None
        p = broker.partitions.get(tp)
        if p is None or not p.is_leader or p.leader_epoch != state.leader_epoch:
            return None
        return broker.id

    def partition_state(self, topic: str, partition: int) -> dict[str, Any]:
        from lab.engine.snapshot import partition_view

        return partition_view(self, TopicPartition(topic, partition))

    # ------------------------------------------------------------------ ZooKeeper

    def zookeeper_outage(self) -> str | None:
        """Why ZooKeeper cannot be reached ("ZooKeeper is not answering ..."), or None while it answers,
        as the journal last told it (the store may know a moment sooner: calls that need ZooKeeper ask it)."""
        return self._outage

    def _on_outage(self, outage: str | None) -> None:
        self._outage = outage
        if outage is not None:
            asked, self._asked = self._asked, []
            for answer in asked:
                answer.fail(self._unreachable())
            self._out_since_ms = self.now_ms
            self.journal.record("zookeeper_unreachable", f"{outage}. {WHILE_OUT}")
            return
        since, self._out_since_ms = self._out_since_ms, None
        took = "" if since is None else f" after {(self.now_ms - since) / 1000:.1f} s"
        self.journal.record(
            "zookeeper_reachable",
            f"ZooKeeper answers again{took}: a session it still knows carries on where it was (a restarted "
            "server starts its session timers afresh); one that expired makes its broker register again",
        )

    def _unreachable(self, doing: str = "") -> ZooKeeperNotAvailable:
        outage = self.store.outage() or "ZooKeeper is not answering: the lab lost its connection to it"
        return ZooKeeperNotAvailable(f"{outage}{'; ' + doing if doing else ''}. {WHILE_OUT}")

    def _ask(self, pending: Pending[T], what: str = "an answer") -> T:
        """Wait for a ZooKeeper answer, but not while ZooKeeper is out: then ZOOKEEPER_NOT_AVAILABLE at once."""
        self.wait_for(lambda: pending.done() or self.store.outage() is not None, 30_000, what)
        if not pending.done():
            raise self._unreachable()
        try:
            return pending.result()
        except ConnectionLoss as lost:  # the connection went while the question was out
            raise self._unreachable() from lost

    # ------------------------------------------------------------------ admin

    def _admin_session(self) -> Pending[Session]:
        """The lab's own ZooKeeper client (as kafka-topics.sh has one): no ephemerals, no watches. On its
        way while it connects (a thread of the store's does that: a server slow to accept holds no one)."""
        if self.store.outage() is not None:
            raise self._unreachable()  # kazoo would queue the request until ZooKeeper is back
        admin = self._admin
        if admin is not None and admin.state is SessionState.SUSPENDED:
            # ZooKeeper answers the brokers, but this client is not back: a connection caught in the
            # server's restart can hang for a whole session timeout. Start afresh; it holds nothing.
            admin.abandon()
            admin = self._admin = None
        if admin is not None and admin.state not in (SessionState.EXPIRED, SessionState.CLOSED):
            return Pending.resolved(admin)
        opening = self._admin_opening
        if opening is None:
            opening = self._admin_opening = self.store.begin_session(
                name="admin", timeout_ms=ADMIN_SESSION_MS, on_state=lambda s: None
            )
            opening.add_done_callback(self._admin_opened)
        return opening

    def release_admin(self) -> bool:
        """Close the lab's own ZooKeeper client if no question waits on it (a sleeping lab does): it
        holds no ephemerals and no watches, and the next question opens another. False if it stays."""
        admin = self._admin
        if admin is None or self._asked or self._admin_opening is not None:
            return False
        self._admin = None
        admin.close()
        return True

    def _admin_opened(self, opening: Pending[Session]) -> None:
        if self._admin_opening is opening:
            self._admin_opening = None
        if opening.failed_with() is None:
            if self._closed:
                opening.result().close()
            else:
                self._admin = opening.result()

    def _asking(self, question: Pending[T]) -> Pending[T]:
        """A question to ZooKeeper, answered without waiting: its answer, or ZOOKEEPER_NOT_AVAILABLE when
        ZooKeeper goes out before it answers (kazoo would hold the question until it is back)."""
        if self.store.outage() is not None:
            raise self._unreachable()
        answer: Pending[T] = Pending()

        def answered(done: Pending[T]) -> None:
            error = done.failed_with()
            if isinstance(error, ConnectionLoss):  # the connection went while the question was out
                answer.fail(self._unreachable())
            elif error is not None:
                answer.fail(error)
            else:
                answer.resolve(done.result())
            if answer in self._asked:
                self._asked.remove(answer)

        self._asked.append(answer)
        question.add_done_callback(answered)
        return answer

    def _run_admin(self, step: Coroutine[Any, Any, T], what: str = "an answer") -> T:
        """Run one of TopicAdmin's steps with the lab's admin session, and wait for it."""
        outcome: Pending[T] = Task.start(step, what).outcome
        return self._ask(outcome, what)

    def _live_brokers(self) -> list[BrokerId]:
        return self._run_admin(self.topic_admin.live_brokers(), "the live brokers")

    def _known(self) -> Any:
        """The controller's view of topics, when a controller has loaded one. Reading it costs no
        ZooKeeper round trip, so it does not move the clock (a paused lab stays still), as Kafka's
        admin reads come from the brokers' metadata, not from ZooKeeper."""
        # A topic being deleted stays in the controller's view until its znodes go (a deletion waits
        # for every replica's broker), as it stays in ZooKeeper: the view still agrees with it.
        return self.ctx.controller_context

    def partition_count(self, topic: str) -> int:
        """How many partitions ``topic`` has (UnknownTopicOrPartition if none)."""
        known = self._known()
        if known is not None and topic in known.topics:
            return sum(1 for tp in known.assignments if tp.topic == topic)
        assignment, _ = self._assignment(topic)
        return len(assignment.partitions)

    def topics(self) -> list[str]:
        known = self._known()
        if known is not None:
            return sorted(known.topics)
        return self._run_admin(self.topic_admin.topic_names(), "the topic list")

    def create_topic(
        self,
        name: str,
        partitions: int = 1,
        replication_factor: int = 1,
        config: Mapping[str, object] | None = None,
        *,
        assignment: Mapping[int, Sequence[BrokerId]] | None = None,
        wait: bool = True,
        restoring: bool = False,
    ) -> None:
        """Create a topic as kafka-topics.sh does in ZooKeeper mode; Kafka's error and nothing created if it
        is bad. ``restoring``: a lab's topic made again as a reassignment left it, its partitions' replica
        counts free to differ (Kafka lets a reassignment do that, not a new topic)."""
        answer = self.begin_create_topic(
            name, partitions, replication_factor, config, assignment=assignment, restoring=restoring
        )
        placement = self._ask(answer, "the topic's znodes")
        if wait:
            self.wait_for(
                lambda: self.partitions_usable(name, placement),
                30_000,
                f"every partition of {name} to have a leader",
            )

    def begin_create_topic(
        self,
        name: str,
        partitions: int = 1,
        replication_factor: int = 1,
        config: Mapping[str, object] | None = None,
        *,
        assignment: Mapping[int, Sequence[BrokerId]] | None = None,
        restoring: bool = False,
    ) -> Pending[dict[int, tuple[BrokerId, ...]]]:
        """``create_topic`` without waiting: a bad name is refused now (before ZooKeeper is asked); the
        Pending holds the placement once the topic's znodes are written, or Kafka's error (nothing
        created). ``partitions_usable`` says when the controller has given them leaders."""
        validate_new_topic_name(name)
        step = self.topic_admin.create_topic(
            name, partitions, replication_factor, config, assignment=assignment, restoring=restoring
        )
        return self._asking(Task.start(step, "the topic's znodes").outcome)

    def partitions_usable(self, topic: str, partitions: Iterable[int]) -> bool:
        """Every one of ``topic``'s ``partitions`` has a leader, and every running broker can tell clients so."""
        return self._usable([TopicPartition(topic, p) for p in partitions])

    def _usable(self, tps: Sequence[TopicPartition]) -> bool:
        """Every partition has a leader, and every running broker can tell clients so."""
        if not all(self.leader_of(tp.topic, tp.partition) is not None for tp in tps):
            return False
        running = [b for b in self.brokers.values() if b.state is BrokerState.RUNNING]
        return all(
            tp in b.metadata.partitions and b.metadata.partitions[tp].leader >= 0
            for b in running
            for tp in tps
        )

    def _assignment(self, topic: str) -> tuple[paths.TopicAssignment, int]:
        return self._run_admin(self.topic_admin.assignment(topic), f"topic {topic}")

    def delete_topic(self, name: str, *, wait: bool = True) -> None:
        self._ask(self.begin_delete_topic(name), "the deletion request")
        if wait:
            self.wait_for(
                lambda: not self._run_admin(self.topic_admin.exists(name)),
                30_000,
                f"topic {name} to be deleted",
            )

    # ------------------------------------------------------------------ ACLs

    def begin_create_acls(self, bindings: Sequence[AclBinding]) -> Pending[None]:
        """Add ACLs as kafka-acls.sh does in ZooKeeper mode (straight to /kafka-acl, each change
        announced): the Pending resolves once written; INVALID_REQUEST and nothing written if one is
        bad. The brokers' authorizers take them in on the change notification, a moment later."""

        async def step() -> None:
            await (await self.topic_admin.acls(self.ctx.acls_changed)).create(bindings)
            self.journal.record(
                "acls_created",
                f"stored {len(bindings)} ACL(s): " + "; ".join(str(b) for b in bindings),
                topic=_only_topic(bindings),
            )

        return self._asking(Task.start(step(), "the ACLs").outcome)

    def create_acls(self, bindings: Sequence[AclBinding]) -> None:
        self._ask(self.begin_create_acls(bindings), "the ACLs")

    def begin_describe_acls(self, wanted: AclFilter | None = None) -> Pending[list[AclBinding]]:
        async def step() -> list[AclBinding]:
            return await (await self.topic_admin.acls()).describe(wanted or AclFilter())

        return self._asking(Task.start(step(), "the ACLs").outcome)

    def describe_acls(self, wanted: AclFilter | None = None) -> list[AclBinding]:
        """The ACLs ZooKeeper holds that ``wanted`` matches (Kafka's AclBindingFilter; None: all)."""
        return self._ask(self.begin_describe_acls(wanted), "the ACLs")

    def begin_delete_acls(self, filters: Sequence[AclFilter]) -> Pending[list[AclBinding]]:
        """Remove what the filters match; the Pending holds the ACLs removed."""

        async def step() -> list[AclBinding]:
            removed = await (await self.topic_admin.acls(self.ctx.acls_changed)).delete(filters)
            gone = sorted({b for r in removed for b in r}, key=str)
            if gone:
                self.journal.record(
                    "acls_deleted",
                    f"deleted {len(gone)} ACL(s): " + "; ".join(str(b) for b in gone),
                    topic=_only_topic(gone),
                )
            return gone

        return self._asking(Task.start(step(), "the ACLs").outcome)

    def delete_acls(self, filters: Sequence[AclFilter]) -> list[AclBinding]:
        return self._ask(self.begin_delete_acls(filters), "the ACLs")

    def authorizer(self, bindings: Iterable[AclBinding] = ()) -> Authorizer:
        """AclAuthorizer's decision over ``bindings`` with the brokers' super.users and
        allow.everyone.if.no.acl.found (what a broker decides once its cache holds them)."""
        config = self.ctx.config
        supers = [s.strip() for s in str(config.values.get("super.users", "")).split(";") if s.strip()]
        return Authorizer(
            bindings,
            super_users=supers,
            allow_everyone_if_no_acl_found=config.bool("allow.everyone.if.no.acl.found"),
        )

    def acls_taken_in(self, bindings: Iterable[AclBinding]) -> bool:
        """Every running broker with an authorizer holds exactly ``bindings`` (what ZooKeeper holds:
        ``describe_acls()``), its change notifications read."""
        wanted = frozenset(bindings)
        return all(
            frozenset(b.authorizer.bindings) == wanted
            for b in self.brokers.values()
            if b.alive and b.authorizer.enabled and b.authorizer.loaded
        )

    def begin_delete_topic(self, name: str) -> Pending[None]:
        """``delete_topic`` without waiting: the Pending is answered once the deletion is requested in
        ZooKeeper (UNKNOWN_TOPIC_OR_PARTITION for no such topic); the controller deletes it after that,
        and ``begin_topic_exists`` tells when it has."""
        return self._asking(Task.start(self.topic_admin.delete_topic(name), "the deletion request").outcome)

    def begin_topic_exists(self, name: str) -> Pending[bool]:
        """Whether ZooKeeper still has ``name``'s znode, as a question in flight."""
        return self._asking(Task.start(self.topic_admin.exists(name), f"whether {name} exists").outcome)

    def create_partitions(self, topic: str, total: int, *, wait: bool = True) -> None:
        """Grow a topic to ``total`` partitions (Kafka never shrinks one)."""
        new = self._ask(self.begin_create_partitions(topic, total), f"the partitions of {topic}")
        if wait:
            self.wait_for(
                lambda: self.partitions_usable(topic, new),
                30_000,
                f"the new partitions of {topic} to have leaders",
            )

    def begin_create_partitions(self, topic: str, total: int) -> Pending[list[int]]:
        """``create_partitions`` without waiting: the Pending holds the new partitions once ZooKeeper has
        the grown assignment, or Kafka's error (INVALID_PARTITIONS: nothing written)."""
        step = self.topic_admin.create_partitions(topic, total)
        return self._asking(Task.start(step, f"the partitions of {topic}").outcome)

    def alter_topic_config(
        self, topic: str, updates: Mapping[str, object], *, remove: Sequence[str] = ()
    ) -> dict[str, str]:
        """Change a topic's config overrides; returns the overrides now in force."""
        merged = self._ask(self.begin_alter_topic_config(topic, updates, remove=remove), "the config change")
        if self._known() is not None:
            # Answer once the controller has taken the change in, so reading it back agrees.
            self.wait_for(
                lambda: self.config_taken_in(topic, merged),
                10_000,
                f"the controller to read {topic}'s new config",
            )
        return merged

    def begin_alter_topic_config(
        self, topic: str, updates: Mapping[str, object], *, remove: Sequence[str] = ()
    ) -> Pending[dict[str, str]]:
        """The change, without waiting: the Pending holds the overrides once they are written to ZooKeeper
        (what Kafka's AlterConfigs answers on; the brokers apply them on the change notification), or
        Kafka's error (INVALID_CONFIG: nothing written)."""
        step = self.topic_admin.alter_topic_config(topic, updates, remove=remove)
        return self._asking(Task.start(step, "the config change").outcome)

    def config_taken_in(self, topic: str, overrides: Mapping[str, str]) -> bool:
        """Whether the controller reads ``overrides`` as ``topic``'s (or no controller holds a view)."""
        known = self._known()
        return known is None or known.topic_configs.get(topic) == overrides

    def topic_config(self, topic: str) -> dict[str, str]:
        """The topic's config overrides (what differs from the broker defaults)."""
        known = self._known()
        if known is not None and topic in known.topics and topic in known.topic_configs:
            return dict(known.topic_configs[topic])
        return self._run_admin(self.topic_admin.topic_config(topic), f"the config of {topic}")

    def reassign_partitions(
        self,
        plan: Mapping[tuple[str, int], Sequence[BrokerId]],
        *,
        wait: bool = True,
        timeout_ms: int = 60_000,
    ) -> None:
        """Move replicas: add the new ones, let them catch up, switch the leader, remove the old ones."""
        self._ask(self.begin_reassign_partitions(plan), "the reassignment")
        if wait:
            self.wait_for(
                lambda: all(
                    tuple(self._assignment(t)[0].partitions[p]) == tuple(r) for (t, p), r in plan.items()
                ),
                timeout_ms,
                "the reassignment to finish",
            )

    def begin_reassign_partitions(self, plan: Mapping[tuple[str, int], Sequence[BrokerId]]) -> Pending[None]:
        """``reassign_partitions`` without waiting: the Pending is answered once the plan is written to
        ZooKeeper for the controller to carry out, or with Kafka's error (nothing written)."""
        return self._asking(Task.start(self.topic_admin.reassign(plan), "the reassignment").outcome)

    def elect_preferred_leaders(
        self, partitions: Sequence[tuple[str, int]] | None = None, *, wait: bool = True
    ) -> None:
        if partitions is None:
            partitions = [(tp.topic, tp.partition) for tp in self._all_partitions()]
        self._ask(self.begin_elect_preferred_leaders(partitions), "the preferred leader election")
        if wait:
            self.wait_for(
                lambda: self._run_admin(self.topic_admin.election_done()),
                30_000,
                "the preferred leader election",
            )

    def begin_elect_preferred_leaders(self, partitions: Sequence[tuple[str, int]]) -> Pending[None]:
        """The election asked for without waiting: answered once ZooKeeper has the request (Kafka's
        INVALID_REQUEST while one is under way)."""
        step = self.topic_admin.elect_preferred(partitions)
        return self._asking(Task.start(step, "the preferred leader election").outcome)

    def _all_partitions(self) -> list[TopicPartition]:
        out: list[TopicPartition] = []
        for topic in self.topics():
            assignment, _ = self._assignment(topic)
            out += [TopicPartition(topic, p) for p in sorted(assignment.partitions)]
        return out

    # ------------------------------------------------------------------ clients

    def _client_id(self, kind: str, given: str | None) -> str:
        if given:
            if given in self.clients or given in self.simulated:
                raise IllegalArgument(f"a client named {given!r} already exists")
            return given
        while True:
            self._client_seq += 1
            name = f"{kind}-{self._client_seq}"
            if name not in self.clients and name not in self.simulated:
                return name

    def producer(
        self,
        acks: str | int = "all",
        *,
        client_id: str | None = None,
        principal: str | None = None,
        **config: object,
    ) -> Producer:
        """A producer; its requests come from ``principal`` (the lab's super user, User:admin, by default)."""
        context = _context(principal)
        settings = {k.replace("_", "."): v for k, v in config.items()}
        settings["acks"] = str(acks)
        producer = Producer(self, self._client_id("producer", client_id), settings)
        producer.endpoint.context = context
        self.clients[producer.client_id] = producer
        return producer

    @overload
    def consumer(
        self, group_id: str, *, client_id: str | None = None, principal: str | None = None, **config: object
    ) -> GroupConsumer: ...

    @overload
    def consumer(
        self,
        group_id: None = None,
        *,
        client_id: str | None = None,
        principal: str | None = None,
        **config: object,
    ) -> Consumer: ...

    def consumer(
        self,
        group_id: str | None = None,
        *,
        client_id: str | None = None,
        principal: str | None = None,
        **config: object,
    ) -> Consumer:
        """A consumer; with a ``group_id``, a member of that group (subscribe, commit). Its requests come
        from ``principal`` (the lab's super user, User:admin, by default)."""
        context = _context(principal)
        settings = {k.replace("_", "."): v for k, v in config.items()}
        if group_id is not None:
            settings["group.id"] = group_id
            from lab.engine.membership import GroupConsumer

            consumer: Consumer = GroupConsumer(self, self._client_id("consumer", client_id), settings)
        else:
            consumer = Consumer(self, self._client_id("consumer", client_id), settings)
        consumer.endpoint.context = context
        self.clients[consumer.client_id] = consumer
        return consumer

    def simulated_producer(
        self,
        topic: str,
        *,
        rate_per_s: float = 10,
        keys: int | None = 10,
        acks: str | int = "all",
        name: str | None = None,
        principal: str | None = None,
        **config: object,
    ) -> SimulatedProducer:
        """A producer that sends ``rate_per_s`` records a second, keyed from ``keys`` distinct keys (None: no keys)."""
        from lab.engine.simclients import SimulatedProducer

        client_id = self._client_id("producer", name)
        sim = SimulatedProducer(
            self,
            client_id,
            topic,
            rate_per_s=rate_per_s,
            keys=keys,
            acks=str(acks),
            principal=principal,
            **config,
        )
        self.simulated[client_id] = sim
        return sim

    def simulated_consumer(
        self,
        group: str,
        topics: Sequence[str],
        *,
        processing_ms: int = 50,
        name: str | None = None,
        principal: str | None = None,
        **config: object,
    ) -> SimulatedConsumer:
        """A group member that takes ``processing_ms`` per record and commits what it processed."""
        from lab.engine.simclients import SimulatedConsumer

        if isinstance(topics, str):
            topics = [topics]
        client_id = self._client_id("consumer", name)
        sim = SimulatedConsumer(
            self, client_id, group, topics, processing_ms=processing_ms, principal=principal, **config
        )
        self.simulated[client_id] = sim
        return sim

    def simulated_transformer(
        self,
        group: str,
        source: str,
        target: str,
        *,
        processing_ms: int = 20,
        records_per_transaction: int = 10,
        transactional_id: str | None = None,
        name: str | None = None,
        principal: str | None = None,
        **config: object,
    ) -> SimulatedTransformer:
        """A consume-transform-produce worker, exactly once: it reads ``source`` (read_committed) in
        group ``group`` and writes ``target`` and its offsets in one transaction per poll."""
        from lab.engine.simclients import SimulatedTransformer

        client_id = self._client_id("transformer", name)
        sim = SimulatedTransformer(
            self,
            client_id,
            group,
            source,
            target,
            processing_ms=processing_ms,
            records_per_transaction=records_per_transaction,
            transactional_id=transactional_id or client_id,
            principal=principal,
            **config,
        )
        self.simulated[client_id] = sim
        return sim

    def remove_client(self, name: str) -> None:
        """Stop a client (cleanly) and forget it."""
        sim = self.simulated.pop(name, None)
        if sim is not None:
            sim.stop()
        client = self.clients.pop(name, None)
        if client is None and sim is None:
            raise IllegalArgument(f"there is no client {name!r}")
        if client is not None:
            client.close()

    # ------------------------------------------------------------------ faults

    def kill_broker(self, broker_id: BrokerId, *, lose_unflushed: bool = False) -> None:
        broker = self.broker(broker_id)
        if not broker.alive:
            raise IllegalState(f"broker {broker_id} is not running")
        broker.kill(lose_unflushed=lose_unflushed)
        tail = "; its unflushed log tail is lost" if lose_unflushed else ""
        self.journal.record(
            "broker_killed",
            f"broker {broker_id} killed (a hard stop: no goodbye to ZooKeeper, which expires its session after "
            f"zookeeper.session.timeout.ms={self.config.int('zookeeper.session.timeout.ms')}){tail}",
            broker=broker_id,
        )

    def restart_broker(self, broker_id: BrokerId) -> None:
        broker = self.broker(broker_id)
        if broker.alive:
            raise IllegalState(f"broker {broker_id} is running; kill or stop it first")
        if self.store.outage() is not None:
            # A Kafka broker waits zookeeper.connection.timeout.ms for ZooKeeper, then exits.
            raise self._unreachable(f"broker {broker_id} cannot start without it")
        self.journal.record(
            "broker_restarted",
            f"broker {broker_id} starts: log recovery, then it registers",
            broker=broker_id,
        )
        self._start_broker(broker_id)

    def pause_broker(self, broker_id: BrokerId) -> None:
        broker = self.broker(broker_id)
        if broker.state is BrokerState.PAUSED:
            raise IllegalState(f"broker {broker_id} is already paused")
        if not broker.alive:
            raise IllegalState(f"broker {broker_id} is not running")
        broker.pause()
        self.journal.record(
            "broker_paused",
            f"broker {broker_id} paused (like a long GC pause: it holds everything it receives, and sends no "
            "ZooKeeper heartbeats)",
            broker=broker_id,
        )

    def resume_broker(self, broker_id: BrokerId) -> None:
        broker = self.broker(broker_id)
        if broker.state is not BrokerState.PAUSED:
            raise IllegalState(f"broker {broker_id} is not paused")
        self.journal.record(
            "broker_resumed",
            f"broker {broker_id} resumes with {broker.gate.backlog} held event(s)",
            broker=broker_id,
        )
        broker.resume()

    def isolate_broker(self, broker_id: BrokerId, from_: Isolation = "zookeeper") -> None:
        broker = self.broker(broker_id)
        if from_ not in ("zookeeper", "brokers", "clients"):
            raise IllegalArgument(f"isolate from 'zookeeper', 'brokers' or 'clients', not {from_!r}")
        cut = self.isolation.setdefault(broker_id, set())
        if from_ in cut:
            raise IllegalState(f"broker {broker_id} is already isolated from {from_}")
        cut.add(from_)
        if from_ == "zookeeper":
            broker.set_zookeeper_link(LinkState.CUT)
            text = "cut off from ZooKeeper: its session will expire; it keeps serving clients meanwhile"
        elif from_ == "brokers":
            for other in self.broker_ids:
                if other != broker_id:
                    self.network.cut(broker_id, other)
            text = "cut off from the other brokers (clients and ZooKeeper still reach it)"
        else:
            self.network.cut_from_clients(broker_id)
            text = "cut off from its clients: their requests and its answers are lost (brokers and ZooKeeper still reach it)"
        self.journal.record("broker_isolated", f"broker {broker_id} {text}", broker=broker_id)

    def slow_broker(self, broker_id: BrokerId, delay_ms: int = 2000) -> None:
        self.broker(broker_id)
        if delay_ms < 0:
            raise IllegalArgument("delay_ms must be >= 0")
        self.network.set_delay(broker_id, delay_ms)
        if delay_ms:
            self.slow[broker_id] = delay_ms
        else:
            self.slow.pop(broker_id, None)
        self.journal.record(
            "broker_slow",
            f"broker {broker_id}'s network is slow: +{delay_ms} ms on every message to and from it",
            broker=broker_id,
        )

    def lose_next_ack(self, client: str, count: int = 1) -> None:
        """The next ``count`` produce answers to ``client`` are lost on the way (the records were written)."""
        if client not in self.clients and client not in self.simulated:
            raise IllegalArgument(f"there is no client {client!r}")
        if count < 1:
            raise IllegalArgument("count must be at least 1")
        self.network.drop_next(dst=client, kind="Produce", count=count)
        self.journal.record(
            "ack_lost",
            f"the next {count} produce answer(s) to {client} will be lost: it will time out and retry, writing again",
        )

    def heal(self, broker_id: BrokerId) -> None:
        """Undo isolation and slowness (not a kill or a pause)."""
        broker = self.broker(broker_id)
        healed: list[str] = []
        cut = self.isolation.pop(broker_id, set())
        if "zookeeper" in cut:
            broker.set_zookeeper_link(LinkState.OPEN)
            healed.append("ZooKeeper")
        if "brokers" in cut:
            for other in self.broker_ids:
                self.network.mend(broker_id, other)
            healed.append("the other brokers")
        if "clients" in cut:
            self.network.mend_clients(broker_id)
            healed.append("its clients")
        if self.slow.pop(broker_id, None):
            self.network.set_delay(broker_id, 0)
            healed.append("its network speed")
        if not healed:
            raise IllegalState(f"broker {broker_id} is neither isolated nor slow")
        self.journal.record(
            "broker_healed", f"broker {broker_id} healed: {', '.join(healed)} restored", broker=broker_id
        )

    def controlled_shutdown(self, broker_id: BrokerId, *, wait: bool = True) -> None:
        broker = self.broker(broker_id)
        if not broker.alive or broker.state is BrokerState.PAUSED:
            raise IllegalState(f"broker {broker_id} is not running")
        broker.spawn(broker.controlled_shutdown(), "controlled shutdown")
        if wait:
            self.wait_for(lambda: not broker.alive, 60_000, f"broker {broker_id} to shut down")

    # ------------------------------------------------------------------ SCRAM users

    def begin_scram(self, step: Callable[[ScramStore], Coroutine[Any, Any, T]], what: str) -> Pending[T]:
        """A step on the users' SCRAM credentials (``lab.engine.scram_store``), made with the lab's own
        ZooKeeper client as ``kafka-configs.sh --zookeeper`` does, without waiting."""

        async def run() -> T:
            return await step(ScramStore(await self._admin_session(), self.ctx.credential_changed))

        return self._asking(Task.start(run(), what).outcome)

    def scram(self, step: Callable[[ScramStore], Coroutine[Any, Any, T]], what: str = "the credentials") -> T:
        return self._ask(self.begin_scram(step, what), what)

    # ------------------------------------------------------------------ reading

    def zookeeper_tree(self, root: str = "/") -> list[dict[str, Any]]:
        """The znodes of this cluster's chroot, depth first: path, data (text), ephemeral owner, version."""
        return self._ask(self.begin_zookeeper_tree(root), what="the ZooKeeper tree")

    def begin_zookeeper_tree(self, root: str = "/") -> Pending[list[dict[str, Any]]]:
        """``zookeeper_tree`` without waiting: the Pending holds the tree once ZooKeeper has answered every
        read, or ZOOKEEPER_NOT_AVAILABLE if it goes out meanwhile (raised now if it is out)."""
        return self._asking(Task.start(self._read_tree(root), "read the ZooKeeper tree").outcome)

    async def _read_tree(self, root: str) -> list[dict[str, Any]]:
        from lab.engine.metadata.tree import read_tree

        nodes = await read_tree(await self._admin_session(), root)
        return [
            {
                "path": n.path,
                "data": n.data.decode("utf-8", errors="replace"),
                "ephemeral_owner": n.stat.ephemeral_owner,
                "ephemeral": n.stat.ephemeral_owner != 0,
                "version": n.stat.version,
                "children": n.stat.num_children,
            }
            for n in nodes
        ]

    def browse(
        self,
        topic: str,
        partition: int,
        *,
        offset: int | None = None,
        timestamp: int | None = None,
        limit: int = 100,
        search: str | None = None,
    ) -> list[dict[str, Any]]:
        """Records of one partition, as a consumer would see them (below the HW), read at the leader.

        From ``offset`` (default: the log start offset) or from the first record at or after
        ``timestamp``; at most ``limit`` records; ``search`` keeps those whose key or value contains it.
        """
        if limit < 1 or limit > 10_000:
            raise IllegalArgument("limit must be between 1 and 10000")
        count = self.partition_count(topic)
        if not 0 <= partition < count:
            raise UnknownTopicOrPartition(
                f"{topic} has {count} partition(s); there is no partition {partition}"
            )
        leader = self.leader_of(topic, partition)
        if leader is None:
            raise errors.LeaderNotAvailable(f"{topic}-{partition} has no leader right now")
        replica = self.brokers[leader].partitions[TopicPartition(topic, partition)]
        log = replica.log
        end = replica.high_watermark
        if timestamp is not None:
            found = log.offset_for_timestamp(timestamp)
            start = end if found is None else max(found, log.log_start_offset)
        else:
            start = log.log_start_offset if offset is None else offset
        if start < log.log_start_offset or start > log.log_end_offset:
            raise errors.OffsetOutOfRange(
                f"offset {start} is outside {topic}-{partition}'s log [{log.log_start_offset}, {log.log_end_offset})"
            )
        from lab.engine.records import iter_records

        out: list[dict[str, Any]] = []
        position = start
        while position < end and len(out) < limit:
            data = log.read(position, 1 << 20, max_offset=end)
            if not data.records:
                break
            for record in iter_records(data.records):
                if record.offset < position or record.offset >= end:
                    continue
                key = None if record.key is None else record.key.decode("utf-8", errors="replace")
                value = None if record.value is None else record.value.decode("utf-8", errors="replace")
                if search and search not in (key or "") and search not in (value or ""):
                    continue
                out.append(
                    {
                        "topic": topic,
                        "partition": partition,
                        "offset": record.offset,
                        "timestamp": record.timestamp,
                        "key": key,
                        "value": value,
                        "headers": {
                            k: None if v is None else v.decode("utf-8", errors="replace")
                            for k, v in record.headers
                        },
                    }
                )
                if len(out) >= limit:
                    break
            position = data.next_offset
        return out

    def reassignments(self) -> dict[str, list[BrokerId]]:
        """Reassignments under way: the replicas each partition ("topic-p") is moving to."""
        ctx = self.ctx.controller_context
        if ctx is None:
            return {}
        return {str(tp): list(target) for tp, target in sorted(ctx.reassignments.items())}

    def groups(self) -> dict[str, Any]:
        """Every consumer group, as its coordinator describes it."""
        from lab.engine.snapshot import groups_view

        return groups_view(self)

    def reset_group_offsets(
        self,
        group: str,
        topic: str,
        to: str | int,
        *,
        partitions: Sequence[int] | None = None,
        attempts: int = 50,
    ) -> dict[str, int]:
        """kafka-consumer-groups.sh --reset-offsets: to "earliest", "latest", an offset, or {"timestamp": ms}.

        While the group's coordinator is not available it tries ``attempts`` times, 200 ms apart, as
        Kafka's tool does, driving the clock meanwhile (scripts and tests). A live lab's driver uses
        ``begin_reset_group_offsets`` instead and runs the lab while the answer comes.

        Only for an inactive group, as Kafka allows; returns the offsets committed, by "topic/partition".
        """
        for attempt in range(attempts):
            answer = self.begin_reset_group_offsets(group, topic, to, partitions=partitions)
            self.wait_for(answer.done, 60_000, f"group {group}'s coordinator to answer")
            try:
                return answer.result()
            except (errors.CoordinatorNotAvailable, errors.NotCoordinator, errors.CoordinatorLoadInProgress):
                # A first group may find __consumer_offsets still being created: retry, as Kafka's tool does.
                if attempt >= attempts - 1:
                    raise
                self.run_for(200)
        raise IllegalArgument(f"attempts must be at least 1, not {attempts}")

    def begin_reset_group_offsets(
        self, group: str, topic: str, to: str | int, *, partitions: Sequence[int] | None = None
    ) -> Pending[dict[str, int]]:
        """The reset, without waiting: the offsets are chosen now (Kafka's errors for a bad request or an
        active group are raised now), and the Pending holds them, by "topic/partition", once the
        coordinator has committed them, or the coordinator's error (journalled once committed)."""
        offsets = self._reset_targets(group, topic, to, partitions)
        answer: Pending[dict[str, int]] = Pending()

        def committed(done: Pending[None]) -> None:
            error = done.failed_with()
            if error is not None:
                answer.fail(error)
                return
            self.journal.record(
                "offsets_reset",
                f"group {group}'s offsets of {topic} reset to {to}: "
                + ", ".join(f"{tp} -> {o}" for tp, o in sorted(offsets.items())),
                group=group,
                topic=topic,
            )
            answer.resolve({tp.key: o for tp, o in sorted(offsets.items())})

        wanted = {(tp.topic, tp.partition): o for tp, o in offsets.items()}
        self.commit_group_offsets(group, wanted, client_id=f"reset-{group}").add_done_callback(committed)
        return answer

    def commit_group_offsets(
        self, group: str, offsets: Mapping[tuple[str, int], int], *, client_id: str | None = None
    ) -> Pending[None]:
        """Commit ``offsets`` for ``group`` from outside it (generation -1, as Kafka's tools do), without
        waiting: the Pending holds the coordinator's answer, or its error (REQUEST_TIMED_OUT after
        request.timeout.ms of the lab's time while it does not answer). Kafka takes such a commit only
        while the group has no members. The committing client is forgotten once answered."""
        committer = self.consumer(group, client_id=f"{client_id or 'commit-' + group}-{self._client_seq + 1}")
        committer.assign(list(offsets))
        done = committer.commit(dict(offsets), asynchronous=True)

        def forget(_: Pending[None]) -> None:
            committer.crash()  # it never joined: nothing to leave
            self.clients.pop(committer.client_id, None)

        done.add_done_callback(forget)
        return done

    def _reset_targets(
        self, group: str, topic: str, to: str | int, partitions: Sequence[int] | None
    ) -> dict[TopicPartition, int]:
        """Where a reset puts each partition, as Kafka's tool works it out; its errors for a bad request."""
        from lab.engine.groups import coordinator_of

        valid = to in ("earliest", "latest") or (isinstance(to, int) and not isinstance(to, bool) and to >= 0)
        if not valid and not (isinstance(to, dict) and isinstance(to.get("timestamp"), int)):
            raise IllegalArgument(
                f"reset to 'earliest', 'latest', an offset >= 0 or {{'timestamp': ms}}, not {to!r}"
            )
        found = coordinator_of(self.brokers, group)
        if found is not None and found[1].members:
            raise errors.NonEmptyGroup(
                f"Assignments can only be reset if the group '{group}' is inactive, but the current state is "
                f"{found[1].state.value}."
            )
        count = self.partition_count(topic)
        chosen = list(range(count)) if partitions is None else list(partitions)
        bad = [p for p in chosen if not 0 <= p < count]
        if bad:
            raise UnknownTopicOrPartition(f"{topic} has {count} partition(s); there is no partition {bad[0]}")
        offsets: dict[TopicPartition, int] = {}
        for p in chosen:
            tp = TopicPartition(topic, p)
            leader = self.leader_of(topic, p)
            if leader is None:
                raise errors.LeaderNotAvailable(f"{tp} has no leader right now")
            replica = self.brokers[leader].partitions[tp]
            if to == "earliest":
                offsets[tp] = replica.log_start_offset
            elif to == "latest":
                offsets[tp] = replica.high_watermark
            elif isinstance(to, int) and not isinstance(to, bool):
                # Kafka clamps an offset outside the log to its nearest end.
                offsets[tp] = min(max(to, replica.log_start_offset), replica.high_watermark)
            else:
                assert isinstance(to, dict)
                found_offset = replica.log.offset_for_timestamp(to["timestamp"])
                offsets[tp] = (
                    replica.high_watermark
                    if found_offset is None
                    else min(found_offset, replica.high_watermark)
                )
        return offsets

    def snapshot(self) -> dict[str, Any]:
        from lab.engine.snapshot import take

        return take(self)

    def events(self, since: int = 0) -> list[Event]:
        return self.journal.since(since)

    def lost_records(self) -> dict[str, list[int]]:
        """Every offset at which an acknowledged record was lost, by partition ("topic-p"), for the
        life of the cluster: a loss stays reported after its offset is written again."""
        from lab.engine.invariants import detect_losses

        detect_losses(self)
        return {str(tp): offsets for tp, offsets in self.ledger.lost_offsets().items()}

    # ------------------------------------------------------------------ the end

    def _check_open(self) -> None:
        if self._closed:
            raise IllegalState(f"cluster {self.name} is closed")

    def close(self, *, delete_data: bool | None = None) -> None:
        """Stop every broker and client; the temp data dir goes unless kept."""
        if self._closed:
            return
        for client in self.clients.values():
            client.close()
        for broker in self.brokers.values():
            if broker.alive:
                broker.kill()
        if self._admin is not None:
            self._admin.close()
        self._closed = True  # an admin session still connecting is closed when it arrives
        self.store.close()
        self._closed = True
        if delete_data if delete_data is not None else self._owns_data_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    def __enter__(self) -> Cluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _context(principal: str | None) -> RequestContext:
    """The context a client's requests carry: ``principal`` (checked: Type:name) from the lab's host."""
    if principal is None:
        return LAB_CONTEXT
    return RequestContext(check_principal(principal))


def _only_topic(bindings: Iterable[AclBinding]) -> str | None:
    """The topic the journal line is about, when every binding names the same literal topic."""
    from lab.engine.acl import PatternType, ResourceType

    names = {
        b.resource.name
        for b in bindings
        if b.resource.type is ResourceType.TOPIC and b.resource.pattern is PatternType.LITERAL
    }
    return names.pop() if len(names) == 1 else None
