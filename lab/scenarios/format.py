"""The scenario file format: YAML, checked step by step, errors naming the line.

A scenario is cluster settings, then steps, each a one-key mapping::

    name: Leader failover
    description: Kill the leader of orders-0 and watch the next in-sync replica take over.
    cluster: {brokers: 3, seed: 7, config: {zookeeper.session.timeout.ms: 6000}}
    steps:
      - create_topic: {name: orders, partitions: 3, replication_factor: 3}
      - produce: {topic: orders, count: 10, acks: all}
      - kill: 1
      - wait: 8000
      - expect: {partition: orders-0, leader: 2, isr: [2, 3], leader_epoch: 1}

Every step kind has a schema below; a bad file gets ``ScenarioError`` with the file, the line and
what is wrong, before anything runs. The file is read with the bounded loader (``yamlsafe``), and
every step is bounded too, so a scenario cannot run away with the machine, wherever it plays (the
command line, the API, a lab's player, an exercise's setup): a duration is at most an hour of virtual
time, a produce step sends at most ``MAX_PRODUCE`` records and the scenario ``MAX_RECORDS`` in all,
a topic has at most ``MAX_PARTITIONS`` partitions, a simulated producer writes at most ``MAX_RATE``
records a second, a scenario has at most ``MAX_STEPS`` steps.
"""

from __future__ import annotations

import math
import string
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from lab.engine import limits
from lab.engine.acl import Operation
from lab.engine.config import producer_config
from lab.engine.errors import ConfigException, KafkaError, error_class
from lab.engine.transactions import TxnState
from lab.scenarios import yamlsafe
from lab.scenarios.yamlsafe import clip, excerpt, line_of

MAX_STEPS = 1_000
MAX_MS = 3_600_000  # any duration a step names: one hour of virtual time
MAX_PRODUCE = limits.RECORDS.high  # records one produce step sends, as the API and the forms
MAX_RECORDS = 100_000  # records a scenario's produce steps send in all, and any count it waits for
MAX_PARTITIONS = limits.PARTITIONS.high  # as everywhere a topic is made
MAX_RATE = limits.PRODUCER_RATE.high  # a simulated producer's records a second, as the live controls
MAX_KEYS = 10_000
MAX_INT = 2**63 - 1  # Kafka's offsets and timestamps are 64-bit
MAX_MESSAGE = 500


class ScenarioError(ValueError):
    def __init__(self, source: str, line: int | None, message: str) -> None:
        if len(message) > MAX_MESSAGE:
            message = message[: MAX_MESSAGE - 3] + "..."
        self.source = source
        self.line = line
        self.message = message
        where = f"{source} line {line}" if line is not None else source
        super().__init__(f"{where}: {message}")


@dataclass(frozen=True, slots=True, kw_only=True)
class Step:
    kind: str
    args: Mapping[str, Any]
    line: int

    @property
    def label(self) -> str:
        return describe(self)


@dataclass(frozen=True, slots=True, kw_only=True)
class ClusterSpec:
    brokers: int = 3
    seed: int = 0
    config: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class Scenario:
    name: str
    description: str
    cluster: ClusterSpec
    steps: tuple[Step, ...]
    source: str
    slug: str


# ----------------------------------------------------------------------------- field types


class _Bad(Exception):
    """A value of the wrong shape; the message says what was expected."""


def _int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _Bad(f"an integer, not {excerpt(value)}")
    if not -MAX_INT <= value <= MAX_INT:
        raise _Bad(f"a 64-bit integer (at most {MAX_INT} either way), not {excerpt(value)}")
    return value


def _nonneg(value: Any) -> int:
    number = _int(value)
    if number < 0:
        raise _Bad(f"a number >= 0, not {number}")
    return number


def _positive(value: Any) -> int:
    number = _int(value)
    if number < 1:
        raise _Bad(f"a number >= 1, not {number}")
    return number


def _at_most(check: Callable[[Any], int], high: int, unit: str = "") -> Callable[[Any], int]:
    def bounded(value: Any) -> int:
        number = check(value)
        if number > high:
            raise _Bad(f"at most {high}{unit}, not {number}")
        return number

    return bounded


_ms = _at_most(_nonneg, MAX_MS, " ms (one hour of virtual time)")
_timeout_ms = _at_most(_positive, MAX_MS, " ms (one hour of virtual time)")
_produce_count = _at_most(_positive, MAX_PRODUCE, " records")
_record_count = _at_most(_nonneg, MAX_RECORDS, " records")
_partition_count = _at_most(_positive, MAX_PARTITIONS, " (partitions a topic may have in the lab)")


def _within(limit: limits.Whole) -> Callable[[Any], int]:
    """A whole number within the lab's ``limit`` (the one the API, the forms and the controls use)."""

    def check(value: Any) -> int:
        number = _int(value)
        if not limit.low <= number <= limit.high:
            raise _Bad(f"a number from {limit.low} to {limit.high}, not {number}")
        return number

    return check


def _rate(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _Bad(f"a number, not {excerpt(value)}")
    rate = float(value)
    if math.isnan(rate) or rate <= 0:
        raise _Bad(f"more than 0 records/s, not {excerpt(value)}")
    if rate > MAX_RATE:
        raise _Bad(f"at most {MAX_RATE:g} records/s, not {excerpt(value)}")
    return rate


def _str(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise _Bad(f"a non-empty string, not {excerpt(value)}")
    return value


def _template_of(limit: limits.Text) -> Callable[[Any], str]:
    """A record's key or value: text of at most the lab's length, where {i} is the record's number
    and {producer} the producer's name."""

    def check(value: Any) -> str:
        text = _template(value)
        if len(text) > limit.max_length:
            raise _Bad(f"text of at most {limit.max_length} characters, not {len(text)}")
        return text

    return check


def _template(value: Any) -> str:
    text = _str(value)
    try:
        fields = [(name, spec, conversion) for _, name, spec, conversion in string.Formatter().parse(text)]
    except ValueError as error:
        raise _Bad(f"text with {{i}} and {{producer}} in braces ({error})") from None
    for name, spec, conversion in fields:
        if name is not None and (name not in ("i", "producer") or spec or conversion):
            raise _Bad(
                f"text that may only use {{i}} and {{producer}} (write {{{{ and }}}} for a brace), "
                f"not {excerpt(text)}"
            )
    return text


def _bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise _Bad(f"true or false, not {excerpt(value)}")
    return value


def _ints(value: Any) -> list[int]:
    if not isinstance(value, list):
        raise _Bad(f"a list of integers, not {excerpt(value)}")
    return [_int(v) for v in value]


def _strs(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list) or not value:
        raise _Bad(f"a list of names, not {excerpt(value)}")
    return [_str(v) for v in value]


def _config(value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        raise _Bad(f"a mapping of config keys to values, not {excerpt(value)}")
    out: dict[str, str] = {}
    for key, raw in value.items():
        if isinstance(raw, bool):
            out[str(key)] = "true" if raw else "false"
        elif isinstance(raw, int | float | str):
            out[str(key)] = str(raw)
        else:
            raise _Bad(f"a plain value for config {excerpt(key)}, not {excerpt(raw)}")
    return out


def _assignment(value: Any) -> dict[int, list[int]]:
    """Replicas by partition, as Kafka's --replica-assignment: {0: [1, 2], 1: [2, 3]}."""
    if not isinstance(value, dict) or not value:
        raise _Bad(f"a mapping of partitions to lists of broker ids, not {excerpt(value)}")
    out: dict[int, list[int]] = {}
    for partition, replicas in value.items():
        number = _int(partition)
        if not 0 <= number < MAX_PARTITIONS:
            raise _Bad(
                f"a mapping of partitions 0 to {MAX_PARTITIONS - 1} to broker ids, not partition {number}"
            )
        out[number] = _ints(replicas)
    return out


def _partition(value: Any) -> str:
    text = _str(value)
    topic, sep, number = text.rpartition("-")
    if not sep or not topic or not number.isdigit():
        raise _Bad(f"a partition written topic-N (like orders-0), not {excerpt(text)}")
    return text


def _acks(value: Any) -> str:
    text = str(value).lower() if isinstance(value, int | str) else ""
    if text not in ("0", "1", "all", "-1"):
        raise _Bad(f"acks 0, 1 or all, not {excerpt(value)}")
    return "all" if text == "-1" else text


def _error_name(value: Any) -> str:
    """One of Kafka's error names the engine knows (PRODUCER_FENCED, INVALID_PRODUCER_EPOCH...)."""
    if not isinstance(value, str) or error_class(value) is KafkaError:
        raise _Bad(
            f"one of Kafka's error names (PRODUCER_FENCED, INVALID_TXN_STATE...), not {excerpt(value)}"
        )
    return value


def _choice(*options: str) -> Callable[[Any], str]:
    def check(value: Any) -> str:
        if value not in options:
            raise _Bad(f"one of {', '.join(options)}, not {excerpt(value)}")
        return str(value)

    return check


def _from(value: Any) -> int | str:
    if value in ("earliest", "latest"):
        return str(value)
    return _nonneg(value)


def _leader(value: Any) -> int:
    if value is None or value == "none":
        return -1
    return _int(value)


def _lost(value: Any) -> dict[str, list[int]]:
    if value in ("none", None, {}):
        return {}
    if not isinstance(value, dict):
        raise _Bad(f"a mapping of partitions to offsets (or none), not {excerpt(value)}")
    return {_partition(k): _ints(v) for k, v in value.items()}


def _broker_numbers(value: Any) -> dict[int, int]:
    if not isinstance(value, dict):
        raise _Bad(f"a mapping of broker ids to offsets, not {excerpt(value)}")
    return {_int(k): _nonneg(v) for k, v in value.items()}


def _values(value: Any) -> list[str | None]:
    if not isinstance(value, list):
        raise _Bad(f"a list of record values, not {excerpt(value)}")
    return [None if v is None else str(v) for v in value]


def _mapping(
    schema: dict[str, Callable[[Any], Any]], required: tuple[str, ...] = ()
) -> Callable[[Any], dict[str, Any]]:
    def check(value: Any) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise _Bad(f"a mapping with {', '.join(schema)}, not {excerpt(value)}")
        return _fields(value, schema, required)

    return check


def _journal(value: Any) -> list[dict[str, Any]]:
    items = value if isinstance(value, list) else [value]
    check = _mapping({"kind": _str, "contains": _str, "count": _nonneg}, ("kind",))
    return [check(item) for item in items]


# ----------------------------------------------------------------------------- step schemas

Schema = dict[str, Callable[[Any], Any]]

EXPECT: Schema = {
    "partition": _partition,
    "leader": _leader,
    "not_leader": _int,
    "isr": _ints,
    "leader_epoch": _nonneg,
    "replicas": _ints,
    "offline": _bool,
    "hw": _nonneg,
    "lso": _nonneg,  # the leader's last stable offset (read_committed reads below it)
    "leo": _nonneg,
    "log_start_offset": _nonneg,
    "hw_by_broker": _broker_numbers,
    "leo_by_broker": _broker_numbers,
    "log": _mapping({"broker": _int, "values": _values}, ("broker", "values")),
    "replica": _mapping({"broker": _int, "leader": _leader, "leader_epoch": _nonneg}, ("broker",)),
    "lost": _lost,
    "lost_count": _nonneg,
    "journal": _journal,
    "no_journal": _journal,
    "group": _mapping(
        {
            "name": _str,
            "state": _str,
            "members": _nonneg,
            "generation": _nonneg,
            "revoked_total": _nonneg,
            "committed": _config,
            "lag": _nonneg,
        },
        ("name",),
    ),
    # A transactional id as its coordinator holds it now.
    "transaction": _mapping(
        {
            "id": _str,
            "state": _choice(*(state.value for state in TxnState)),
            "producer_epoch": _nonneg,
            "coordinator": _int,
            "not_coordinator": _int,
            "partitions": _strs,
        },
        ("id",),
    ),
    "consumed": _mapping(
        {"as": _str, "count": _nonneg, "values": _values, "offsets": _ints, "min_count": _nonneg}, ("as",)
    ),
    "produced": _mapping(
        {"producer": _str, "acked": _nonneg, "failed": _nonneg, "error": _str, "offsets": _ints},
        ("producer",),
    ),
    "controller": _int,
    "not_controller": _int,
    "controller_epoch": _nonneg,
    "broker_state": _mapping({"broker": _int, "state": _str}, ("broker", "state")),
}
_PARTITION_KEYS = (
    "leader",
    "not_leader",
    "isr",
    "leader_epoch",
    "replicas",
    "offline",
    "hw",
    "lso",
    "leo",
    "log_start_offset",
    "hw_by_broker",
    "leo_by_broker",
    "log",
    "replica",
)

BROKER: Schema = {"broker": _within(limits.BROKER_ID)}


def _text_of(limit: limits.Text) -> Callable[[Any], str]:
    def check(value: Any) -> str:
        if not isinstance(value, str):
            raise _Bad(limit.what)
        try:
            return limit.check(value)
        except KafkaError:
            raise _Bad(f"{limit.what} that {limit.rule}, of up to {limit.max_length} characters") from None

    return check


_principal = _text_of(limits.PRINCIPAL)
ACL: Schema = {
    "resource_type": _choice("Topic", "Group", "Cluster", "TransactionalId"),
    "name": _text_of(limits.ACL_RESOURCE),
    "pattern": _choice("Literal", "Prefixed"),
    "principal": _principal,
    "host": _text_of(limits.ACL_HOST),
    "operation": _choice(*(o.value for o in Operation)),
    "permission": _choice("Allow", "Deny"),
}


STEPS: dict[str, tuple[Schema, tuple[str, ...], str | None]] = {
    # kind: (fields, required, the field a bare scalar fills)
    "note": ({"text": _str}, ("text",), "text"),
    "create_topic": (
        {
            "name": _str,
            "partitions": _within(limits.PARTITIONS),
            "replication_factor": _within(limits.REPLICATION_FACTOR),
            "config": _config,
            "assignment": _assignment,
        },
        ("name",),
        "name",
    ),
    "delete_topic": ({"name": _str}, ("name",), "name"),
    "add_partitions": ({"topic": _str, "total": _within(limits.PARTITIONS)}, ("topic", "total"), None),
    "set_config": ({"topic": _str, "config": _config}, ("topic", "config"), None),
    "produce": (
        {
            "topic": _str,
            "count": _produce_count,
            "acks": _acks,
            "key": _template_of(limits.KEY),
            "value": _template_of(limits.VALUE),
            "partition": _within(limits.PARTITION),
            "producer": _str,
            "wait": _bool,
            "retries": _nonneg,
            "request_timeout_ms": _timeout_ms,
            "delivery_timeout_ms": _timeout_ms,
            "linger_ms": _ms,
            "enable_idempotence": _bool,  # Kafka's default (true) unless acks or retries contradict it
            "timestamp": _nonneg,
            "tombstone": _bool,  # a null value: deletes the key of a compacted topic
            "principal": _principal,  # who the producer's requests come from (the lab's super user by default)
        },
        ("topic",),
        None,
    ),
    "consume": (
        {
            "topic": _str,
            "partition": _within(limits.PARTITION),
            "isolation_level": _choice("read_uncommitted", "read_committed"),
            "from": _from,
            "count": _record_count,
            "as": _str,
            "timeout_ms": _timeout_ms,
        },
        ("topic",),
        None,
    ),
    # Transactions: begin_transaction makes the producer (with its transactional.id) and runs
    # init_transactions the first time; produce steps naming it send in the transaction.
    # ``expect_error`` (Kafka's error name): the call must fail with it (a zombie fenced, say), and the
    # step passes only then.
    "begin_transaction": (
        {
            "producer": _str,
            "transactional_id": _text_of(limits.TRANSACTIONAL_ID),
            "transaction_timeout_ms": _within(limits.TRANSACTION_TIMEOUT_MS),
            "expect_error": _error_name,
        },
        ("producer",),
        "producer",
    ),
    "commit_transaction": ({"producer": _str, "expect_error": _error_name}, ("producer",), "producer"),
    "abort_transaction": ({"producer": _str, "expect_error": _error_name}, ("producer",), "producer"),
    "seek": ({"as": _str, "partition": _partition, "offset": _nonneg}, ("as", "partition", "offset"), None),
    "read": (
        {"as": _str, "count": _at_most(_positive, MAX_RECORDS, " records"), "timeout_ms": _timeout_ms},
        ("as", "count"),
        None,
    ),
    "kill": ({"broker": _within(limits.BROKER_ID), "lose_unflushed": _bool}, ("broker",), "broker"),
    "restart": (BROKER, ("broker",), "broker"),
    "pause": (BROKER, ("broker",), "broker"),
    "resume": (BROKER, ("broker",), "broker"),
    "heal": (BROKER, ("broker",), "broker"),
    "controlled_shutdown": (BROKER, ("broker",), "broker"),
    "isolate": (
        {"broker": _within(limits.BROKER_ID), "from": _choice("zookeeper", "brokers", "clients")},
        ("broker",),
        "broker",
    ),
    "slow": (
        {"broker": _within(limits.BROKER_ID), "delay_ms": _within(limits.SLOW_MS)},
        ("broker",),
        "broker",
    ),
    "wait": ({"ms": _ms}, ("ms",), "ms"),
    "wait_until": ({**EXPECT, "timeout_ms": _timeout_ms}, (), None),
    "expect": (EXPECT, (), None),
    "lose_ack": ({"client": _str, "count": _produce_count}, ("client",), "client"),
    "add_producer": (
        {
            "topic": _str,
            "name": _str,
            "rate": _rate,
            "keys": _at_most(_nonneg, MAX_KEYS, " keys"),
            "acks": _acks,
            "principal": _principal,  # who its requests come from (the lab's super user by default)
        },
        ("topic",),
        None,
    ),
    "stop_producer": ({"name": _str}, ("name",), "name"),
    "add_consumer": (
        {
            "group": _str,
            "topics": _strs,
            "name": _str,
            "processing_ms": _within(limits.PROCESSING_MS),
            "assignor": _choice("range", "roundrobin", "sticky", "cooperative-sticky"),
            "session_timeout_ms": _timeout_ms,
            "heartbeat_interval_ms": _timeout_ms,
            "max_poll_interval_ms": _timeout_ms,
            "group_instance_id": _str,
            "principal": _principal,
        },
        ("group", "topics"),
        None,
    ),
    # kafka-acls.sh --add / --remove (straight to ZooKeeper): Kafka's names, checked as Kafka checks an ACL.
    "create_acl": (ACL, ("name", "principal", "operation"), None),
    "delete_acl": (ACL, ("name", "principal", "operation"), None),
    "stop_consumer": ({"name": _str}, ("name",), "name"),
    "crash_consumer": ({"name": _str}, ("name",), "name"),
    "reassign": ({"partition": _partition, "replicas": _ints}, ("partition", "replicas"), None),
    "elect_preferred": ({"partitions": _strs}, (), "partitions"),
}


def _fields(raw: Mapping[str, Any], schema: Schema, required: tuple[str, ...]) -> dict[str, Any]:
    unknown = [k for k in raw if k not in schema]
    if unknown:
        raise _Bad(f"unknown field {excerpt(unknown[0])} (known: {', '.join(schema)})")
    missing = [k for k in required if k not in raw]
    if missing:
        raise _Bad(f"missing field {missing[0]!r}")
    out: dict[str, Any] = {}
    for key, value in raw.items():
        try:
            out[key] = schema[key](value)
        except _Bad as bad:
            raise _Bad(f"{key!r} must be {bad}") from None
        except (TypeError, ValueError) as exc:
            raise _Bad(f"{key!r}: {clip(str(exc), 200)}") from None
    return out


PRODUCER_FIELDS = ("retries", "request_timeout_ms", "delivery_timeout_ms", "linger_ms", "enable_idempotence")


def _check_producer(args: Mapping[str, Any]) -> None:
    """The producer a produce step makes must be one Kafka would make (delivery.timeout.ms and all)."""
    config = {key.replace("_", "."): args[key] for key in PRODUCER_FIELDS if key in args}
    try:
        producer_config({"acks": args.get("acks", "all"), **config})
    except ConfigException as error:
        raise _Bad(error.message) from None


def _step(kind: str, value: Any) -> dict[str, Any]:
    schema, required, scalar = STEPS[kind]
    if not isinstance(value, dict):
        if scalar is None:
            raise _Bad(f"'{kind}' takes a mapping of {', '.join(schema)}")
        value = {scalar: value}
    args = _fields(value, schema, required)
    if kind == "produce":
        _check_producer(args)
    if kind == "produce" and args.get("tombstone") and "value" in args:
        raise _Bad("a tombstone has no value: give 'tombstone: true' or a 'value', not both")
    if kind in ("expect", "wait_until"):
        if not any(k for k in args if k != "timeout_ms"):
            raise _Bad(f"'{kind}' needs at least one thing to check")
        if any(k in args for k in _PARTITION_KEYS) and "partition" not in args:
            raise _Bad(
                f"'{kind}' on {', '.join(k for k in args if k in _PARTITION_KEYS)} needs 'partition' (like orders-0)"
            )
    return args


# ----------------------------------------------------------------------------- loading


def load(path: str | Path) -> Scenario:
    file = Path(path)
    try:
        text = yamlsafe.read(file)
    except OSError as exc:
        raise ScenarioError(str(file), None, f"cannot read the file: {exc.strerror}") from None
    except yamlsafe.YamlError as error:
        raise ScenarioError(str(file), error.line, error.message) from None
    return parse(text, source=str(file), slug=file.stem)


def parse(text: str, *, source: str = "<scenario>", slug: str = "scenario") -> Scenario:
    try:
        document = yamlsafe.load(text)
    except yamlsafe.YamlError as error:
        raise ScenarioError(source, error.line, error.message) from None
    if document.node is None:
        raise ScenarioError(source, None, "the file is empty")
    return from_yaml(document.node, document.data, source=source, slug=slug)


def from_yaml(node: yaml.Node, data: Any, *, source: str, slug: str, name: str | None = None) -> Scenario:
    """A scenario from a mapping read with ``yamlsafe`` (a file's root, or an exercise's setup), so
    errors name the lines of the file it is in; ``name``, when given, is the scenario's name."""
    if not isinstance(node, yaml.MappingNode) or not isinstance(data, dict):
        raise ScenarioError(source, line_of(node), "a scenario is a mapping with name, cluster and steps")
    lines = {key.value: line_of(value) for key, value in node.value}
    allowed = {"name", "description", "cluster", "steps"}
    for key in data:
        if key not in allowed:
            raise ScenarioError(
                source,
                lines.get(key),
                f"unknown top-level key {excerpt(key)} (known: {', '.join(sorted(allowed))})",
            )
    if name is None:
        name = data.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ScenarioError(source, lines.get("name", line_of(node)), "the scenario needs a name")
    description = data.get("description", "")
    if not isinstance(description, str):
        raise ScenarioError(source, lines.get("description"), "description must be text")
    cluster = _cluster(data.get("cluster", {}), source, lines.get("cluster"))
    steps_node = next((v for k, v in node.value if k.value == "steps"), None)
    steps = steps_of(steps_node, data.get("steps"), source=source, line=lines.get("steps"))
    return Scenario(
        name=name.strip(),
        description=description.strip(),
        cluster=cluster,
        steps=steps,
        source=source,
        slug=slug,
    )


def steps_of(
    node: yaml.Node | None, raw: Any, *, source: str, line: int | None, what: str = "'steps'"
) -> tuple[Step, ...]:
    """Steps from a YAML list (a scenario's ``steps``, an exercise's ``solution``), each checked, and
    bounded in number and in the records they send in all."""
    if not isinstance(raw, list) or not raw or not isinstance(node, yaml.SequenceNode):
        raise ScenarioError(source, line, f"{what} must be a non-empty list")
    if len(raw) > MAX_STEPS:
        raise ScenarioError(source, line, f"a scenario has at most {MAX_STEPS} steps, not {len(raw)}")
    steps: list[Step] = []
    records = 0
    for item, step_node in zip(raw, node.value, strict=True):
        at = line_of(step_node)
        if not isinstance(item, dict) or len(item) != 1:
            raise ScenarioError(source, at, "each step is a one-key mapping, like '- kill: 1'")
        ((kind, value),) = item.items()
        if kind not in STEPS:
            raise ScenarioError(
                source, at, f"unknown step {excerpt(kind)} (known: {', '.join(sorted(STEPS))})"
            )
        try:
            args = _step(kind, value)
        except _Bad as bad:
            raise ScenarioError(source, at, f"step '{kind}': {bad}") from None
        if kind == "produce":
            records += args.get("count", 1)
            if records > MAX_RECORDS:
                raise ScenarioError(
                    source,
                    at,
                    f"step 'produce': a scenario sends at most {MAX_RECORDS} records in all; "
                    f"with this step it would send {records}",
                )
        steps.append(Step(kind=kind, args=args, line=at))
    return tuple(steps)


def _cluster(raw: Any, source: str, line: int | None) -> ClusterSpec:
    if not isinstance(raw, dict):
        raise ScenarioError(source, line, "'cluster' must be a mapping of brokers, seed and config")
    try:
        args = _fields(raw, {"brokers": _positive, "seed": _nonneg, "config": _config}, ())
    except _Bad as bad:
        raise ScenarioError(source, line, f"cluster: {bad}") from None
    brokers = args.get("brokers", 3)
    if brokers > limits.BROKERS.high:
        raise ScenarioError(source, line, f"cluster: a lab has at most {limits.BROKERS.high} brokers")
    from lab.engine.config import validate_broker_config
    from lab.engine.errors import KafkaError

    try:
        config = validate_broker_config(args.get("config", {}))
    except KafkaError as exc:
        raise ScenarioError(source, line, f"cluster config: {exc.message}") from None
    return ClusterSpec(brokers=brokers, seed=args.get("seed", 0), config=config)


def describe(step: Step) -> str:
    """A short label for progress bars and tables: ``kill broker 2``, ``produce 10 to orders (acks=all)``."""
    a = step.args
    kind = step.kind
    if kind in ("kill", "restart", "pause", "resume", "heal", "controlled_shutdown"):
        extra = " (losing its unflushed tail)" if a.get("lose_unflushed") else ""
        return f"{kind.replace('_', ' ')} broker {a['broker']}{extra}"
    if kind == "isolate":
        return f"isolate broker {a['broker']} from {a.get('from', 'zookeeper')}"
    if kind == "slow":
        return f"slow broker {a['broker']} by {a.get('delay_ms', 2000)} ms"
    if kind == "wait":
        return f"wait {a['ms']} ms"
    if kind == "create_topic":
        return f"create topic {a['name']} ({a.get('partitions', 1)} partitions, RF {a.get('replication_factor', 1)})"
    if kind == "produce":
        return f"produce {a.get('count', 1)} to {a['topic']} (acks={a.get('acks', 'all')})"
    if kind == "consume":
        return (
            f"consume {a['topic']}"
            + (f"-{a['partition']}" if "partition" in a else "")
            + f" from {a.get('from', 'earliest')}"
        )
    if kind in ("expect", "wait_until"):
        what = ", ".join(f"{k}={v}" for k, v in a.items() if k not in ("timeout_ms",))
        return f"{'expect' if kind == 'expect' else 'wait until'} {what}"
    if kind == "note":
        return str(a["text"])
    rest = ", ".join(f"{k}={v}" for k, v in a.items())
    return f"{kind.replace('_', ' ')} {rest}".strip()
