"""Topics and their configs, as Kafka's admin writes them to ZooKeeper, and the admin requests a broker serves.

``TopicAdmin`` is Kafka's AdminZkClient: each change is checked (Kafka's errors, nothing written
when it is bad), then written as Kafka writes it; the controller does the rest. Its steps are
coroutines over a ZooKeeper session, so the same code serves two callers: the facade waits on them
with the lab's own admin session (kafka-topics.sh with --zookeeper), and a broker serving a
client's CreateTopics awaits them with its own session, through its gate, so a paused broker holds
them as it holds everything else.

``AdminManager`` is a broker's side of the admin API (Kafka's ZkAdminManager and the controller's
handlers): CreateTopics, DeleteTopics, CreatePartitions, ElectLeaders and the reassignment APIs
on the controller only (NOT_CONTROLLER elsewhere); DescribeConfigs, AlterConfigs and
DescribeLogDirs on any broker.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol

from lab.engine import errors, scram_admin
from lab.engine import protocol as p
from lab.engine.acl_store import AclsChanged, AclStore
from lab.engine.assignment import place_replicas
from lab.engine.config import BROKER_KEYS, LISTENER_KEYS, TOPIC_KEYS, ConfigKey, validate_topic_config
from lab.engine.endpoints import format_endpoint
from lab.engine.errors import (
    InvalidPartitions,
    InvalidReplicaAssignment,
    InvalidReplicationFactor,
    InvalidTopic,
    KafkaError,
    TopicAlreadyExists,
    UnknownTopicOrPartition,
)
from lab.engine.events import Journal
from lab.engine.ids import BrokerId, TopicPartition
from lab.engine.limits import validate_topic_name
from lab.engine.metadata import paths
from lab.engine.metadata.store import CreateOp, NodeExists, NoNode, Op, OpResult, SetDataOp, Stat
from lab.engine.storage.config import LogConfig
from lab.engine.tasks import Pending

if TYPE_CHECKING:
    from lab.engine.broker import Broker
    from lab.engine.network import Envelope

# Kafka's internal topics (Topic.INTERNAL_TOPICS): their coordinators create them, with their own
# partitions and configs.
INTERNAL_TOPICS = ("__consumer_offsets", "__transaction_state")

# Kafka's ConfigSource ids (DescribeConfigs v1+).
DYNAMIC_TOPIC_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 1, 4, 5


class ZkSession(Protocol):
    """What TopicAdmin needs of a session (a Session, or a broker's GatedSession)."""

    def create(
        self,
        path: str,
        data: bytes = b"",
        *,
        ephemeral: bool = False,
        sequential: bool = False,
        make_parents: bool = False,
    ) -> Pending[str]: ...

    def get(self, path: str) -> Pending[tuple[bytes, Stat]]: ...

    def exists(self, path: str) -> Pending[Stat | None]: ...

    def get_children(self, path: str) -> Pending[list[str]]: ...

    def set(self, path: str, data: bytes, version: int = -1) -> Pending[Stat]: ...

    def delete(self, path: str, version: int = -1) -> Pending[None]: ...

    def multi(self, ops: Sequence[Op]) -> Pending[list[OpResult]]: ...


# ---------------------------------------------------------------------------- topic names


def validate_new_topic_name(name: str) -> None:
    """The name rules for a topic being created: Kafka's, and no internal topic made by hand.

    Kafka 3.x in ZooKeeper mode accepts CreateTopics for an internal name its coordinator has not
    made yet (and groups then break); the lab refuses it with INVALID_TOPIC_EXCEPTION instead.
    """
    validate_topic_name(name)
    if name in INTERNAL_TOPICS:
        maker = "group coordinator" if name == "__consumer_offsets" else "transaction coordinator"
        raise InvalidTopic(
            f"Topic '{name}' is an internal topic: the {maker} creates it, with its own partitions and "
            "configs; it cannot be created by hand"
        )


def colliding_topics(name: str, existing: Sequence[str]) -> list[str]:
    """Kafka's Topic.hasCollision: '.' and '_' are the same in metric names, so a_b and a.b collide."""
    if "." not in name and "_" not in name:
        return []
    mangled = name.replace(".", "_")
    return sorted(t for t in existing if t != name and t.replace(".", "_") == mangled)


# ---------------------------------------------------------------------------- ZooKeeper writes


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicChange:
    """A topic's shape as ZooKeeper took it (created, grown, configs altered, reassigned), or its
    deletion marked. ``config`` is None where the change left the overrides alone (new partitions, a
    reassignment). ``replicas``: every partition's replicas, where the change placed them (new
    partitions; ``reassigned``: a finished reassignment, which places them by hand)."""

    topic: str
    partitions: int = 0
    replication_factor: int = 0
    config: Mapping[str, str] | None = None
    deleted: bool = False
    replicas: Mapping[int, tuple[BrokerId, ...]] | None = None
    reassigned: bool = False


TopicChanged = Callable[[TopicChange], None]


class TopicAdmin:
    """Checked topic and config changes, written to ZooKeeper as Kafka's AdminZkClient writes them.
    ``on_change`` hears of each topic written, once ZooKeeper has it, whoever asked (the lab's admin
    client, a broker serving CreateTopics, auto-creation, CreatePartitions, AlterConfigs, DeleteTopics)."""

    def __init__(
        self,
        session: Callable[[], ZkSession | Pending[Any]],
        *,
        broker_ids: Sequence[BrokerId],
        new_topic_id: Callable[[], str],
        journal: Journal,
        on_change: TopicChanged | None = None,
    ) -> None:
        self._session = session
        self.broker_ids = list(broker_ids)
        self._new_topic_id = new_topic_id
        self._journal = journal
        self._on_change = on_change

    def _changed(self, change: TopicChange) -> None:
        if self._on_change is not None:
            self._on_change(change)

    async def _zk(self) -> ZkSession:
        """The session to ask: at hand (a broker's), or on its way (the lab's admin client connecting)."""
        session = self._session()
        if isinstance(session, Pending):
            found: ZkSession = await session
            return found
        return session

    async def acls(self, on_change: AclsChanged | None = None) -> AclStore:
        """The ACLs in ZooKeeper, as kafka-acls.sh reaches them with --authorizer-properties."""
        return AclStore(await self._zk(), on_change)

    async def live_brokers(self) -> list[BrokerId]:
        children = await (await self._zk()).get_children(paths.BROKER_IDS)
        return sorted(int(c) for c in children if c.isdigit())

    async def topic_names(self) -> list[str]:
        """Every topic ZooKeeper lists (Kafka's getAllTopicsInCluster)."""
        try:
            return sorted(await (await self._zk()).get_children(paths.BROKER_TOPICS))
        except NoNode:
            return []

    async def assignment(self, topic: str) -> tuple[paths.TopicAssignment, int]:
        validate_topic_name(topic)  # a name ZooKeeper would refuse as a path is no topic either
        try:
            raw, stat = await (await self._zk()).get(paths.topic_path(topic))
        except NoNode:
            raise UnknownTopicOrPartition(f"Topic '{topic}' does not exist.") from None
        return paths.decode_topic_assignment(raw), stat.version

    def check_assignment(
        self,
        assignment: Mapping[int, Sequence[BrokerId]],
        *,
        first: int = 0,
        rf: int | None = None,
        uneven: bool = False,
    ) -> dict[int, tuple[BrokerId, ...]]:
        """Kafka's checks of a replica assignment given by hand (partitions from ``first`` on); ``uneven``:
        partitions may have different replica counts (what a reassignment may leave)."""
        if not assignment:
            raise InvalidReplicaAssignment("the replica assignment is empty")
        keys = sorted(assignment)
        wanted = list(range(first, first + len(keys)))
        if keys != wanted:
            raise InvalidReplicaAssignment(
                f"partitions must be numbered {wanted[0]}..{wanted[-1]}, got {keys}"
            )
        sizes = {len(r) for r in assignment.values()} | ({rf} if rf is not None else set())
        if len(sizes) != 1 and not uneven:
            raise InvalidReplicaAssignment("every partition must have the same number of replicas")
        out: dict[int, tuple[BrokerId, ...]] = {}
        for partition, replicas in assignment.items():
            if not replicas:
                raise InvalidReplicaAssignment(f"partition {partition} has no replicas")
            if len(set(replicas)) != len(replicas):
                raise InvalidReplicaAssignment(
                    f"partition {partition} lists a broker twice: {list(replicas)}"
                )
            unknown = [r for r in replicas if r not in self.broker_ids]
            if unknown:
                raise InvalidReplicaAssignment(f"partition {partition}: no broker {unknown}")
            out[partition] = tuple(replicas)
        return out

    async def create_topic(
        self,
        name: str,
        partitions: int,
        replication_factor: int,
        config: Mapping[str, object] | None = None,
        *,
        assignment: Mapping[int, Sequence[BrokerId]] | None = None,
        validate_only: bool = False,
        restoring: bool = False,
    ) -> dict[int, tuple[BrokerId, ...]]:
        """Check, then write the topic's config and assignment in one multi; the placement. ``restoring``:
        the assignment a reassignment left, whose partitions may differ in replica count."""
        validate_new_topic_name(name)
        clean = validate_topic_config(config or {})
        LogConfig.from_topic_config(clean)  # cross-checks the log's own rules
        live = await self.live_brokers()
        if assignment is not None:
            placement = self.check_assignment(assignment, uneven=restoring)
        else:
            if partitions < 1:
                raise InvalidPartitions("Number of partitions must be larger than 0.")
            if replication_factor < 1:
                raise InvalidReplicationFactor("Replication factor must be larger than 0.")
            if replication_factor > len(live):
                raise InvalidReplicationFactor(
                    f"Replication factor: {replication_factor} larger than available brokers: {len(live)}."
                )
            placement = place_replicas(live, partitions, replication_factor)
        zk = await self._zk()
        if await zk.exists(paths.topic_path(name)) is not None:
            raise TopicAlreadyExists(f"Topic '{name}' already exists.")
        if await zk.exists(paths.delete_topic_path(name)) is not None:
            raise TopicAlreadyExists(f"Topic '{name}' is marked for deletion.")
        collides = colliding_topics(name, await self.topic_names())
        if collides:
            raise InvalidTopic(f"Topic '{name}' collides with existing topics: {', '.join(collides)}")
        if validate_only:
            return placement
        ops: list[Op] = [
            CreateOp(path=paths.topic_config_path(name), data=paths.encode_topic_config(clean)),
            CreateOp(
                path=paths.topic_path(name),
                data=paths.encode_topic_assignment(
                    paths.TopicAssignment(partitions=placement, topic_id=self._new_topic_id())
                ),
            ),
        ]
        try:
            await zk.multi(ops)
        except NodeExists:
            raise TopicAlreadyExists(f"Topic '{name}' already exists.") from None
        self._changed(
            TopicChange(
                topic=name,
                partitions=len(placement),
                replication_factor=len(next(iter(placement.values()))),
                config=clean,
            )
        )
        return placement

    async def delete_topic(self, name: str) -> None:
        await self.assignment(name)
        with contextlib.suppress(NodeExists):
            await (await self._zk()).create(paths.delete_topic_path(name))
        self._changed(TopicChange(topic=name, deleted=True))

    async def create_partitions(
        self,
        topic: str,
        total: int,
        *,
        assignment: Sequence[Sequence[BrokerId]] | None = None,
        validate_only: bool = False,
    ) -> list[int]:
        """Grow ``topic`` to ``total`` partitions (Kafka never shrinks one); the new partitions."""
        current, version = await self.assignment(topic)
        count = len(current.partitions)
        if total <= count:
            raise InvalidPartitions(
                f"Topic currently has {count} partitions, which is higher than the requested {total}."
            )
        rf = len(next(iter(current.partitions.values())))
        if assignment is not None:
            if len(assignment) != total - count:
                raise InvalidReplicaAssignment(
                    f"Increasing the number of partitions by {total - count} but {len(assignment)} "
                    "assignments provided."
                )
            added = self.check_assignment(dict(enumerate(assignment, start=count)), first=count, rf=rf)
        else:
            live = await self.live_brokers()
            if rf > len(live):
                raise InvalidReplicationFactor(
                    f"Replication factor: {rf} larger than available brokers: {len(live)}."
                )
            added = place_replicas(live, total - count, rf, start=count)
        if validate_only:
            return sorted(added)
        grown = dict(current.partitions)
        grown.update(added)
        data = paths.encode_topic_assignment(
            paths.TopicAssignment(
                partitions=grown,
                adding_replicas=current.adding_replicas,
                removing_replicas=current.removing_replicas,
                topic_id=current.topic_id,
            )
        )
        await (await self._zk()).set(paths.topic_path(topic), data, version)
        self._changed(
            TopicChange(
                topic=topic,
                partitions=total,
                replication_factor=rf,
                replicas={q: tuple(r) for q, r in sorted(grown.items())},
            )
        )
        return sorted(added)

    async def topic_config(self, topic: str) -> dict[str, str]:
        """The topic's config overrides (what differs from the broker defaults)."""
        await self.assignment(topic)
        try:
            raw, _ = await (await self._zk()).get(paths.topic_config_path(topic))
        except NoNode:
            return {}
        return paths.decode_topic_config(raw)

    async def alter_topic_config(
        self,
        topic: str,
        updates: Mapping[str, object],
        *,
        remove: Sequence[str] = (),
        replace: bool = False,
        validate_only: bool = False,
    ) -> dict[str, str]:
        """Change a topic's overrides (``replace``: the updates become all of them, as AlterConfigs);
        the overrides now in force."""
        assigned, _ = await self.assignment(topic)
        unknown = [k for k in remove if k not in TOPIC_KEYS]
        if unknown:
            raise errors.InvalidConfig(f"Unknown topic config name: {unknown[0]}")
        clean = validate_topic_config(updates)
        zk = await self._zk()
        try:
            raw, stat = await zk.get(paths.topic_config_path(topic))
            current = paths.decode_topic_config(raw)
            version = stat.version
        except NoNode:
            current, version = {}, -1
        merged = {} if replace else {k: v for k, v in current.items() if k not in remove}
        merged.update(clean)
        LogConfig.from_topic_config(merged)
        if validate_only:
            return merged
        data = paths.encode_topic_config(merged)
        ops: list[Op] = [
            CreateOp(path=paths.topic_config_path(topic), data=data)
            if version < 0
            else SetDataOp(path=paths.topic_config_path(topic), data=data, version=version),
            CreateOp(
                path=paths.CONFIG_CHANGE_PREFIX,
                data=paths.encode_config_change(f"topics/{topic}"),
                sequential=True,
            ),
        ]
        await zk.multi(ops)
        self._journal.record(
            "config_changed", f"topic {topic} config now {merged or 'defaults'}", topic=topic
        )
        replicas = next(iter(assigned.partitions.values()), ())
        self._changed(
            TopicChange(
                topic=topic,
                partitions=len(assigned.partitions),
                replication_factor=len(replicas),
                config=dict(merged),
            )
        )
        return merged

    async def reassign(self, plan: Mapping[tuple[str, int], Sequence[BrokerId]]) -> None:
        """Write a reassignment for the controller to carry out (kafka-reassign-partitions.sh)."""
        if not plan:
            raise errors.IllegalArgument("the reassignment plan is empty")
        for (topic, partition), replicas in plan.items():
            current, _ = await self.assignment(topic)
            if partition not in current.partitions:
                raise UnknownTopicOrPartition(f"{topic}-{partition} does not exist")
            if not replicas or len(set(replicas)) != len(replicas):
                raise InvalidReplicaAssignment(
                    f"{topic}-{partition}: replicas must be distinct and not empty"
                )
            unknown = [r for r in replicas if r not in self.broker_ids]
            if unknown:
                raise InvalidReplicaAssignment(f"{topic}-{partition}: there is no broker {unknown}")
        zk = await self._zk()
        if await zk.exists(paths.REASSIGN_PARTITIONS) is not None:
            raise errors.ReassignmentInProgress("a reassignment is already in progress")
        await zk.create(
            paths.REASSIGN_PARTITIONS, paths.encode_reassignment({k: list(v) for k, v in plan.items()})
        )

    async def elect_preferred(self, partitions: Sequence[tuple[str, int]]) -> None:
        try:
            await (await self._zk()).create(
                paths.PREFERRED_REPLICA_ELECTION, paths.encode_preferred_replica_election(partitions)
            )
        except NodeExists:
            raise errors.InvalidRequest("a preferred leader election is already in progress") from None

    async def election_done(self) -> bool:
        return await (await self._zk()).exists(paths.PREFERRED_REPLICA_ELECTION) is None

    async def exists(self, topic: str) -> bool:
        return await (await self._zk()).exists(paths.topic_path(topic)) is not None


# ---------------------------------------------------------------------------- describing configs


def _entry(key: ConfigKey, value: str, source: int, *, read_only: bool) -> p.ConfigEntry:
    return p.ConfigEntry(
        name=key.name, value=value, read_only=read_only, source=source, documentation=key.doc, kind=key.kind
    )


def topic_config_entries(
    overrides: Mapping[str, str], broker_values: Mapping[str, str], keys: Sequence[str] | None = None
) -> tuple[p.ConfigEntry, ...]:
    """Every topic config's value and where it comes from: the topic's override, the broker's
    setting (the lab's default where it differs from Kafka's), or Kafka's default."""
    out = []
    for name, key in TOPIC_KEYS.items():
        if keys is not None and name not in keys:
            continue
        if name in overrides:
            out.append(_entry(key, overrides[name], DYNAMIC_TOPIC_CONFIG, read_only=False))
            continue
        value = broker_values.get(key.broker_name, key.default) if key.broker_name else key.default
        source = DEFAULT_CONFIG if value == key.kafka_default else STATIC_BROKER_CONFIG
        out.append(_entry(key, value, source, read_only=False))
    return tuple(out)


def broker_config_entries(
    values: Mapping[str, str],
    keys: Sequence[str] | None = None,
    listeners: Mapping[str, str] | None = None,
) -> tuple[p.ConfigEntry, ...]:
    """A broker's configs as Kafka's DescribeConfigs lists them, read-only (the lab sets them when it
    makes the lab: static broker configs): the keys the lab honours, then its listeners' (``listeners``:
    what the runtime opened). As Kafka: a password has no value; an authorizer's own key (super.users)
    is listed only when set, sensitive, its type unknown; a null default has no value."""
    out: list[p.ConfigEntry] = []
    for name, key in BROKER_KEYS.items():
        value = values.get(name, key.default)
        if (keys is None or name in keys) and not (key.plugin and value == key.kafka_default):
            out.append(_broker_entry(key, value, static=value != key.kafka_default))
    for name, key in LISTENER_KEYS.items():
        given = (listeners or {}).get(name)
        if keys is None or name in keys:
            out.append(
                _broker_entry(key, key.kafka_default if given is None else given, static=given is not None)
            )
    return tuple(out)


def _broker_entry(key: ConfigKey, value: str, *, static: bool) -> p.ConfigEntry:
    return p.ConfigEntry(
        name=key.name,
        value=None if key.sensitive or (key.nullable and value == "") else value,
        read_only=True,
        source=STATIC_BROKER_CONFIG if static else DEFAULT_CONFIG,
        sensitive=key.sensitive,
        documentation=key.doc,
        kind="" if key.plugin else key.kind,  # Kafka cannot tell a plugin key's type: UNKNOWN
    )


def listener_config(broker: Broker) -> dict[str, str]:
    """What ``broker``'s server.properties says of its listeners: the runtime's (the sockets it opened),
    or, with none, the PLAINTEXT address the broker registers in ZooKeeper."""
    given = broker.ctx.listener_config.get(broker.id)
    if given is not None:
        return dict(given)
    host, port = broker.advertised
    return {
        "listeners": format_endpoint("PLAINTEXT", host, port),
        "advertised.listeners": format_endpoint("PLAINTEXT", host, port),
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT",
    }


# ---------------------------------------------------------------------------- a broker's admin requests

Handler = Callable[[Any], Coroutine[Any, Any, Any]]
POLL_MS = 50  # how often a request that waits for the controller looks again


class AdminManager:
    """A broker's side of the admin API."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.admin = TopicAdmin(
            broker._zk,
            broker_ids=[],  # filled on use: the brokers this cluster was made with
            new_topic_id=broker.ctx.new_topic_id,
            journal=broker.ctx.journal,
            on_change=broker.ctx.topics_changed,
        )
        self._handlers: dict[type, Handler] = {
            p.CreateTopicsRequest: self._create_topics,
            p.DeleteTopicsRequest: self._delete_topics,
            p.CreatePartitionsRequest: self._create_partitions,
            p.DescribeConfigsRequest: self._describe_configs,
            p.AlterConfigsRequest: self._alter_configs,
            p.ElectLeadersRequest: self._elect_leaders,
            p.AlterPartitionReassignmentsRequest: self._alter_reassignments,
            p.ListPartitionReassignmentsRequest: self._list_reassignments,
            p.DescribeLogDirsRequest: self._describe_log_dirs,
            p.CreateAclsRequest: self._create_acls,
            p.DescribeAclsRequest: self._describe_acls,
            p.DeleteAclsRequest: self._delete_acls,
        }
        self._handlers.update(scram_admin.handlers(broker, lambda: self._is_controller))

    def handler(self, body: Any) -> Callable[[Envelope], None] | None:
        serve = self._handlers.get(type(body))
        if serve is None:
            return None

        def run(env: Envelope) -> None:
            self.broker.spawn(self._answer(serve, env), type(body).__name__)

        return run

    async def _answer(self, serve: Handler, env: Envelope) -> None:
        response = await serve(env.body)
        self.broker.endpoint.respond(env, response)

    # helpers

    @property
    def _is_controller(self) -> bool:
        controller = self.broker.controller
        return controller is not None and self.broker.controller_id == self.broker.id

    def _not_controller(self) -> KafkaError:
        return errors.NotController(
            f"broker {self.broker.id} is not the controller (broker {self.broker.controller_id} is): ask it"
        )

    def _known_brokers(self) -> list[BrokerId]:
        self.admin.broker_ids = sorted(set(self.broker.ctx.broker_ids))
        return self.admin.broker_ids

    async def _wait(self, done: Callable[[], bool], timeout_ms: int) -> bool:
        deadline = self.broker.now_ms + max(0, timeout_ms)
        while not done():
            if self.broker.now_ms >= deadline:
                return False
            await self.broker.sleep(POLL_MS)
        return True

    def _has_leaders(self, tps: Sequence[TopicPartition]) -> bool:
        cache = self.broker.metadata
        return all(tp in cache.partitions and cache.partitions[tp].leader >= 0 for tp in tps)

    # Auto-creation (any broker's, on a client's Metadata request)

    async def auto_create(self, names: Sequence[str]) -> dict[str, str]:
        """Each topic written as Kafka's ZooKeeper-mode broker writes it (num.partitions,
        default.replication.factor): LEADER_NOT_AVAILABLE once written or if another request
        wrote it first, else the error that stopped it (INVALID_REPLICATION_FACTOR, ...)."""
        self._known_brokers()
        config = self.broker.config
        partitions = config.int("num.partitions")
        rf = config.int("default.replication.factor")
        out: dict[str, str] = {}
        for name in names:
            if name in INTERNAL_TOPICS:
                # Kafka would make it here; the lab's coordinators make theirs on a group's first use.
                out[name] = errors.UnknownTopicOrPartition.name
                continue
            try:
                await self.admin.create_topic(name, partitions, rf)
            except errors.TopicAlreadyExists:
                out[name] = errors.LeaderNotAvailable.name
                continue
            except KafkaError as error:
                out[name] = error.name
                continue
            out[name] = errors.LeaderNotAvailable.name
            self.broker.ctx.journal.record(
                "topic_auto_created",
                f"broker {self.broker.id} created topic {name} because a client asked for its metadata "
                f"(auto.create.topics.enable=true): {partitions} partition{'s' if partitions != 1 else ''} "
                f"(num.partitions={partitions}), replication factor {rf} (default.replication.factor={rf})",
                topic=name,
                broker=self.broker.id,
            )
        return out

    # CreateTopics, DeleteTopics, CreatePartitions (the controller's)

    async def _create_topics(self, req: p.CreateTopicsRequest) -> p.CreateTopicsResponse:
        results: dict[str, p.CreatedTopic] = {}
        if not self._is_controller:
            error = self._not_controller()
            return p.CreateTopicsResponse(
                topics={t.name: p.CreatedTopic(error=error.name, message=error.message) for t in req.topics}
            )
        self._known_brokers()
        config = self.broker.config
        created: dict[str, list[TopicPartition]] = {}
        for topic in req.topics:
            if topic.name in results:
                results[topic.name] = p.CreatedTopic(
                    error=errors.InvalidRequest.name,
                    message=f"topic {topic.name} is named twice in the request",
                )
                continue
            partitions = topic.num_partitions if topic.num_partitions != -1 else config.int("num.partitions")
            rf = (
                topic.replication_factor
                if topic.replication_factor != -1
                else config.int("default.replication.factor")
            )
            try:
                placement = await self.admin.create_topic(
                    topic.name,
                    partitions,
                    rf,
                    topic.configs,
                    assignment=topic.assignments,
                    validate_only=req.validate_only,
                )
            except KafkaError as error:
                results[topic.name] = p.CreatedTopic(error=error.name, message=error.message)
                continue
            first = next(iter(placement.values()))
            results[topic.name] = p.CreatedTopic(
                num_partitions=len(placement),
                replication_factor=len(first),
                configs=topic_config_entries(dict(topic.configs), config.values),
            )
            created[topic.name] = [TopicPartition(topic.name, part) for part in placement]
        if not req.validate_only and created:
            everything = [tp for tps in created.values() for tp in tps]
            if not await self._wait(lambda: self._has_leaders(everything), req.timeout_ms):
                for name, tps in created.items():
                    if not self._has_leaders(tps):
                        results[name] = p.CreatedTopic(
                            error=errors.RequestTimedOut.name,
                            message=f"topic {name} was created, but its leaders were not elected within "
                            f"{req.timeout_ms} ms",
                        )
        known = self.broker.ctx.controller_context
        ids: Mapping[str, str] = known.topic_ids if known is not None else {}
        for name, result in list(results.items()):
            if result.error is None and name in ids:
                results[name] = replace(result, topic_id=ids[name])
        return p.CreateTopicsResponse(topics=results)

    async def _delete_topics(self, req: p.DeleteTopicsRequest) -> p.DeleteTopicsResponse:
        if not self._is_controller:
            error = self._not_controller()
            return p.DeleteTopicsResponse(
                topics={n: p.ErrorResult(error=error.name, message=error.message) for n in req.names}
            )
        results: dict[str, p.ErrorResult] = {}
        pending: list[str] = []
        for name in req.names:
            try:
                await self.admin.delete_topic(name)
            except KafkaError as error:
                results[name] = p.ErrorResult(error=error.name, message=error.message)
                continue
            pending.append(name)
            results[name] = p.ErrorResult()
        gone = dict.fromkeys(pending, False)

        async def all_gone() -> bool:
            for name in pending:
                if not gone[name]:
                    gone[name] = not await self.admin.exists(name)
            return all(gone.values())

        deadline = self.broker.now_ms + req.timeout_ms
        while not await all_gone() and self.broker.now_ms < deadline:
            await self.broker.sleep(POLL_MS)
        for name in pending:
            if not gone[name]:
                results[name] = p.ErrorResult(
                    error=errors.RequestTimedOut.name,
                    message=f"topic {name} is marked for deletion; it was not gone within {req.timeout_ms} ms",
                )
        return p.DeleteTopicsResponse(topics=results)

    async def _create_partitions(self, req: p.CreatePartitionsRequest) -> p.CreatePartitionsResponse:
        if not self._is_controller:
            error = self._not_controller()
            return p.CreatePartitionsResponse(
                topics={n: p.ErrorResult(error=error.name, message=error.message) for n in req.topics}
            )
        self._known_brokers()
        results: dict[str, p.ErrorResult] = {}
        added: list[TopicPartition] = []
        for name, (total, assignment) in req.topics.items():
            try:
                new = await self.admin.create_partitions(
                    name, total, assignment=assignment, validate_only=req.validate_only
                )
            except KafkaError as error:
                results[name] = p.ErrorResult(error=error.name, message=error.message)
                continue
            results[name] = p.ErrorResult()
            added += [TopicPartition(name, part) for part in new]
        if (
            not req.validate_only
            and added
            and not await self._wait(lambda: self._has_leaders(added), req.timeout_ms)
        ):
            for name in {tp.topic for tp in added if not self._has_leaders([tp])}:
                results[name] = p.ErrorResult(
                    error=errors.RequestTimedOut.name,
                    message=f"the new partitions of {name} have no leader yet after {req.timeout_ms} ms",
                )
        return p.CreatePartitionsResponse(topics=results)

    # DescribeConfigs, AlterConfigs (any broker)

    async def _describe_configs(self, req: p.DescribeConfigsRequest) -> p.DescribeConfigsResponse:
        out: list[p.DescribedConfigs] = []
        for kind, name, keys in req.resources:
            try:
                if kind == p.TOPIC_RESOURCE:
                    overrides = await self.admin.topic_config(name)
                    entries = topic_config_entries(overrides, self.broker.config.values, keys)
                elif kind == p.BROKER_RESOURCE:
                    if name not in ("", str(self.broker.id)):
                        raise errors.InvalidRequest(
                            f"broker {self.broker.id} describes its own configs; ask broker {name}"
                        )
                    entries = broker_config_entries(
                        self.broker.config.values, keys, listener_config(self.broker)
                    )
                else:
                    raise errors.InvalidRequest(
                        f"the lab describes topics (2) and brokers (4), not resource type {kind}"
                    )
            except KafkaError as error:
                out.append(
                    p.DescribedConfigs(resource_type=kind, name=name, error=error.name, message=error.message)
                )
                continue
            out.append(p.DescribedConfigs(resource_type=kind, name=name, entries=entries))
        return p.DescribeConfigsResponse(resources=tuple(out))

    async def _alter_configs(self, req: p.AlterConfigsRequest) -> p.AlterConfigsResponse:
        out: list[tuple[int, str, p.ErrorResult]] = []
        for kind, name, ops in req.resources:
            try:
                if kind != p.TOPIC_RESOURCE:
                    raise errors.InvalidRequest(
                        "the lab's broker configs are static: they are set when the lab is made"
                        if kind == p.BROKER_RESOURCE
                        else f"the lab changes the configs of topics (2), not of resource type {kind}"
                    )
                await self._alter_topic(
                    name, ops, incremental=req.incremental, validate_only=req.validate_only
                )
            except KafkaError as error:
                out.append((kind, name, p.ErrorResult(error=error.name, message=error.message)))
                continue
            out.append((kind, name, p.ErrorResult()))
        return p.AlterConfigsResponse(resources=tuple(out))

    async def _alter_topic(
        self,
        topic: str,
        ops: Sequence[tuple[str, int, str | None]],
        *,
        incremental: bool,
        validate_only: bool,
    ) -> None:
        if not incremental:
            given = {key: value for key, _, value in ops if value is not None}
            await self.admin.alter_topic_config(topic, given, replace=True, validate_only=validate_only)
            return
        current = await self.admin.topic_config(topic)
        updates: dict[str, object] = {}
        remove: list[str] = []
        for key, op, value in ops:
            spec = TOPIC_KEYS.get(key)
            if spec is None:
                raise errors.InvalidConfig(f"Unknown topic config name: {key}")
            if op == p.SET:
                updates[key] = value if value is not None else ""
            elif op == p.DELETE:
                remove.append(key)
            elif op in (p.APPEND, p.SUBTRACT):
                if spec.kind != "list":
                    raise errors.InvalidConfig(f"Config value append is not allowed for config key: {key}")
                items = [i for i in current.get(key, self.broker.config.topic_default(key)).split(",") if i]
                listed = [i.strip() for i in (value or "").split(",") if i.strip()]
                if op == p.APPEND:
                    items += [i for i in listed if i not in items]
                else:
                    items = [i for i in items if i not in listed]
                updates[key] = ",".join(items)
            else:
                raise errors.InvalidRequest(f"unknown config operation {op} for {key}")
        await self.admin.alter_topic_config(topic, updates, remove=remove, validate_only=validate_only)

    # ElectLeaders and reassignments (the controller's)

    async def _elect_leaders(self, req: p.ElectLeadersRequest) -> p.ElectLeadersResponse:
        if not self._is_controller:
            error = self._not_controller()
            return p.ElectLeadersResponse(error=error.name, message=error.message)
        controller = self.broker.controller
        assert controller is not None
        ctx = controller.ctx
        asked = list(req.partitions) if req.partitions is not None else sorted(ctx.assignments)
        results: dict[TopicPartition, p.ErrorResult] = {}
        wanted: list[TopicPartition] = []
        for tp in asked:
            replicas = ctx.assignments.get(tp)
            state = ctx.states.get(tp)
            if replicas is None or state is None:
                results[tp] = _error(UnknownTopicOrPartition(f"{tp} does not exist"))
            elif req.election_type == p.UNCLEAN:
                results[tp] = (
                    _error(errors.ElectionNotNeeded(f"{tp} has a leader, broker {state.leader}"))
                    if state.leader >= 0
                    else _error(
                        errors.InvalidRequest(
                            f"{tp} has no leader; the lab elects an out-of-sync replica only when the topic "
                            "allows it: set unclean.leader.election.enable=true on the topic"
                        )
                    )
                )
            elif state.leader == replicas[0]:
                results[tp] = _error(errors.ElectionNotNeeded(f"broker {replicas[0]} already leads {tp}"))
            elif not ctx.live(replicas[0]) or replicas[0] not in state.isr:
                results[tp] = _error(
                    errors.PreferredLeaderNotAvailable(
                        f"the preferred leader of {tp}, broker {replicas[0]}, is not alive and in the ISR"
                    )
                )
            else:
                wanted.append(tp)
        if wanted:
            try:
                await self.admin.elect_preferred([(tp.topic, tp.partition) for tp in wanted])
            except KafkaError as error:
                for tp in wanted:
                    results[tp] = _error(error)
                wanted = []

            def elected(tp: TopicPartition) -> bool:
                state = ctx.states.get(tp)
                replicas = ctx.assignments.get(tp)
                return state is not None and replicas is not None and state.leader == replicas[0]

            await self._wait(lambda: all(elected(tp) for tp in wanted), req.timeout_ms)
            for tp in wanted:
                results[tp] = (
                    p.ErrorResult()
                    if elected(tp)
                    else _error(errors.RequestTimedOut(f"{tp} was not moved to its preferred leader in time"))
                )
        return p.ElectLeadersResponse(partitions=results)

    async def _alter_reassignments(
        self, req: p.AlterPartitionReassignmentsRequest
    ) -> p.AlterPartitionReassignmentsResponse:
        if not self._is_controller:
            error = self._not_controller()
            return p.AlterPartitionReassignmentsResponse(error=error.name, message=error.message)
        controller = self.broker.controller
        assert controller is not None
        self._known_brokers()
        results: dict[TopicPartition, p.ErrorResult] = {}
        plan: dict[tuple[str, int], tuple[BrokerId, ...]] = {}
        for tp, replicas in req.plan.items():
            if replicas is None:
                results[tp] = _error(
                    errors.NoReassignmentInProgress(f"no reassignment of {tp} is in progress")
                    if tp not in controller.ctx.reassignments
                    else errors.InvalidRequest(
                        f"the lab lets a reassignment of {tp} finish; it cannot be cancelled"
                    )
                )
                continue
            plan[(tp.topic, tp.partition)] = replicas
        if plan:
            try:
                await self.admin.reassign(plan)
            except KafkaError as error:
                for topic, partition in plan:
                    results[TopicPartition(topic, partition)] = _error(error)
            else:
                # Kafka answers once the controller has taken the move on: ListPartitionReassignments
                # asked next must see it (or see it done).
                ctx = controller.ctx

                def taken_on() -> bool:
                    return all(
                        TopicPartition(*key) in ctx.reassignments
                        or tuple(ctx.assignments.get(TopicPartition(*key), ())) == target
                        for key, target in plan.items()
                    )

                await self._wait(taken_on, req.timeout_ms)
                for topic, partition in plan:
                    results[TopicPartition(topic, partition)] = p.ErrorResult()
        return p.AlterPartitionReassignmentsResponse(partitions=results)

    async def _list_reassignments(
        self, req: p.ListPartitionReassignmentsRequest
    ) -> p.ListPartitionReassignmentsResponse:
        if not self._is_controller:
            error = self._not_controller()
            return p.ListPartitionReassignmentsResponse(error=error.name, message=error.message)
        controller = self.broker.controller
        assert controller is not None
        ctx = controller.ctx
        out: dict[TopicPartition, p.OngoingReassignment] = {}
        for tp, target in sorted(ctx.reassignments.items()):
            if req.partitions is not None and tp not in req.partitions:
                continue
            current = tuple(ctx.assignments.get(tp, ()))  # the union of old and new replicas
            adding = ctx.adding.get(tp, ())
            removing = tuple(r for r in current if r not in target)
            out[tp] = p.OngoingReassignment(replicas=current, adding=adding, removing=removing)
        return p.ListPartitionReassignmentsResponse(reassignments=out)

    # ACLs (any broker, through the authorizer's store; Kafka's SECURITY_DISABLED without one)

    def _acls(self) -> AclStore:
        if not self.broker.config.values.get("authorizer.class.name"):
            raise errors.SecurityDisabled(
                f"broker {self.broker.id} has no authorizer (authorizer.class.name is empty, Kafka's default): "
                "it keeps no ACLs; make the lab with authorizer.class.name=kafka.security.authorizer.AclAuthorizer"
            )
        return AclStore(self.broker._zk(), self.broker.ctx.acls_changed)

    async def _create_acls(self, req: p.CreateAclsRequest) -> p.CreateAclsResponse:
        """Each binding on its own, as Kafka answers CreateAcls: a bad one fails alone."""
        results: list[p.ErrorResult] = []
        for binding in req.bindings:
            try:
                await self._acls().create([binding])
            except KafkaError as error:
                results.append(p.ErrorResult(error=error.name, message=error.message))
            else:
                results.append(p.ErrorResult())
        if any(r.error is None for r in results):
            self.broker.journal(
                "acls_created",
                f"broker {self.broker.id} stored {sum(r.error is None for r in results)} ACL(s): "
                + "; ".join(str(b) for b, r in zip(req.bindings, results, strict=True) if r.error is None),
            )
        return p.CreateAclsResponse(results=tuple(results))

    async def _describe_acls(self, req: p.DescribeAclsRequest) -> p.DescribeAclsResponse:
        try:
            found = await self._acls().describe(req.filter)
        except KafkaError as error:
            return p.DescribeAclsResponse(error=error.name, message=error.message)
        return p.DescribeAclsResponse(bindings=tuple(found))

    async def _delete_acls(self, req: p.DeleteAclsRequest) -> p.DeleteAclsResponse:
        try:
            removed = await self._acls().delete(req.filters)
        except KafkaError as error:
            failed = p.DeleteAclsResult(error=error.name, message=error.message)
            return p.DeleteAclsResponse(results=tuple(failed for _ in req.filters))
        gone = [b for r in removed for b in r]
        if gone:
            self.broker.journal(
                "acls_deleted",
                f"broker {self.broker.id} deleted {len(gone)} ACL(s): " + "; ".join(str(b) for b in gone),
            )
        return p.DeleteAclsResponse(results=tuple(p.DeleteAclsResult(bindings=tuple(r)) for r in removed))

    # DescribeLogDirs (any broker: its own)

    async def _describe_log_dirs(self, req: p.DescribeLogDirsRequest) -> p.DescribeLogDirsResponse:
        out: dict[TopicPartition, p.LogDirPartition] = {}
        for tp, partition in sorted(self.broker.partitions.items()):
            if req.partitions is not None and tp not in req.partitions:
                continue
            lag = (
                max(0, partition.high_watermark - partition.log_end_offset) if not partition.is_leader else 0
            )
            out[tp] = p.LogDirPartition(size=partition.log.size_in_bytes, offset_lag=lag)
        return p.DescribeLogDirsResponse(log_dir=str(self.broker.log_dir), partitions=out)


def _error(error: KafkaError) -> p.ErrorResult:
    return p.ErrorResult(error=error.name, message=error.message)
