"""Kafka's znode layout (ZooKeeper mode) and the JSON it keeps there.

Paths and JSON follow Kafka 3.x's ``ZkData.scala``: compact JSON, Kafka's key
order, ``version`` fields as Kafka writes them. ``encode_*`` gives the bytes
Kafka would write; ``decode_*`` reads them back into frozen dataclasses and
raises ``MalformedZnode`` (never a bare ``KeyError``) on anything else. Also the
generic znode path rules both stores enforce (``check_path``), and
``ensure_paths``, which creates the persistent paths a Kafka broker creates at
start-up.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn

from lab.engine.endpoints import format_endpoint, parse_endpoint
from lab.engine.errors import InvalidConfig
from lab.engine.metadata.store import (
    BadArguments,
    CheckOp,
    CreateOp,
    DeleteOp,
    NodeExists,
    Session,
    SetDataOp,
)

# ---------------------------------------------------------------- znode paths

# ZooKeeper refuses packets over jute.maxbuffer (about 1 MiB); both stores refuse
# data near that size with a clear error rather than a dropped connection.
MAX_DATA_BYTES = 1_000_000
SEQUENCE_DIGITS = 10


def check_path(path: object, *, sequential: bool = False) -> str:
    """ZooKeeper's path rules; ``BadArguments`` names the rule broken.

    A sequential create may end with ``/`` (the parent's counter becomes the name).
    """
    if not isinstance(path, str):
        raise BadArguments(str(path), f"a znode path must be a string, not {type(path).__name__}")
    if not path.startswith("/"):
        raise BadArguments(path, f"znode path {path!r} must start with '/'")
    if "\x00" in path:
        raise BadArguments(path, f"znode path {path!r} contains a null character")
    if path == "/":
        return path
    body = path[1:-1] if (sequential and path.endswith("/")) else path[1:]
    if path.endswith("/") and not sequential:
        raise BadArguments(path, f"znode path {path!r} must not end with '/'")
    for part in body.split("/"):
        if part == "":
            raise BadArguments(path, f"znode path {path!r} has an empty component")
        if part in (".", ".."):
            raise BadArguments(path, f"znode path {path!r} has a relative component {part!r}")
    return path


def check_data(path: str, data: object) -> bytes:
    if not isinstance(data, bytes):
        raise BadArguments(path, f"znode data must be bytes, not {type(data).__name__}")
    if len(data) > MAX_DATA_BYTES:
        raise BadArguments(path, f"znode data of {len(data)} bytes is over the {MAX_DATA_BYTES}-byte limit")
    return data


def check_version(path: str, version: object) -> None:
    if isinstance(version, bool) or not isinstance(version, int) or version < -1:
        raise BadArguments(path, f"version must be an integer >= -1, got {version!r}")


def check_op(op: object) -> None:
    """A ``multi`` op's arguments, checked before anything is sent."""
    if isinstance(op, CreateOp):
        check_path(op.path, sequential=op.sequential)
        check_data(op.path, op.data)
    elif isinstance(op, SetDataOp):
        check_path(op.path)
        check_data(op.path, op.data)
        check_version(op.path, op.version)
    elif isinstance(op, DeleteOp | CheckOp):
        check_path(op.path)
        check_version(op.path, op.version)
    else:
        raise BadArguments("", f"multi takes CreateOp, SetDataOp, DeleteOp or CheckOp, not {op!r}")


def parent_of(path: str) -> str:
    """The parent of an absolute path ("/" for a top-level node; "/a" for a sequential "/a/")."""
    idx = path.rfind("/")
    return "/" if idx <= 0 else path[:idx]


def name_of(path: str) -> str:
    return path[path.rfind("/") + 1 :]


def join(parent: str, child: str) -> str:
    return parent + child if parent.endswith("/") else f"{parent}/{child}"


def ancestors(path: str) -> list[str]:
    """The proper ancestors of ``path``, top first, without "/"."""
    out: list[str] = []
    parent = parent_of(path)
    while parent != "/":
        out.append(parent)
        parent = parent_of(parent)
    out.reverse()
    return out


def sequence_suffix(counter: int) -> str:
    """ZooKeeper's sequential suffix, 10 digits: how many children the parent has had created.

    That is the cversion ZooKeeper stores; the cversion it reports is creates plus deletes.
    """
    return f"{counter:0{SEQUENCE_DIGITS}d}"


# ------------------------------------------------------------- Kafka's layout

BROKERS = "/brokers"
BROKER_IDS = "/brokers/ids"
BROKER_TOPICS = "/brokers/topics"
BROKER_SEQID = "/brokers/seqid"
CONTROLLER = "/controller"
CONTROLLER_EPOCH = "/controller_epoch"
ISR_CHANGE_NOTIFICATION = "/isr_change_notification"
ISR_CHANGE_PREFIX = "/isr_change_notification/isr_change_"
ADMIN = "/admin"
DELETE_TOPICS = "/admin/delete_topics"
REASSIGN_PARTITIONS = "/admin/reassign_partitions"
PREFERRED_REPLICA_ELECTION = "/admin/preferred_replica_election"
CONFIG = "/config"
CONFIG_TOPICS = "/config/topics"
CONFIG_CHANGES = "/config/changes"
CONFIG_CHANGE_PREFIX = "/config/changes/config_change_"
CONSUMERS = "/consumers"
CLUSTER = "/cluster"
CLUSTER_ID = "/cluster/id"
LATEST_PRODUCER_ID_BLOCK = "/latest_producer_id_block"
LOG_DIR_EVENT_NOTIFICATION = "/log_dir_event_notification"

# ZkData.scala's PersistentZkPaths: what every broker makes sure exists at start-up
# (/controller_epoch is not among them: the first controller creates it).
PERSISTENT_PATHS: tuple[str, ...] = (
    CONSUMERS,
    BROKER_IDS,
    BROKER_TOPICS,
    CONFIG_CHANGES,
    DELETE_TOPICS,
    BROKER_SEQID,
    ISR_CHANGE_NOTIFICATION,
    LATEST_PRODUCER_ID_BLOCK,
    LOG_DIR_EVENT_NOTIFICATION,
    "/config/topics",
    "/config/clients",
    "/config/users",
    "/config/brokers",
    "/config/ips",
)


def broker_path(broker_id: int) -> str:
    return f"{BROKER_IDS}/{broker_id}"


def topic_path(topic: str) -> str:
    return f"{BROKER_TOPICS}/{topic}"


def topic_partitions_path(topic: str) -> str:
    return f"{BROKER_TOPICS}/{topic}/partitions"


def partition_path(topic: str, partition: int) -> str:
    return f"{BROKER_TOPICS}/{topic}/partitions/{partition}"


def partition_state_path(topic: str, partition: int) -> str:
    return f"{BROKER_TOPICS}/{topic}/partitions/{partition}/state"


def delete_topic_path(topic: str) -> str:
    return f"{DELETE_TOPICS}/{topic}"


def topic_config_path(topic: str) -> str:
    return f"{CONFIG_TOPICS}/{topic}"


async def ensure_paths(session: Session) -> None:
    """Create Kafka's persistent paths that are missing (as ``KafkaZkClient`` does at start-up)."""
    pendings = [session.create(path, make_parents=True) for path in PERSISTENT_PATHS]
    for pending in pendings:
        with contextlib.suppress(NodeExists):
            await pending


# ---------------------------------------------------------------- JSON codecs


class MalformedZnode(ValueError):
    """A znode's data is not what Kafka writes there."""

    def __init__(self, what: str, reason: str, path: str = "") -> None:
        self.what = what
        self.path = path
        self.reason = reason
        where = f" at {path}" if path else ""
        super().__init__(f"malformed {what}{where}: {reason}")


def _dumps(obj: Mapping[str, Any]) -> bytes:
    # Jackson's compact output, as Kafka writes it.
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


class _Reader:
    """Typed access to one decoded JSON object, failing with ``MalformedZnode``."""

    def __init__(self, what: str, data: object, path: str) -> None:
        self.what = what
        self.path = path
        if not isinstance(data, bytes):
            self.fail(f"expected bytes, got {type(data).__name__}")
        try:
            obj = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            self.fail(f"not JSON ({exc})")
        if not isinstance(obj, dict):
            self.fail(f"expected a JSON object, got {type(obj).__name__}")
        self.obj: dict[str, Any] = obj

    def fail(self, reason: str) -> NoReturn:
        raise MalformedZnode(self.what, reason, self.path)

    def has(self, key: str) -> bool:
        return key in self.obj and self.obj[key] is not None

    def raw(self, key: str) -> Any:
        if key not in self.obj:
            self.fail(f"missing {key!r}")
        return self.obj[key]

    def integer(self, key: str) -> int:
        return self.as_int(self.raw(key), key)

    def string(self, key: str) -> str:
        value = self.raw(key)
        if not isinstance(value, str):
            self.fail(f"{key!r} must be a string, got {value!r}")
        return str(value)

    def as_int(self, value: Any, what: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(f"{what} must be an integer, got {value!r}")
        return int(value)

    def int_list(self, value: Any, what: str) -> tuple[int, ...]:
        if not isinstance(value, list):
            self.fail(f"{what} must be a list of integers, got {value!r}")
        return tuple(self.as_int(v, what) for v in value)

    def obj_of(self, key: str) -> dict[str, Any]:
        value = self.raw(key)
        if not isinstance(value, dict):
            self.fail(f"{key!r} must be an object, got {value!r}")
        return dict(value)

    def list_of(self, key: str) -> list[Any]:
        value = self.raw(key)
        if not isinstance(value, list):
            self.fail(f"{key!r} must be a list, got {value!r}")
        return list(value)

    def version(self, allowed: Iterable[int]) -> int:
        version = self.integer("version")
        allowed = tuple(allowed)
        if version not in allowed:
            self.fail(f"unsupported version {version} (expected one of {list(allowed)})")
        return version


def _partition_key(reader: _Reader, key: str, what: str) -> int:
    try:
        partition = int(key)
    except ValueError:
        reader.fail(f"{what} key {key!r} is not a partition number")
    if partition < 0 or str(partition) != key:
        reader.fail(f"{what} key {key!r} is not a partition number")
    return partition


def _assignment_map(reader: _Reader, key: str) -> dict[int, tuple[int, ...]]:
    raw = reader.obj_of(key)
    out = {_partition_key(reader, k, key): reader.int_list(v, f"{key}[{k}]") for k, v in raw.items()}
    return dict(sorted(out.items()))


def _encode_assignment(assignment: Mapping[int, Sequence[int]]) -> dict[str, list[int]]:
    return {str(p): list(replicas) for p, replicas in sorted(assignment.items())}


def _topic_partitions(reader: _Reader, key: str, extra: str | None = None) -> list[dict[str, Any]]:
    entries = []
    for entry in reader.list_of(key):
        if not isinstance(entry, dict):
            reader.fail(f"each of {key!r} must be an object, got {entry!r}")
        topic = entry.get("topic")
        if not isinstance(topic, str):
            reader.fail(f"{key!r} entry {entry!r} needs a string 'topic'")
        if "partition" not in entry:
            reader.fail(f"{key!r} entry {entry!r} needs a 'partition'")
        reader.as_int(entry["partition"], "partition")
        if extra is not None and extra not in entry:
            reader.fail(f"{key!r} entry {entry!r} needs {extra!r}")
        entries.append(entry)
    return entries


# /brokers/ids/<id>


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerRegistration:
    """``/brokers/ids/<id>``, version 5 (ephemeral, owned by the broker's session)."""

    broker_id: int
    host: str  # the PLAINTEXT listener's; "" (written null, with port -1) when there is none
    port: int
    endpoints: tuple[str, ...] = ()  # "LISTENER://host:port", every listener; defaults to PLAINTEXT's
    jmx_port: int = -1
    timestamp_ms: int = 0  # when the broker registered (Kafka writes it as a string)
    rack: str | None = None

    def listeners(self) -> tuple[str, ...]:
        return self.endpoints or (format_endpoint("PLAINTEXT", self.host, self.port),)


def encode_broker_registration(reg: BrokerRegistration) -> bytes:
    endpoints = reg.listeners()
    obj: dict[str, Any] = {
        "version": 5,
        "host": reg.host or None,
        "port": reg.port if reg.host else -1,
        "endpoints": list(endpoints),
        "jmx_port": reg.jmx_port,
        "timestamp": str(reg.timestamp_ms),
    }
    if reg.rack is not None:
        obj["rack"] = reg.rack
    names = [ep.split("://", 1)[0] for ep in endpoints]
    obj["listener_security_protocol_map"] = {n: n if n in _PROTOCOLS else "PLAINTEXT" for n in names}
    obj["features"] = {}
    return _dumps(obj)


_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


def decode_broker_registration(broker_id: int, data: bytes, path: str = "") -> BrokerRegistration:
    r = _Reader("broker registration", data, path or broker_path(broker_id))
    r.version(range(1, 6))
    endpoints = tuple(r.list_of("endpoints")) if r.has("endpoints") else ()
    parsed = []
    for ep in endpoints:
        if not isinstance(ep, str):
            r.fail(f"endpoint {ep!r} is not 'LISTENER://host:port'")
        try:
            parsed.append(parse_endpoint(ep))
        except InvalidConfig as error:
            r.fail(str(error).removeprefix("INVALID_CONFIG: "))
    host = r.string("host") if r.has("host") else ""
    port = r.integer("port") if r.has("port") else -1
    if (not host or port < 0) and parsed:
        # Kafka writes host null and port -1 when no listener is PLAINTEXT.
        host, port = parsed[0].host, parsed[0].port
    if not host:
        r.fail("no host and no endpoints")
    timestamp = r.raw("timestamp") if r.has("timestamp") else "0"
    if isinstance(timestamp, str) and timestamp.lstrip("-").isdigit():
        timestamp_ms = int(timestamp)
    else:
        r.fail(f"'timestamp' must be a string of digits, got {timestamp!r}")
    rack = r.string("rack") if r.has("rack") else None
    return BrokerRegistration(
        broker_id=broker_id,
        host=host,
        port=port,
        endpoints=endpoints,
        jmx_port=r.integer("jmx_port") if r.has("jmx_port") else -1,
        timestamp_ms=timestamp_ms,
        rack=rack,
    )


# /controller and /controller_epoch


@dataclass(frozen=True, slots=True, kw_only=True)
class ControllerRegistration:
    """``/controller`` (ephemeral): which broker is the controller."""

    broker_id: int
    timestamp_ms: int = 0


def encode_controller(reg: ControllerRegistration) -> bytes:
    return _dumps({"version": 1, "brokerid": reg.broker_id, "timestamp": str(reg.timestamp_ms)})


def decode_controller(data: bytes, path: str = CONTROLLER) -> ControllerRegistration:
    r = _Reader("controller registration", data, path)
    r.version((1,))
    timestamp = r.raw("timestamp") if r.has("timestamp") else "0"
    if not (isinstance(timestamp, str) and timestamp.lstrip("-").isdigit()):
        r.fail(f"'timestamp' must be a string of digits, got {timestamp!r}")
    return ControllerRegistration(broker_id=r.integer("brokerid"), timestamp_ms=int(timestamp))


def encode_controller_epoch(epoch: int) -> bytes:
    return str(int(epoch)).encode("ascii")


def decode_controller_epoch(data: bytes, path: str = CONTROLLER_EPOCH) -> int:
    text = data.decode("ascii", errors="replace").strip() if isinstance(data, bytes) else ""
    if not text.lstrip("-").isdigit():
        raise MalformedZnode("controller epoch", f"expected an integer, got {data!r}", path)
    return int(text)


# /cluster/id


def encode_cluster_id(cluster_id: str) -> bytes:
    """``/cluster/id``: Kafka's ClusterIdZNode, its version a string."""
    return _dumps({"version": "1", "id": cluster_id})


def decode_cluster_id(data: bytes, path: str = CLUSTER_ID) -> str:
    r = _Reader("cluster id", data, path)
    version = r.raw("version")
    if version not in ("1", 1):
        r.fail(f"unsupported version {version!r} (expected '1')")
    cluster_id = r.string("id")
    if not cluster_id:
        r.fail("'id' is empty")
    return cluster_id


# /latest_producer_id_block


PRODUCER_ID_BLOCK_SIZE = 1000  # ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE


@dataclass(frozen=True, slots=True, kw_only=True)
class ProducerIdBlock:
    """A block of producer ids one broker took (Kafka's ProducerIdsBlock)."""

    broker: int
    block_start: int
    block_end: int  # inclusive


def encode_producer_id_block(block: ProducerIdBlock) -> bytes:
    """Kafka's ProducerIdBlockZNode: version 1, the ids as strings (they are longs)."""
    return _dumps(
        {
            "version": 1,
            "broker": block.broker,
            "block_start": str(block.block_start),
            "block_end": str(block.block_end),
        }
    )


def decode_producer_id_block(data: bytes, path: str = LATEST_PRODUCER_ID_BLOCK) -> ProducerIdBlock | None:
    """None for the empty znode every broker creates at start-up (no block taken yet)."""
    if not data:
        return None
    r = _Reader("producer id block", data, path)
    r.version([1])
    try:
        start, end = int(r.string("block_start")), int(r.string("block_end"))
    except ValueError:
        r.fail("block_start and block_end must be numbers in strings")
    if start < 0 or end < start:
        r.fail(f"block [{start}, {end}] is empty or negative")
    return ProducerIdBlock(broker=r.integer("broker"), block_start=start, block_end=end)


# /brokers/topics/<t>


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicAssignment:
    """``/brokers/topics/<t>``: replicas of each partition, and any reassignment in flight."""

    partitions: dict[int, tuple[int, ...]]
    adding_replicas: dict[int, tuple[int, ...]] = field(default_factory=dict)
    removing_replicas: dict[int, tuple[int, ...]] = field(default_factory=dict)
    topic_id: str | None = None  # KIP-516 (Kafka 2.8+): base64 UUID; None in a znode an older Kafka wrote


def encode_topic_assignment(assignment: TopicAssignment) -> bytes:
    obj: dict[str, Any] = {"version": 3}
    if assignment.topic_id is not None:
        obj["topic_id"] = assignment.topic_id
    obj["partitions"] = _encode_assignment(assignment.partitions)
    obj["adding_replicas"] = _encode_assignment(assignment.adding_replicas)
    obj["removing_replicas"] = _encode_assignment(assignment.removing_replicas)
    return _dumps(obj)


def decode_topic_assignment(data: bytes, path: str = "") -> TopicAssignment:
    r = _Reader("topic assignment", data, path)
    version = r.version((1, 2, 3))
    partitions = _assignment_map(r, "partitions")
    adding = _assignment_map(r, "adding_replicas") if version >= 2 and r.has("adding_replicas") else {}
    removing = _assignment_map(r, "removing_replicas") if version >= 2 and r.has("removing_replicas") else {}
    topic_id = r.string("topic_id") if version >= 3 and r.has("topic_id") else None
    return TopicAssignment(
        partitions=partitions, adding_replicas=adding, removing_replicas=removing, topic_id=topic_id
    )


# /brokers/topics/<t>/partitions/<p>/state


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionState:
    """``/brokers/topics/<t>/partitions/<p>/state``: Kafka's LeaderAndIsr plus the controller epoch."""

    leader: int  # -1 when no leader
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int


def encode_partition_state(state: PartitionState) -> bytes:
    return _dumps(
        {
            "controller_epoch": state.controller_epoch,
            "leader": state.leader,
            "version": 1,
            "leader_epoch": state.leader_epoch,
            "isr": list(state.isr),
        }
    )


def decode_partition_state(data: bytes, path: str = "") -> PartitionState:
    r = _Reader("partition state", data, path)
    r.version((1,))
    return PartitionState(
        leader=r.integer("leader"),
        leader_epoch=r.integer("leader_epoch"),
        isr=r.int_list(r.raw("isr"), "'isr'"),
        controller_epoch=r.integer("controller_epoch"),
    )


# /isr_change_notification/isr_change_<seq>


def encode_isr_change(partitions: Iterable[tuple[str, int]]) -> bytes:
    return _dumps({"version": 1, "partitions": [{"topic": t, "partition": p} for t, p in partitions]})


def decode_isr_change(data: bytes, path: str = "") -> list[tuple[str, int]]:
    r = _Reader("ISR change notification", data, path)
    r.version((1,))
    return [(e["topic"], int(e["partition"])) for e in _topic_partitions(r, "partitions")]


# /admin/reassign_partitions


def encode_reassignment(reassignment: Mapping[tuple[str, int], Sequence[int]]) -> bytes:
    entries = [
        {"topic": t, "partition": p, "replicas": list(replicas)}
        for (t, p), replicas in sorted(reassignment.items())
    ]
    return _dumps({"version": 1, "partitions": entries})


def decode_reassignment(
    data: bytes, path: str = REASSIGN_PARTITIONS
) -> dict[tuple[str, int], tuple[int, ...]]:
    r = _Reader("partition reassignment", data, path)
    r.version((1,))
    out: dict[tuple[str, int], tuple[int, ...]] = {}
    for e in _topic_partitions(r, "partitions", extra="replicas"):
        out[(e["topic"], int(e["partition"]))] = r.int_list(e["replicas"], "'replicas'")
    return out


# /admin/preferred_replica_election


def encode_preferred_replica_election(partitions: Iterable[tuple[str, int]]) -> bytes:
    return _dumps({"version": 1, "partitions": [{"topic": t, "partition": p} for t, p in partitions]})


def decode_preferred_replica_election(
    data: bytes, path: str = PREFERRED_REPLICA_ELECTION
) -> list[tuple[str, int]]:
    r = _Reader("preferred replica election", data, path)
    r.version((1,))
    return [(e["topic"], int(e["partition"])) for e in _topic_partitions(r, "partitions")]


# /config/topics/<t> and /config/changes/config_change_<seq>


def encode_topic_config(config: Mapping[str, str]) -> bytes:
    return _dumps({"version": 1, "config": {k: str(v) for k, v in config.items()}})


def decode_topic_config(data: bytes, path: str = "") -> dict[str, str]:
    r = _Reader("topic config", data, path)
    r.version((1,))
    config = r.obj_of("config")
    for key, value in config.items():
        if not isinstance(value, str):
            r.fail(f"config {key!r} must be a string, got {value!r}")
    return dict(config)


def encode_config_change(entity_path: str) -> bytes:
    """``entity_path`` is e.g. ``topics/orders``."""
    return _dumps({"version": 2, "entity_path": entity_path})


def decode_config_change(data: bytes, path: str = "") -> str:
    r = _Reader("config change notification", data, path)
    r.version((2,))
    entity_path = r.string("entity_path")
    if "/" not in entity_path:
        r.fail(f"'entity_path' {entity_path!r} is not '<type>/<name>'")
    return entity_path
