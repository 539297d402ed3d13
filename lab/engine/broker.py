"""A broker: Kafka's ReplicaManager, its ZooKeeper session, and (when elected) the controller.

The broker serves produce and fetch for the partitions it leads, pulls from
the leaders of those it follows (``fetcher.py``), keeps each leader's ISR
honest (``partition.py`` decides, the broker writes the state znode), and obeys
the controller's LeaderAndIsr, UpdateMetadata and StopReplica requests.

Every way in (a message, a timer, a ZooKeeper answer or watch) passes through
the broker's ``Gate``: held while the broker is paused, closed once it is dead.
"""

from __future__ import annotations

import enum
import re
import shutil
from collections.abc import Callable, Coroutine, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, TypeVar

from lab.engine import authorization, errors
from lab.engine.acl import BROKER_CONTEXT
from lab.engine.authorizer import BrokerAuthorizer
from lab.engine.config import BrokerConfig, effective_topic_config
from lab.engine.context import EngineContext
from lab.engine.endpoints import format_endpoint, parse_endpoints
from lab.engine.errors import KafkaError, NotLeaderOrFollower, RequestTimedOut, UnknownTopicOrPartition
from lab.engine.gate import Gate, GatedSession
from lab.engine.ids import BrokerId, TopicPartition
from lab.engine.metadata import kafkazk, paths
from lab.engine.metadata.store import (
    BadVersion,
    CreateOp,
    LinkState,
    MetadataError,
    NodeExists,
    NoNode,
    Op,
    SessionState,
    SetDataOp,
    WatchEvent,
    WatchKind,
)
from lab.engine.network import Endpoint, Envelope
from lab.engine.notifications import purge_obsolete
from lab.engine.partition import IsrChange, Partition
from lab.engine.protocol import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    ControlledShutdownRequest,
    ControlledShutdownResponse,
    EpochEndOffset,
    FetchPartition,
    FetchPartitionData,
    FetchRequest,
    FetchResponse,
    LeaderAndIsrRequest,
    LeaderAndIsrResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    ListOffsetsResult,
    MetadataRequest,
    MetadataResponse,
    OffsetsForLeaderEpochRequest,
    OffsetsForLeaderEpochResponse,
    PartitionMetadata,
    PartitionStateInfo,
    ProducePartitionResult,
    ProduceRequest,
    ProduceResponse,
    StopReplicaRequest,
    StopReplicaResponse,
    TopicMetadata,
    UpdateMetadataRequest,
    UpdateMetadataResponse,
)
from lab.engine.records import iter_records
from lab.engine.scheduler import Scheduler, Timer
from lab.engine.storage.checkpoints import (
    META_PROPERTIES,
    OffsetCheckpointFile,
    PartitionMetadataFile,
    read_properties,
    write_properties,
)
from lab.engine.storage.config import LogConfig
from lab.engine.storage.log import PartitionLog, RetentionStats
from lab.engine.tasks import Pending, SerialQueue, Task

if TYPE_CHECKING:
    from lab.engine.controller import Controller
    from lab.engine.fetcher import ReplicaFetcher

T = TypeVar("T")
_PARTITION_DIR = re.compile(r"^(?P<topic>[a-zA-Z0-9._-]+)-(?P<partition>\d+)$")
REPLICATION_CHECKPOINT = "replication-offset-checkpoint"
RECOVERY_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_CHECKPOINT = "log-start-offset-checkpoint"
CLEANER_CHECKPOINT = "cleaner-offset-checkpoint"


class BrokerState(enum.Enum):
    STARTING = "starting"  # recovering logs, registering in ZooKeeper
    RUNNING = "running"
    PAUSED = "paused"
    SHUTTING_DOWN = "shutting_down"  # controlled shutdown under way
    STOPPED = "stopped"  # shut down cleanly
    DEAD = "dead"  # killed


@dataclass(slots=True)
class BrokerStats:
    """Counters for the charts; they only grow."""

    produce_requests: int = 0
    records_in: int = 0
    bytes_in: int = 0
    fetch_requests: int = 0
    records_out_to_consumers: int = 0
    bytes_out: int = 0
    isr_shrinks: int = 0
    isr_expands: int = 0


class MetadataCache:
    """What the controller last told this broker about the cluster (UpdateMetadata)."""

    def __init__(self) -> None:
        self.controller_id: BrokerId = -1
        self.controller_epoch = -1
        self.live_brokers: tuple[BrokerId, ...] = ()
        self.partitions: dict[TopicPartition, PartitionStateInfo] = {}
        self.topic_ids: dict[str, str] = {}

    def update(self, req: UpdateMetadataRequest) -> None:
        self.controller_id = req.controller_id
        self.controller_epoch = req.controller_epoch
        self.live_brokers = req.live_brokers
        for topic in req.deleted_topics:
            self.topic_ids.pop(topic, None)
            for tp in [tp for tp in self.partitions if tp.topic == topic]:
                del self.partitions[tp]
        self.topic_ids.update(req.topic_ids)
        for info in req.partitions:
            self.partitions[info.tp] = info

    def topics(self) -> dict[str, list[PartitionStateInfo]]:
        out: dict[str, list[PartitionStateInfo]] = {}
        for tp, info in sorted(self.partitions.items()):
            out.setdefault(tp.topic, []).append(info)
        return out

    def describe(self, topics: Iterable[str] | None) -> MetadataResponse:
        known = self.topics()
        names = sorted(known) if topics is None else list(topics)
        result: dict[str, TopicMetadata] = {}
        live = set(self.live_brokers)
        for name in names:
            infos = known.get(name)
            if infos is None:
                result[name] = TopicMetadata(name=name, error=UnknownTopicOrPartition.name)
                continue
            parts = tuple(
                PartitionMetadata(
                    partition=i.tp.partition,
                    leader=i.leader if i.leader in live else -1,
                    leader_epoch=i.leader_epoch,
                    replicas=i.replicas,
                    isr=i.isr,
                    error=None if i.leader in live else errors.LeaderNotAvailable.name,
                )
                for i in infos
            )
            result[name] = TopicMetadata(name=name, partitions=parts, topic_id=self.topic_ids.get(name))
        return MetadataResponse(brokers=self.live_brokers, controller_id=self.controller_id, topics=result)


@dataclass(slots=True, eq=False)
class DelayedProduce:
    """An acks=all produce waiting for the ISR to have its records (Kafka's produce purgatory)."""

    respond: Callable[[dict[TopicPartition, ProducePartitionResult]], None]
    results: dict[TopicPartition, ProducePartitionResult]
    required: dict[TopicPartition, int]  # offset the HW must reach
    timer: Timer | None = None


@dataclass(slots=True, eq=False)
class DelayedFetch:
    """A fetch that found nothing new; it waits for data (or the HW) or for max.wait.ms."""

    request: Envelope
    timer: Timer | None = None
    done: bool = False


@dataclass(slots=True)
class _Watches:
    fetches: dict[TopicPartition, list[DelayedFetch]] = field(default_factory=dict)
    produces: dict[TopicPartition, list[DelayedProduce]] = field(default_factory=dict)


class Broker:
    def __init__(
        self, ctx: EngineContext, broker_id: BrokerId, *, config: BrokerConfig | None = None
    ) -> None:
        self.ctx = ctx
        self.id = broker_id
        self.config = config or ctx.config
        self.log_dir = ctx.data_dir / f"broker-{broker_id}"
        # Written every replica.high.watermark.checkpoint.interval.ms: made once, not every time.
        self._checkpoints = {
            name: OffsetCheckpointFile(self.log_dir / name)
            for name in (
                REPLICATION_CHECKPOINT,
                RECOVERY_CHECKPOINT,
                LOG_START_CHECKPOINT,
                CLEANER_CHECKPOINT,
            )
        }
        self.state = BrokerState.STARTING
        self.gate = Gate()
        self.endpoint = Endpoint(
            ctx.network,
            ctx.scheduler,
            broker_id,
            self._handle_request,
            gate=self.gate,
            context=BROKER_CONTEXT,
        )
        self.authorizer = BrokerAuthorizer(self)
        self.session: GatedSession | None = None
        # The session of this broker's previous run, if it was killed: its /brokers/ids znode stays
        # until ZooKeeper expires it (this run waits for that to register).
        self.previous_session: GatedSession | None = None
        self._session_registered = False
        self._disconnected_ms: int | None = None  # when the session lost its connection, while it has
        self.broker_epoch = -1
        self.partitions: dict[TopicPartition, Partition] = {}
        self.topic_configs: dict[str, dict[str, str]] = {}
        self.metadata = MetadataCache()
        self.fetchers: dict[BrokerId, ReplicaFetcher] = {}
        self.controller: Controller | None = None
        self.controller_id: BrokerId = -1
        self.controller_epoch_seen = -1
        self.stats = BrokerStats()
        from lab.engine.groups import GroupCoordinator

        self.groups = GroupCoordinator(self)
        from lab.engine.admin import AdminManager

        self.admin = AdminManager(self)
        from lab.engine.producer_ids import ProducerIdManager

        self.producer_ids = ProducerIdManager(self)
        from lab.engine.transactions import TransactionCoordinator

        self.transactions = TransactionCoordinator(self)
        self.cluster_id: str | None = None
        self._watches = _Watches()
        self._jobs = SerialQueue(self._job_failed)
        self._link = LinkState.OPEN
        self._recovered: list[str] = []
        self.started_ms = ctx.now_ms
        self.refused = ""  # why it would not start (its log directory belongs elsewhere)

    # ------------------------------------------------------------------ helpers

    @property
    def now_ms(self) -> int:
        return self.ctx.scheduler.now_ms

    @property
    def alive(self) -> bool:
        return self.state not in (BrokerState.DEAD, BrokerState.STOPPED)

    def journal(self, kind: str, text: str, **kw: Any) -> None:
        self.ctx.journal.record(kind, text, broker=kw.pop("broker", self.id), **kw)

    def later(self, delay_ms: int, fn: Callable[..., Any], *args: Any, label: str = "") -> Timer:
        """A timer that fires through the gate."""
        return self.ctx.scheduler.call_later(
            delay_ms, self.gate, fn, *args, label=label or f"broker {self.id}"
        )

    def every(self, interval_ms: int, fn: Callable[[], None], label: str) -> None:
        def tick() -> None:
            if self.alive:
                fn()
                self.later(interval_ms, tick, label=label)

        self.later(interval_ms, tick, label=label)

    def sleep(self, delay_ms: int) -> Pending[None]:
        done: Pending[None] = Pending()
        self.later(delay_ms, done.resolve, None, label="backoff")
        return done

    def call(self, dst: BrokerId, request: Any, *, timeout_ms: int) -> Pending[Any]:
        """Send a request; the Pending holds the response, or fails with a KafkaError."""
        out: Pending[Any] = Pending()

        def answered(response: Any) -> None:
            if isinstance(response, KafkaError):
                out.fail(response)
            else:
                out.resolve(response)

        self.endpoint.request(dst, request, answered, timeout_ms=timeout_ms)
        return out

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> Task[Any]:
        """Run a coroutine for this broker; its failure lands in the journal."""
        task: Task[Any] = Task(coro, name)
        task.outcome.add_done_callback(lambda p: self._job_done(name, p))
        task._step(None, None)
        return task

    def _job_done(self, name: str, outcome: Pending[Any]) -> None:
        error = outcome.failed_with()
        if error is not None:
            self._job_failed(name, error)

    def _job_failed(self, name: str, error: BaseException) -> None:
        if not self.alive:
            return
        if isinstance(error, MetadataError | KafkaError):
            self.journal("broker_error", f"broker {self.id}: {name} failed: {error}")
            return
        raise error  # a bug, not a fault: let it surface

    def topic_config(self, topic: str) -> dict[str, str]:
        return effective_topic_config(self.topic_configs.get(topic, {}), self.config)

    def log_config(self, topic: str) -> LogConfig:
        return LogConfig.from_topic_config(self.topic_config(topic))

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.refused = ""
        self._load_logs()
        self._open_session()
        lag = self.config.int("replica.lag.time.max.ms")
        self.every(max(1, lag // 2), self._maybe_shrink_isrs, "isr-expiration")
        self.every(
            self.config.int("replica.high.watermark.checkpoint.interval.ms"), self.checkpoint, "hw-checkpoint"
        )
        self.every(self.config.int("log.retention.check.interval.ms"), self._apply_retention, "log-retention")
        self.every(
            self.config.int("transaction.abort.timed.out.transaction.cleanup.interval.ms"),
            self.transactions.abort_timed_out_transactions,
            "transaction-timeouts",
        )
        flush = self.config.int("log.flush.interval.ms")
        if flush >= 0:
            self.every(max(1, flush), self.flush_logs, "log-flush")

    def _load_logs(self) -> None:
        recovery = OffsetCheckpointFile(self.log_dir / RECOVERY_CHECKPOINT).read()
        hws = OffsetCheckpointFile(self.log_dir / REPLICATION_CHECKPOINT).read()
        starts = OffsetCheckpointFile(self.log_dir / LOG_START_CHECKPOINT).read()
        cleaned = OffsetCheckpointFile(self.log_dir / CLEANER_CHECKPOINT).read()
        for child in sorted(self.log_dir.iterdir()):
            match = _PARTITION_DIR.match(child.name)
            if not child.is_dir() or match is None:
                continue
            tp = TopicPartition(match["topic"], int(match["partition"]))
            key = (tp.topic, tp.partition)
            log = PartitionLog.open(
                child,
                LogConfig.from_topic_config(self.topic_config(tp.topic)),
                now_ms=self.now_ms,
                recovery_point=recovery.get(key, 0),
                log_start_offset=starts.get(key),
                cleaner_checkpoint=cleaned.get(key),
            )
            self.partitions[tp] = Partition(tp, self.id, log, high_watermark=hws.get(key, 0))
            self._recovered.append(f"{tp} LEO {log.log_end_offset}")
        if self._recovered:
            self.journal(
                "log_recovered",
                f"broker {self.id} opened {len(self._recovered)} logs from disk: {', '.join(self._recovered)}",
            )

    def _open_session(self) -> None:
        timeout = self.config.int("zookeeper.session.timeout.ms")
        box: list[Any] = []

        def on_state(state: SessionState) -> None:
            self.gate(self._on_session_state, box[0] if box else None, state)

        raw = self.ctx.store.open_session(name=f"broker-{self.id}", timeout_ms=timeout, on_state=on_state)
        box.append(raw)
        self.session = GatedSession(raw, self.gate)
        self._session_registered = False
        if self._link is not LinkState.OPEN:
            raw.set_link(self._link)

    def _on_session_state(self, raw: Any, state: SessionState) -> None:
        if self.session is None or raw is not self.session.raw or not self.alive:
            return
        if state is SessionState.CONNECTED:
            if not self._session_registered:
                self._session_registered = True
                self._jobs.put("register", self._register)
            elif self._disconnected_ms is not None:
                # The server still knew the session: nothing to redo, as for a Kafka broker.
                away = (self.now_ms - self._disconnected_ms) / 1000
                self.journal(
                    "zk_reconnected",
                    f"broker {self.id} reconnected to ZooKeeper after {away:.1f} s: its session "
                    f"0x{self._zk().session_id:x} is still alive, so /brokers/ids/{self.id} and its watches stand",
                )
            self._disconnected_ms = None
        elif state is SessionState.SUSPENDED:
            self._disconnected_ms = self.now_ms
            self.journal("zk_disconnected", f"broker {self.id} lost its connection to ZooKeeper")
        elif state is SessionState.EXPIRED:
            self._disconnected_ms = None
            self.journal(
                "zk_session_expired",
                f"broker {self.id}'s ZooKeeper session expired: it re-registers with a new session",
            )
            self._resign("its ZooKeeper session expired")
            self._jobs.clear()  # they talked to the dead session; the new one starts afresh
            self._open_session()

    async def _register(self) -> None:
        zk = self._zk()
        await paths.ensure_paths(zk)
        cluster_id = await kafkazk.get_or_create_cluster_id(zk, self.ctx.cluster_id_proposal)
        if not self._check_meta_properties(cluster_id):
            return
        self.cluster_id = cluster_id
        endpoints, host, port = self.endpoints()
        registration = paths.encode_broker_registration(
            paths.BrokerRegistration(
                broker_id=self.id, host=host, port=port, endpoints=endpoints, timestamp_ms=self.ctx.wall_ms
            )
        )
        waited = False
        while True:
            try:
                await zk.create(paths.broker_path(self.id), registration, ephemeral=True)
                break
            except NodeExists:
                if not waited:
                    waited = True
                    self.journal(
                        "broker_waiting",
                        f"broker {self.id} waits: /brokers/ids/{self.id} still belongs to its old session, "
                        "which ZooKeeper has not expired yet",
                    )
                # Register the moment ZooKeeper drops the old registration.
                gone: Pending[WatchEvent] = Pending()
                if await zk.exists(paths.broker_path(self.id), watch=gone.resolve) is not None:
                    await gone
        stat = await zk.exists(paths.broker_path(self.id))
        self.broker_epoch = stat.czxid if stat is not None else -1
        if self.state is BrokerState.STARTING:
            self.state = BrokerState.RUNNING
        self.journal(
            "broker_registered",
            f"broker {self.id} registered at /brokers/ids/{self.id} (broker epoch {self.broker_epoch})",
        )
        await self._watch_config_changes()
        await self.authorizer.start()
        await self._elect()

    def _check_meta_properties(self, cluster_id: str) -> bool:
        """KafkaServer.startup's check of meta.properties, then its checkpoint: a log directory belongs
        to one broker of one cluster. False (the broker refused to start) when it belongs elsewhere."""
        path = self.log_dir / META_PROPERTIES
        stored = read_properties(path)
        if stored.get("cluster.id") not in (None, cluster_id):
            self._refuse(
                "InconsistentClusterIdException",
                f"The Cluster ID {cluster_id} doesn't match stored clusterId Some({stored['cluster.id']}) in "
                "meta.properties. The broker is trying to join the wrong cluster. Configured zookeeper.connect "
                "may be wrong.",
            )
            return False
        if stored.get("broker.id") not in (None, str(self.id)):
            self._refuse(
                "InconsistentBrokerIdException",
                f"Configured broker.id {self.id} doesn't match stored broker.id Some({stored['broker.id']}) in "
                "meta.properties. If you moved your data, make sure your configured broker.id matches. If you "
                "intend to create a new broker, you should remove all data in your data directories (log.dirs).",
            )
            return False
        wanted = {"version": "0", "broker.id": str(self.id), "cluster.id": cluster_id}
        if stored != wanted:
            write_properties(path, wanted)
        return True

    def _refuse(self, exception: str, message: str) -> None:
        """A fatal error during startup: the broker shuts down before it registers, writing nothing."""
        self.refused = f"{exception}: {message}"
        self.journal("broker_refused", f"broker {self.id} refuses to start: {self.refused}")
        self.state = BrokerState.STOPPED
        self._halt()
        for partition in self.partitions.values():
            partition.log.crash(lose_unflushed=False)  # the process exits: nothing flushed or checkpointed
        if self.session is not None:
            self.session.close()

    @property
    def advertised(self) -> tuple[str, int]:
        """Where clients reach this broker: its listener, or Kafka's conventional port when it has none."""
        return self.ctx.advertised.get(self.id, ("127.0.0.1", 9092 + self.id))

    def endpoints(self) -> tuple[tuple[str, ...], str, int]:
        """What ``/brokers/ids/<id>`` says of where clients reach this broker, as Kafka writes it: every
        advertised listener ("SASL_SSL://host:port"), and the PLAINTEXT one's host and port ("" and -1
        when it has none: Kafka's null host)."""
        given = self.ctx.listener_config.get(self.id, {}).get("advertised.listeners", "")
        if not given:
            host, port = self.advertised
            return (format_endpoint("PLAINTEXT", host, port),), host, port
        endpoints = parse_endpoints(given)
        plain = next((e for e in endpoints if e.listener == "PLAINTEXT"), None)
        written = tuple(str(e) for e in endpoints)
        if plain is None:
            return written, "", -1
        return written, plain.host, plain.port

    def _zk(self) -> GatedSession:
        assert self.session is not None
        return self.session

    # ------------------------------------------------------------------ controller election

    async def _elect(self) -> None:
        """KafkaController.elect: if nobody holds /controller, try to, and bump the epoch in the same multi."""
        zk = self._zk()
        if await zk.exists(paths.CONTROLLER, watch=self._on_controller_watch) is not None:
            await self._learn_controller()
            return
        try:
            epoch, version = await kafkazk.register_controller_and_increment_controller_epoch(
                zk, self.id, self.ctx.wall_ms
            )
        except kafkazk.ControllerMoved:
            await self._learn_controller()  # another broker won the race
            return
        from lab.engine.controller import Controller

        self.controller_id = self.id
        self.controller = Controller(self, epoch=epoch, epoch_zk_version=version)
        self.controller.start()

    async def _learn_controller(self) -> None:
        """Who holds /controller (watched); elect again if it went meanwhile."""
        try:
            raw, _ = await self._zk().get(paths.CONTROLLER)
        except NoNode:
            self._jobs.put("elect", self._elect)
            return
        self.controller_id = paths.decode_controller(raw).broker_id

    def _on_controller_watch(self, event: WatchEvent) -> None:
        if not self.alive:
            return
        if event.kind is WatchKind.DELETED:
            self._resign("/controller was deleted")
            self._jobs.put("elect", self._elect)
        else:
            self._jobs.put("watch-controller", self._rewatch_controller)

    async def _rewatch_controller(self) -> None:
        zk = self._zk()
        stat = await zk.exists(paths.CONTROLLER, watch=self._on_controller_watch)
        if stat is None:
            self._resign("/controller is gone")
            await self._elect()
            return
        raw, _ = await zk.get(paths.CONTROLLER)
        self.controller_id = paths.decode_controller(raw).broker_id
        if self.controller_id != self.id:
            self._resign(f"broker {self.controller_id} is the controller now")

    def _resign(self, why: str) -> None:
        if self.controller is not None:
            self.controller.stop()
            self.controller = None
            self.journal("controller_resigned", f"broker {self.id} stops being the controller: {why}")

    # ------------------------------------------------------------------ topic configs

    async def _watch_config_changes(self) -> list[str]:
        """Watch /config/changes; the notifications there now."""
        zk = self._zk()
        try:
            return await zk.get_children(paths.CONFIG_CHANGES, watch=self._on_config_change)
        except NoNode:
            return []

    def _on_config_change(self, event: WatchEvent) -> None:
        if self.alive:
            self._jobs.put("config-change", self._reload_configs)

    async def _reload_configs(self) -> None:
        notifications = await self._watch_config_changes()
        topics = sorted({tp.topic for tp in self.partitions})
        await self.load_topic_configs(topics, force=True)
        for _tp, partition in self.partitions.items():
            self._apply_topic_config(partition)
        await purge_obsolete(self._zk(), paths.CONFIG_CHANGES, notifications, self.ctx.wall_ms)

    async def load_topic_configs(self, topics: Iterable[str], *, force: bool = False) -> None:
        wanted = [t for t in topics if force or t not in self.topic_configs]
        zk = self._zk()
        reads = [(t, zk.get(paths.topic_config_path(t))) for t in wanted]
        for topic, pending in reads:
            try:
                raw, _ = await pending
                self.topic_configs[topic] = paths.decode_topic_config(raw)
            except NoNode:
                self.topic_configs[topic] = {}

    def _apply_topic_config(self, partition: Partition) -> None:
        config = self.topic_config(partition.tp.topic)
        partition.min_insync_replicas = int(config["min.insync.replicas"])
        partition.log.update_config(LogConfig.from_topic_config(config))

    # ------------------------------------------------------------------ requests

    def _handle_request(self, env: Envelope) -> None:
        if not self.alive:
            return
        if self.authorizer.enabled:
            screened = authorization.screen(self, env)
            if screened is None:
                return  # denied whole, and answered
            env = screened
        body = env.body
        handler = self._handlers.get(type(body))
        if handler is None:
            handler = self._extra_handler(body)
        if handler is None:
            self.journal("broker_error", f"broker {self.id} got an unknown request {type(body).__name__}")
            return
        handler(self, env)

    def _extra_handler(self, body: Any) -> Callable[[Broker, Envelope], None] | None:
        """Requests served beyond replication: the group coordinator's."""
        handler = (
            self.transactions.handler(body)
            or self.groups.handler(body)
            or self.admin.handler(body)
            or self.producer_ids.handler(body)
        )
        if handler is None:
            return None
        return lambda _broker, env: handler(env)

    # Produce.

    def _on_produce(self, env: Envelope) -> None:
        req: ProduceRequest = env.body
        self.stats.produce_requests += 1

        def respond(results: dict[TopicPartition, ProducePartitionResult]) -> None:
            if req.acks != 0:
                self.endpoint.respond(env, ProduceResponse(partitions=results))

        self.append_records(req.partitions, acks=req.acks, timeout_ms=req.timeout_ms, respond=respond)

    def append_records(
        self,
        partitions: Mapping[TopicPartition, bytes],
        *,
        acks: int,
        timeout_ms: int,
        respond: Callable[[dict[TopicPartition, ProducePartitionResult]], None],
    ) -> None:
        """Kafka's ReplicaManager.appendRecords: append at the leader; with acks=all, answer once the ISR has it."""
        now = self.now_ms
        results: dict[TopicPartition, ProducePartitionResult] = {}
        required: dict[TopicPartition, int] = {}
        for tp, batches in partitions.items():
            partition = self.partitions.get(tp)
            if partition is None or not partition.is_leader:
                error: KafkaError = (
                    UnknownTopicOrPartition(f"{tp} does not exist")
                    if tp not in self.metadata.partitions and partition is None
                    else NotLeaderOrFollower(f"broker {self.id} is not the leader of {tp}")
                )
                results[tp] = ProducePartitionResult(error=error.name, message=error.message)
                continue
            try:
                info = partition.append_records_to_leader(batches, acks=acks, now_ms=now)
            except KafkaError as exc:
                results[tp] = ProducePartitionResult(error=exc.name, message=exc.message)
                continue
            self.stats.records_in += info.record_count
            self.stats.bytes_in += len(batches)
            results[tp] = ProducePartitionResult(
                base_offset=info.first_offset, log_start_offset=partition.log_start_offset
            )
            if acks == -1:
                required[tp] = info.last_offset + 1
            self._data_appended(tp)
        self.await_replication(results, required, timeout_ms=timeout_ms, respond=respond)

    def await_replication(
        self,
        results: dict[TopicPartition, ProducePartitionResult],
        required: dict[TopicPartition, int],
        *,
        timeout_ms: int,
        respond: Callable[[dict[TopicPartition, ProducePartitionResult]], None],
    ) -> None:
        """Answer ``results`` once every partition's HW reached its ``required`` offset (Kafka's
        DelayedProduce, for acks=all), or ``timeout_ms`` passed."""
        if not required:
            respond(results)
            return
        delayed = DelayedProduce(respond, results, required)
        if self._try_complete_produce(delayed):
            return
        delayed.timer = self.later(timeout_ms, self._expire_produce, delayed, label="produce timeout")
        for tp in required:
            self._watches.produces.setdefault(tp, []).append(delayed)

    def _try_complete_produce(self, delayed: DelayedProduce) -> bool:
        for tp, offset in list(delayed.required.items()):
            partition = self.partitions.get(tp)
            error: KafkaError | None
            if partition is None:
                done, error = True, NotLeaderOrFollower(f"broker {self.id} no longer hosts {tp}")
            else:
                done, error = partition.check_enough_replicas_reached(offset)
            if not done:
                return False
            if error is not None:
                delayed.results[tp] = ProducePartitionResult(error=error.name, message=error.message)
            del delayed.required[tp]
        self._finish_produce(delayed)
        return True

    def _finish_produce(self, delayed: DelayedProduce) -> None:
        Scheduler.cancel(delayed.timer)
        for tp in list(self._watches.produces):
            waiting = self._watches.produces[tp]
            if delayed in waiting:
                waiting.remove(delayed)
                if not waiting:
                    del self._watches.produces[tp]
        delayed.respond(delayed.results)

    def _expire_produce(self, delayed: DelayedProduce) -> None:
        if not delayed.required:
            return
        for tp in delayed.required:
            partition = self.partitions.get(tp)
            isr = list(partition.isr) if partition is not None else []
            err = RequestTimedOut(f"{tp}: the ISR {isr} did not have the records within request.timeout.ms")
            delayed.results[tp] = ProducePartitionResult(error=err.name, message=err.message)
        delayed.required.clear()
        self._finish_produce(delayed)

    def _check_produces(self, tp: TopicPartition) -> None:
        for delayed in list(self._watches.produces.get(tp, ())):
            self._try_complete_produce(delayed)

    # Fetch.

    def _on_fetch(self, env: Envelope) -> None:
        req: FetchRequest = env.body
        self.stats.fetch_requests += 1
        now = self.now_ms
        follower = req.replica_id >= 0
        if follower:
            hosted = self.partitions
            for tp, fp in req.partitions.items():
                partition = hosted.get(tp)
                if partition is None or partition.leader != self.id:
                    continue
                try:
                    partition.check_leader_epoch(fp.current_leader_epoch)
                    partition.update_follower_fetch_state(
                        req.replica_id,
                        fetch_offset=fp.fetch_offset,
                        log_start_offset=fp.log_start_offset,
                        now_ms=now,
                    )
                except KafkaError:
                    continue  # answered in the read below
                change = partition.maybe_expand_isr(req.replica_id)
                if change is not None:
                    self.spawn(self._write_isr(change), f"ISR change of {tp}")
                if partition.maybe_increment_high_watermark():
                    self._high_watermark_moved(tp)
        if req.max_wait_ms > 0 and self._caught_up(req):
            self._park_fetch(env, req)  # nothing to read yet: no read to find it out
            return
        response, enough = self._read_fetch(req)
        if enough or req.max_wait_ms <= 0:
            self._send_fetch_response(env, response)
            return
        self._park_fetch(env, req)

    def _caught_up(self, req: FetchRequest) -> bool:
        """A follower fetching from the log end of every partition it asks for, each led here in the
        epoch it names: a read would find nothing and no error, so the fetch waits (DelayedFetch)."""
        if req.replica_id < 0 or req.min_bytes <= 0:
            return False
        for tp, fp in req.partitions.items():
            partition = self.partitions.get(tp)
            if (
                partition is None
                or not partition.is_leader
                or fp.current_leader_epoch != partition.leader_epoch
                or fp.fetch_offset != partition.log.log_end_offset
            ):
                return False
        return True

    def _park_fetch(self, env: Envelope, req: FetchRequest) -> None:
        delayed = DelayedFetch(env)
        delayed.timer = self.later(req.max_wait_ms, self._expire_fetch, delayed, label="fetch wait")
        for tp in req.partitions:
            self._watches.fetches.setdefault(tp, []).append(delayed)

    def _read_fetch(self, req: FetchRequest) -> tuple[FetchResponse, bool]:
        """The response as it stands, and whether it is enough to send now: an error, or at least
        ``min_bytes`` of records (Kafka's DelayedFetch). ``max_bytes`` bounds the whole response,
        but the first batch is served whatever its size, so a large batch cannot stall a consumer."""
        follower = req.replica_id >= 0
        committed = req.isolation_level == 1
        read = self._read_partition
        out: dict[TopicPartition, FetchPartitionData] = {}
        total = 0
        error = False
        for tp, fp in req.partitions.items():
            if total:
                room = req.max_bytes - total
                if room <= 0:
                    fp = replace(fp, max_bytes=0)
                elif room < fp.max_bytes:
                    fp = replace(fp, max_bytes=room)
            data = read(tp, fp, follower=follower, committed=committed)
            out[tp] = data
            total += len(data.records)
            if data.error is not None:
                error = True
        return FetchResponse(partitions=out), error or total >= max(1, req.min_bytes)

    def _read_partition(
        self, tp: TopicPartition, fp: FetchPartition, *, follower: bool, committed: bool = False
    ) -> FetchPartitionData:
        partition = self.partitions.get(tp)
        if partition is None or not partition.is_leader:
            err: KafkaError = NotLeaderOrFollower(f"broker {self.id} is not the leader of {tp}")
            if partition is None and tp not in self.metadata.partitions:
                err = UnknownTopicOrPartition(f"{tp} does not exist on broker {self.id}")
            return FetchPartitionData(error=err.name, message=err.message)
        log = partition.log
        # Read once: a fetch asks for these several times, and nothing here changes them.
        leo = log.log_end_offset
        hw = partition.high_watermark
        lso = partition.last_stable_offset
        offset = fp.fetch_offset
        try:
            partition.check_leader_epoch(fp.current_leader_epoch)
            if offset > leo or offset < log.log_start_offset:
                raise errors.OffsetOutOfRange(
                    f"{tp}: offset {offset} is outside [{log.log_start_offset}, {leo})"
                )
            # Consumers read below the HW (read_committed: below the last stable offset); followers
            # read to the log end.
            limit = None if follower else lso if committed else hw
            aborted: tuple[tuple[int, int], ...] | None = () if committed else None
            if (
                (limit is not None and offset >= limit)
                or fp.max_bytes <= 0
                or offset == leo  # a follower caught up: nothing to read yet
            ):
                records = b""
                count = 0
            else:
                fetched = log.read(offset, fp.max_bytes, max_offset=limit)
                records = bytes(fetched.records)
                count = max(0, fetched.next_offset - offset)
                if committed and records:
                    aborted = _aborted_transactions(log, offset, fetched.next_offset)
        except KafkaError as exc:
            return FetchPartitionData(
                error=exc.name,
                message=exc.message,
                high_watermark=hw,
                last_stable_offset=lso,
                log_start_offset=log.log_start_offset,
                log_end_offset=leo,
            )
        stats = self.stats
        if not follower:
            stats.records_out_to_consumers += count
        stats.bytes_out += len(records)
        return FetchPartitionData(
            high_watermark=hw,
            last_stable_offset=lso,
            log_start_offset=log.log_start_offset,
            log_end_offset=leo,
            records=records,
            record_count=count,
            aborted_transactions=aborted if committed else None,
        )

    def _send_fetch_response(self, env: Envelope, response: FetchResponse) -> None:
        self.endpoint.respond(env, response)

    def _complete_fetch(self, delayed: DelayedFetch, response: FetchResponse | None = None) -> None:
        if delayed.done:
            return
        delayed.done = True
        Scheduler.cancel(delayed.timer)
        req: FetchRequest = delayed.request.body
        for tp in req.partitions:
            waiting = self._watches.fetches.get(tp)
            if waiting and delayed in waiting:
                waiting.remove(delayed)
                if not waiting:
                    del self._watches.fetches[tp]
        if response is None:
            response, _ = self._read_fetch(req)
        self._send_fetch_response(delayed.request, response)

    def _try_complete_fetch(self, delayed: DelayedFetch) -> None:
        """Answer a waiting fetch if what it would get now is enough (min_bytes, or an error)."""
        if delayed.done:
            return
        response, enough = self._read_fetch(delayed.request.body)
        if enough:
            self._complete_fetch(delayed, response)

    def _expire_fetch(self, delayed: DelayedFetch) -> None:
        self._complete_fetch(delayed)

    def _data_appended(self, tp: TopicPartition) -> None:
        """New records at the leader: wake followers waiting for them."""
        for delayed in list(self._watches.fetches.get(tp, ())):
            if delayed.request.body.replica_id >= 0:
                self._try_complete_fetch(delayed)
        partition = self.partitions.get(tp)
        if partition is not None and partition.maybe_increment_high_watermark():
            self._high_watermark_moved(tp)

    def _high_watermark_moved(self, tp: TopicPartition) -> None:
        self._check_produces(tp)
        for delayed in list(self._watches.fetches.get(tp, ())):
            if delayed.request.body.replica_id < 0:
                self._try_complete_fetch(delayed)

    def _partition_changed(self, tp: TopicPartition) -> None:
        """Leadership moved: every waiting request on ``tp`` answers now."""
        self._check_produces(tp)
        for delayed in list(self._watches.fetches.get(tp, ())):
            self._complete_fetch(delayed)

    # OffsetsForLeaderEpoch and ListOffsets.

    def _on_offsets_for_leader_epoch(self, env: Envelope) -> None:
        req: OffsetsForLeaderEpochRequest = env.body
        out: dict[TopicPartition, EpochEndOffset] = {}
        for tp, (current, asked) in req.partitions.items():
            partition = self.partitions.get(tp)
            if partition is None or not partition.is_leader:
                err = NotLeaderOrFollower(f"broker {self.id} is not the leader of {tp}")
                out[tp] = EpochEndOffset(error=err.name, message=err.message)
                continue
            try:
                partition.check_leader_epoch(current)
            except KafkaError as exc:
                out[tp] = EpochEndOffset(error=exc.name, message=exc.message)
                continue
            epoch, end = partition.log.leader_epoch_cache.end_offset_for(asked, partition.log_end_offset)
            out[tp] = EpochEndOffset(leader_epoch=epoch, end_offset=end)
        self.endpoint.respond(env, OffsetsForLeaderEpochResponse(partitions=out))

    def _on_list_offsets(self, env: Envelope) -> None:
        req: ListOffsetsRequest = env.body
        out: dict[TopicPartition, ListOffsetsResult] = {}
        for tp, timestamp in req.partitions.items():
            partition = self.partitions.get(tp)
            if partition is None or not partition.is_leader:
                err: KafkaError = NotLeaderOrFollower(f"broker {self.id} is not the leader of {tp}")
                if partition is None and tp not in self.metadata.partitions:
                    err = UnknownTopicOrPartition(f"{tp} does not exist on broker {self.id}")
                out[tp] = ListOffsetsResult(error=err.name, message=err.message)
                continue
            try:
                partition.check_leader_epoch(req.current_leader_epochs.get(tp, -1))
            except KafkaError as exc:
                out[tp] = ListOffsetsResult(error=exc.name, message=exc.message)
                continue
            out[tp] = self._list_offset(partition, timestamp, committed=req.isolation_level == 1)
        self.endpoint.respond(env, ListOffsetsResponse(partitions=out))

    def _list_offset(self, partition: Partition, timestamp: int, *, committed: bool) -> ListOffsetsResult:
        """Kafka's answer: the offset, the found record's timestamp (by time), and the leader epoch
        of the record before the offset, so a consumer can check it for truncation later."""
        visible = partition.last_stable_offset if committed else partition.high_watermark
        found_ts = -1
        if timestamp == EARLIEST_TIMESTAMP:
            offset: int | None = partition.log_start_offset
        elif timestamp == LATEST_TIMESTAMP:
            offset = visible
        else:
            offset = partition.log.offset_for_timestamp(timestamp)
            if offset is not None and offset >= visible:
                offset = None
            if offset is not None:
                found_ts = self._timestamp_at(partition, offset)
        if offset is None:
            return ListOffsetsResult(offset=-1, timestamp=-1)
        epoch = partition.log.epoch_for_offset(offset - 1) if offset > partition.log_start_offset else None
        if epoch is None:
            epoch = partition.log.epoch_for_offset(offset)
        return ListOffsetsResult(
            offset=offset, timestamp=found_ts, leader_epoch=partition.leader_epoch if epoch is None else epoch
        )

    @staticmethod
    def _timestamp_at(partition: Partition, offset: int) -> int:
        read = partition.log.read(offset, 1)
        for record in iter_records(read.records):
            if record.offset == offset:
                return record.timestamp
        return -1

    def _on_metadata(self, env: Envelope) -> None:
        req: MetadataRequest = env.body
        answer = self.metadata.describe(req.topics)
        missing = [n for n, t in answer.topics.items() if t.error == UnknownTopicOrPartition.name]
        if not missing:
            self.endpoint.respond(env, answer)
        elif req.allow_auto_topic_creation and self.config.bool("auto.create.topics.enable"):
            self.spawn(self._auto_create(env, answer, missing), "auto-create topics")
        else:
            self.endpoint.respond(env, _with_errors(answer, {n: _unknown_or_invalid(n) for n in missing}))

    async def _auto_create(self, env: Envelope, answer: MetadataResponse, missing: list[str]) -> None:
        """Kafka's auto-creation in ZooKeeper mode: the topics are written at once, and the client is
        told LEADER_NOT_AVAILABLE (it asks again until the controller has elected their leaders)."""
        created = await self.admin.auto_create(missing)
        self.endpoint.respond(env, _with_errors(answer, created))

    # ------------------------------------------------------------------ controller requests

    def _on_leader_and_isr(self, env: Envelope) -> None:
        self._jobs.put("LeaderAndIsr", lambda: self._become_leader_or_follower(env))

    def _stale_controller(self, epoch: int) -> bool:
        if epoch < self.controller_epoch_seen:
            return True
        self.controller_epoch_seen = epoch
        return False

    async def _become_leader_or_follower(self, env: Envelope) -> None:
        req: LeaderAndIsrRequest = env.body
        if self._stale_controller(req.controller_epoch):
            self.endpoint.respond(env, LeaderAndIsrResponse(error="STALE_CONTROLLER_EPOCH"))
            return
        mine = [info for info in req.partitions if self.id in info.replicas]
        await self.load_topic_configs({info.tp.topic for info in mine})
        results: dict[TopicPartition, str | None] = {}
        for info in mine:
            partition = self.partitions.get(info.tp)
            if partition is None:
                partition = self._create_partition(info.tp)
            elif info.leader_epoch <= partition.leader_epoch:
                results[info.tp] = "STALE_LEADER_EPOCH"  # already applied, or older than what we have
                continue
            if not self._topic_id_agrees(partition, req.topic_ids.get(info.tp.topic)):
                results[info.tp] = "INCONSISTENT_TOPIC_ID"
                continue
            self._apply_topic_config(partition)
            if info.leader == self.id:
                self._make_leader(partition, info)
            else:
                self._make_follower(partition, info)
            results[info.tp] = None
        self.endpoint.respond(env, LeaderAndIsrResponse(partitions=results))

    def _topic_id_agrees(self, partition: Partition, topic_id: str | None) -> bool:
        """partition.metadata holds the topic id (written the first time); a log of another topic
        of the same name (deleted and made again while this broker was away) is not served."""
        if topic_id is None or partition.topic_id == topic_id:
            return True
        file = PartitionMetadataFile(partition.log.dir)
        stored = file.read()
        if stored is None:
            file.write(topic_id)
        elif stored != topic_id:
            self.journal(
                "broker_error",
                f"broker {self.id}: the log of {partition.tp} belongs to topic id {stored}, not {topic_id} "
                "(the topic was deleted and made again): INCONSISTENT_TOPIC_ID, it is not served",
                topic=partition.tp.topic,
                partition=partition.tp.partition,
            )
            return False
        partition.topic_id = topic_id
        return True

    def _create_partition(self, tp: TopicPartition) -> Partition:
        log = PartitionLog.open(
            self.log_dir / f"{tp.topic}-{tp.partition}", self.log_config(tp.topic), now_ms=self.now_ms
        )
        partition = Partition(tp, self.id, log)
        self.partitions[tp] = partition
        return partition

    def _make_leader(self, partition: Partition, info: PartitionStateInfo) -> None:
        self._stop_fetching(partition.tp)
        before = partition.leader_epoch
        if partition.make_leader(info, now_ms=self.now_ms):
            self.journal(
                "became_leader",
                f"broker {self.id} leads {partition.tp} at leader epoch {info.leader_epoch} "
                f"(was {before}; LEO {partition.log_end_offset}, HW {partition.high_watermark}, isr {list(info.isr)})",
                topic=partition.tp.topic,
                partition=partition.tp.partition,
                leader_epoch=info.leader_epoch,
            )
        self._partition_changed(partition.tp)
        self.groups.on_leadership(partition.tp, leader=True)
        self.transactions.on_leadership(partition.tp, leader=True, leader_epoch=info.leader_epoch)

    def _make_follower(self, partition: Partition, info: PartitionStateInfo) -> None:
        tp = partition.tp
        changed = partition.make_follower(info)
        self._partition_changed(tp)
        self.groups.on_leadership(tp, leader=False)
        self.transactions.on_leadership(tp, leader=False)
        if not changed:
            return
        self._stop_fetching(tp)
        if info.leader < 0:
            return
        use_epochs = self.config.bool("lab.leader.epochs")
        if not use_epochs:
            # Before KIP-101 a new follower cut its log back to its own high watermark.
            self.truncate(
                partition,
                partition.high_watermark,
                f"becoming a follower of broker {info.leader} (pre-KIP-101: truncate to own HW)",
            )
        self._fetcher(info.leader).add(tp, leader_epoch=info.leader_epoch, truncate=use_epochs)

    def truncate(self, partition: Partition, offset: int, why: str) -> None:
        before = partition.log_end_offset
        dropped = partition.truncate_to(offset)
        if dropped:
            self.journal(
                "truncated",
                f"broker {self.id} truncated {partition.tp} from LEO {before} to {partition.log_end_offset}: "
                f"offsets {partition.log_end_offset}..{before - 1} dropped ({why})",
                topic=partition.tp.topic,
                partition=partition.tp.partition,
                from_offset=partition.log_end_offset,
                to_offset=before,
            )

    def _fetcher(self, leader: BrokerId) -> ReplicaFetcher:
        fetcher = self.fetchers.get(leader)
        if fetcher is None:
            from lab.engine.fetcher import ReplicaFetcher

            fetcher = ReplicaFetcher(self, leader)
            self.fetchers[leader] = fetcher
        return fetcher

    def _stop_fetching(self, tp: TopicPartition) -> None:
        for fetcher in self.fetchers.values():
            fetcher.remove(tp)

    def _on_update_metadata(self, env: Envelope) -> None:
        req: UpdateMetadataRequest = env.body
        if self._stale_controller(req.controller_epoch):
            self.endpoint.respond(env, UpdateMetadataResponse(error="STALE_CONTROLLER_EPOCH"))
            return
        self.metadata.update(req)
        self.controller_id = req.controller_id
        self.endpoint.respond(env, UpdateMetadataResponse())

    def _on_stop_replica(self, env: Envelope) -> None:
        req: StopReplicaRequest = env.body
        if self._stale_controller(req.controller_epoch):
            self.endpoint.respond(env, StopReplicaResponse(error="STALE_CONTROLLER_EPOCH"))
            return
        for tp, delete in req.partitions.items():
            self.stop_replica(tp, delete=delete)
        self.endpoint.respond(env, StopReplicaResponse())

    def stop_replica(self, tp: TopicPartition, *, delete: bool) -> None:
        self._stop_fetching(tp)
        partition = self.partitions.get(tp)
        if partition is None:
            return
        partition.leader = -1
        self._partition_changed(tp)
        self.groups.on_leadership(tp, leader=False)
        self.transactions.on_leadership(tp, leader=False)
        if delete:
            del self.partitions[tp]
            partition.log.delete()
            self.journal(
                "log_deleted",
                f"broker {self.id} deleted its replica of {tp}",
                topic=tp.topic,
                partition=tp.partition,
            )

    def _on_controlled_shutdown(self, env: Envelope) -> None:
        req: ControlledShutdownRequest = env.body
        if self.controller is None:
            self.endpoint.respond(
                env, ControlledShutdownResponse(error="NOT_CONTROLLER", message="not the controller")
            )
            return
        self.controller.controlled_shutdown(req.broker_id, lambda r: self.endpoint.respond(env, r))

    # ------------------------------------------------------------------ the ISR, written to ZooKeeper

    def _maybe_shrink_isrs(self) -> None:
        lag = self.config.int("replica.lag.time.max.ms")
        for partition in list(self.partitions.values()):
            change = partition.maybe_shrink_isr(now_ms=self.now_ms, max_lag_ms=lag)
            if change is not None:
                self.spawn(self._write_isr(change), f"ISR change of {partition.tp}")

    async def _write_isr(self, change: IsrChange) -> None:
        tp = change.tp
        state = paths.PartitionState(
            leader=change.leader,
            leader_epoch=change.leader_epoch,
            isr=change.new_isr,
            controller_epoch=change.controller_epoch,
        )
        ops: list[Op] = [
            SetDataOp(
                path=paths.partition_state_path(tp.topic, tp.partition),
                data=paths.encode_partition_state(state),
                version=change.zk_version,
            ),
            CreateOp(
                path=paths.ISR_CHANGE_PREFIX,
                data=paths.encode_isr_change([(tp.topic, tp.partition)]),
                sequential=True,
            ),
        ]
        shrink = len(change.new_isr) < len(change.old_isr)
        verb = "shrinks" if shrink else "expands"
        try:
            results = await self._zk().multi(ops)
        except MetadataError as exc:
            partition = self.partitions.get(tp)
            if partition is not None:
                partition.complete_isr_change(change, zk_version=None)
            why = (
                "the state znode changed under it (the controller moved on): it waits for the controller"
                if isinstance(exc, BadVersion)
                else f"it cannot reach ZooKeeper ({exc.code})"
            )
            self.journal(
                "isr_update_failed",
                f"broker {self.id} could not write the ISR of {tp} {list(change.old_isr)} -> {list(change.new_isr)}: {why}",
                topic=tp.topic,
                partition=tp.partition,
            )
            return
        partition = self.partitions.get(tp)
        stat = results[0]
        if partition is None or not hasattr(stat, "version"):
            return
        if partition.complete_isr_change(change, zk_version=stat.version):  # type: ignore[union-attr]
            if shrink:
                self.stats.isr_shrinks += 1
            else:
                self.stats.isr_expands += 1
            self.journal(
                "isr_shrink" if shrink else "isr_expand",
                f"broker {self.id} {verb} the ISR of {tp}: {list(change.old_isr)} -> {list(change.new_isr)} ({change.reason})",
                topic=tp.topic,
                partition=tp.partition,
                isr=list(change.new_isr),
                old_isr=list(change.old_isr),
            )
            if partition.maybe_increment_high_watermark():
                self._high_watermark_moved(tp)
            self._check_produces(tp)

    # ------------------------------------------------------------------ housekeeping

    def checkpoint(self) -> None:
        """Write every partition's HW and recovery point, in Kafka's checkpoint files."""
        if not self.alive:
            return
        hws = {(tp.topic, tp.partition): p.high_watermark for tp, p in self.partitions.items()}
        points = {(tp.topic, tp.partition): p.log.recovery_point for tp, p in self.partitions.items()}
        self._checkpoints[REPLICATION_CHECKPOINT].write(hws)
        self._checkpoints[RECOVERY_CHECKPOINT].write(points)
        self.checkpoint_log_start_offsets()
        cleaned = {
            (tp.topic, tp.partition): p.log.cleaner_checkpoint
            for tp, p in self.partitions.items()
            if p.log.config.compact
        }
        self._checkpoints[CLEANER_CHECKPOINT].write(cleaned)

    def _clean(self, tp: TopicPartition, partition: Partition) -> None:
        log = partition.log
        stats = log.compact(self.now_ms, high_watermark=partition.high_watermark)
        if not (stats.records_removed or stats.tombstones_removed or stats.delete_horizons_set):
            return
        said = [f"{stats.records_removed} superseded record(s) removed"]
        if stats.tombstones_removed:
            said.append(f"{stats.tombstones_removed} tombstone(s) past their delete horizon removed")
        said.append(f"{stats.records_retained} kept")
        if stats.delete_horizons_set:
            said.append(
                f"tombstones seen for the first time stay until {stats.next_delete_horizon_ms} ms "
                f"(now + delete.retention.ms={log.config.delete_retention_ms}, KIP-534)"
            )
        if stats.for_delete_horizon:
            said.append("cleaned below min.cleanable.dirty.ratio because a delete horizon had passed")
        self.journal(
            "compaction",
            f"broker {self.id} compacted {tp}: " + ", ".join(said),
            topic=tp.topic,
            partition=tp.partition,
        )

    def checkpoint_log_start_offsets(self) -> None:
        """log-start-offset-checkpoint: where each log starts, after retention or DeleteRecords."""
        starts = {(tp.topic, tp.partition): p.log.log_start_offset for tp, p in self.partitions.items()}
        self._checkpoints[LOG_START_CHECKPOINT].write(starts)

    def flush_logs(self) -> None:
        for partition in self.partitions.values():
            partition.log.flush()

    def _apply_retention(self) -> None:
        """Kafka's LogManager.cleanupLogs and the log cleaner, on every log this broker holds."""
        now = self.now_ms
        moved = False
        for tp, partition in list(self.partitions.items()):
            log = partition.log
            stats = log.delete_old_segments(now, high_watermark=partition.high_watermark)
            if stats.segments_deleted:
                moved = True
                self.journal(
                    "retention",
                    f"broker {self.id} deleted {stats.segments_deleted} old segment(s) of {tp}: log start offset "
                    f"{stats.log_start_offset_before} -> {stats.log_start_offset} ({_retention_reasons(stats, log)})"
                    + (
                        "; the log holds no record now: its start offset reached its end offset"
                        if stats.log_start_offset == log.log_end_offset
                        else ""
                    ),
                    topic=tp.topic,
                    partition=tp.partition,
                    log_start_offset=stats.log_start_offset,
                )
            if log.config.compact:
                self._clean(tp, partition)
        if moved:
            # Kafka checkpoints log start offsets on a schedule; the lab writes them the moment
            # retention moves one, so a restart never reads an older start than the files hold.
            self.checkpoint_log_start_offsets()

    # ------------------------------------------------------------------ faults, driven by the cluster

    def kill(self, *, lose_unflushed: bool = False) -> None:
        """A hard stop: no goodbye to ZooKeeper, files cut back if the page cache is lost."""
        if not self.alive:
            return
        self.state = BrokerState.DEAD
        self._halt()
        if self.session is not None:
            self.session.abandon()
        for partition in self.partitions.values():
            partition.log.crash(lose_unflushed=lose_unflushed)

    def _halt(self) -> None:
        self.gate.close()
        self._jobs.clear()
        self.endpoint.close()
        if self.controller is not None:
            self.controller.stop()
            self.controller = None
        for fetcher in self.fetchers.values():
            fetcher.stop()
        self.fetchers.clear()

    def pause(self) -> None:
        if self.state in (BrokerState.RUNNING, BrokerState.STARTING):
            self._state_before_pause = self.state
            self.state = BrokerState.PAUSED
            self.gate.hold()
            if self.session is not None:
                self.session.set_link(LinkState.HELD)

    def resume(self) -> None:
        if self.state is BrokerState.PAUSED:
            self.state = getattr(self, "_state_before_pause", BrokerState.RUNNING)
            if self.session is not None:
                self.session.set_link(self._link)
            self.gate.release()

    def set_zookeeper_link(self, link: LinkState) -> None:
        """Isolation from ZooKeeper (CUT) or its healing (OPEN)."""
        self._link = link
        if self.session is not None and self.state is not BrokerState.PAUSED:
            self.session.set_link(link)

    async def controlled_shutdown(self) -> None:
        """Ask the controller to move leadership away, then stop cleanly."""
        if not self.alive:
            return
        self.state = BrokerState.SHUTTING_DOWN
        self.journal("controlled_shutdown", f"broker {self.id} begins a controlled shutdown")
        if self.config.bool("controlled.shutdown.enable"):
            for attempt in range(3):
                controller = self.controller_id if self.controller is None else self.id
                if controller < 0:
                    await self.sleep(500)
                    continue
                try:
                    reply: ControlledShutdownResponse = await self.call(
                        controller,
                        ControlledShutdownRequest(broker_id=self.id, broker_epoch=self.broker_epoch),
                        timeout_ms=5000,
                    )
                except KafkaError as exc:
                    self.journal(
                        "controlled_shutdown",
                        f"broker {self.id}: controlled shutdown attempt {attempt + 1} failed: {exc}",
                    )
                    await self.sleep(500)
                    continue
                if reply.error is None and not reply.remaining:
                    break
                self.journal(
                    "controlled_shutdown",
                    f"broker {self.id} still leads {', '.join(map(str, reply.remaining)) or 'partitions'}; retrying",
                )
                await self.sleep(500)
        self.stop()

    def stop(self) -> None:
        """A clean stop: logs flushed and checkpointed, the session closed (its ephemerals go now)."""
        if not self.alive:
            return
        self.checkpoint()
        self.flush_logs()
        for partition in self.partitions.values():
            partition.log.close()
        self.state = BrokerState.STOPPED
        self._halt()
        if self.session is not None:
            self.session.close()
        self.journal("broker_stopped", f"broker {self.id} stopped cleanly")

    def delete_data(self) -> None:
        shutil.rmtree(self.log_dir, ignore_errors=True)

    def describe(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "state": self.state.value,
            "broker_epoch": self.broker_epoch,
            "session": None if self.session is None else self.session.state.value,
            "link": self._link.value,
            "backlog": self.gate.backlog,
            "jobs": self._jobs.waiting,
        }

    _handlers: dict[type, Callable[[Broker, Envelope], None]] = {}


def _aborted_transactions(
    log: PartitionLog, fetch_offset: int, upper_bound: int
) -> tuple[tuple[int, int], ...]:
    """A read_committed fetch's aborted transactions: (producer id, first offset) of each that the
    records read overlap (Kafka's collectAbortedTransactions)."""
    return tuple(
        (t.producer_id, t.first_offset) for t in log.collect_aborted_transactions(fetch_offset, upper_bound)
    )


def _with_errors(answer: MetadataResponse, errors_by_topic: Mapping[str, str]) -> MetadataResponse:
    topics = dict(answer.topics)
    for name, error in errors_by_topic.items():
        topics[name] = TopicMetadata(name=name, error=error)
    return replace(answer, topics=topics)


def _unknown_or_invalid(name: str) -> str:
    """Kafka answers a name no topic could have with INVALID_TOPIC_EXCEPTION, not as unknown."""
    from lab.engine.limits import validate_topic_name

    try:
        validate_topic_name(name)
    except KafkaError as error:
        return error.name
    return UnknownTopicOrPartition.name


def _retention_reasons(stats: RetentionStats, log: PartitionLog) -> str:
    config = log.config
    reasons = []
    if stats.by_retention_ms:
        reasons.append(f"{stats.by_retention_ms} older than retention.ms={config.retention_ms}")
    if stats.by_retention_bytes:
        reasons.append(f"{stats.by_retention_bytes} beyond retention.bytes={config.retention_bytes}")
    if stats.by_log_start_offset:
        reasons.append(f"{stats.by_log_start_offset} wholly below the log start offset")
    return "; ".join(reasons)


Broker._handlers = {
    ProduceRequest: Broker._on_produce,
    FetchRequest: Broker._on_fetch,
    OffsetsForLeaderEpochRequest: Broker._on_offsets_for_leader_epoch,
    ListOffsetsRequest: Broker._on_list_offsets,
    MetadataRequest: Broker._on_metadata,
    LeaderAndIsrRequest: Broker._on_leader_and_isr,
    UpdateMetadataRequest: Broker._on_update_metadata,
    StopReplicaRequest: Broker._on_stop_replica,
    ControlledShutdownRequest: Broker._on_controlled_shutdown,
}
