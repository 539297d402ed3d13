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
what is wrong, before anything runs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from lab.engine import limits


class ScenarioError(ValueError):
    def __init__(self, source: str, line: int | None, message: str) -> None:
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
        raise _Bad(f"an integer, not {value!r}")
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


def _within(limit: limits.Whole) -> Callable[[Any], int]:
    """A whole number within the lab's ``limit`` (the one the API, the forms and the controls use)."""

    def check(value: Any) -> int:
        number = _int(value)
        if not limit.low <= number <= limit.high:
            raise _Bad(f"a number from {limit.low} to {limit.high}, not {number}")
        return number

    return check


def _rate(limit: limits.Number) -> Callable[[Any], float]:
    def check(value: Any) -> float:
        number = _number(value)
        if not limit.low - 1e-9 <= number <= limit.high + 1e-9:
            raise _Bad(f"a number from {limit.low:g} to {limit.high:g}, not {number:g}")
        return number

    return check


def _text_of(limit: limits.Text) -> Callable[[Any], str]:
    """A record's key or value: text of at most the lab's length (any text, as Kafka's bytes)."""

    def check(value: Any) -> str:
        text = _str(value)
        if len(text) > limit.max_length:
            raise _Bad(f"text of at most {limit.max_length} characters, not {len(text)}")
        return text

    return check


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _Bad(f"a number, not {value!r}")
    return float(value)


def _str(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise _Bad(f"a non-empty string, not {value!r}")
    return value


def _bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise _Bad(f"true or false, not {value!r}")
    return value


def _ints(value: Any) -> list[int]:
    if not isinstance(value, list):
        raise _Bad(f"a list of integers, not {value!r}")
    return [_int(v) for v in value]


def _strs(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list) or not value:
        raise _Bad(f"a list of names, not {value!r}")
    return [_str(v) for v in value]


def _config(value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        raise _Bad(f"a mapping of config keys to values, not {value!r}")
    out: dict[str, str] = {}
    for key, raw in value.items():
        if isinstance(raw, bool):
            out[str(key)] = "true" if raw else "false"
        elif isinstance(raw, int | float | str):
            out[str(key)] = str(raw)
        else:
            raise _Bad(f"a plain value for config {key!r}, not {raw!r}")
    return out


def _partition(value: Any) -> str:
    text = _str(value)
    topic, sep, number = text.rpartition("-")
    if not sep or not topic or not number.isdigit():
        raise _Bad(f"a partition written topic-N (like orders-0), not {text!r}")
    return text


def _acks(value: Any) -> str:
    text = str(value).lower()
    if text not in ("0", "1", "all", "-1"):
        raise _Bad(f"acks 0, 1 or all, not {value!r}")
    return "all" if text == "-1" else text


def _choice(*options: str) -> Callable[[Any], str]:
    def check(value: Any) -> str:
        if value not in options:
            raise _Bad(f"one of {', '.join(options)}, not {value!r}")
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
        raise _Bad(f"a mapping of partitions to offsets (or none), not {value!r}")
    return {_partition(k): _ints(v) for k, v in value.items()}


def _broker_numbers(value: Any) -> dict[int, int]:
    if not isinstance(value, dict):
        raise _Bad(f"a mapping of broker ids to offsets, not {value!r}")
    return {_int(k): _nonneg(v) for k, v in value.items()}


def _values(value: Any) -> list[str | None]:
    if not isinstance(value, list):
        raise _Bad(f"a list of record values, not {value!r}")
    return [None if v is None else str(v) for v in value]


def _mapping(
    schema: dict[str, Callable[[Any], Any]], required: tuple[str, ...] = ()
) -> Callable[[Any], dict[str, Any]]:
    def check(value: Any) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise _Bad(f"a mapping with {', '.join(schema)}, not {value!r}")
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
    "leo",
    "log_start_offset",
    "hw_by_broker",
    "leo_by_broker",
    "log",
    "replica",
)

BROKER: Schema = {"broker": _within(limits.BROKER_ID)}

STEPS: dict[str, tuple[Schema, tuple[str, ...], str | None]] = {
    # kind: (fields, required, the field a bare scalar fills)
    "note": ({"text": _str}, ("text",), "text"),
    "create_topic": (
        {
            "name": _str,
            "partitions": _within(limits.PARTITIONS),
            "replication_factor": _within(limits.REPLICATION_FACTOR),
            "config": _config,
            "assignment": dict,
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
            "count": _within(limits.RECORDS),
            "acks": _acks,
            "key": _text_of(limits.KEY),
            "value": _text_of(limits.VALUE),
            "partition": _within(limits.PARTITION),
            "producer": _str,
            "wait": _bool,
            "retries": _nonneg,
            "request_timeout_ms": _positive,
            "delivery_timeout_ms": _positive,
            "linger_ms": _nonneg,
            "timestamp": _nonneg,
        },
        ("topic",),
        None,
    ),
    "consume": (
        {
            "topic": _str,
            "partition": _within(limits.PARTITION),
            "from": _from,
            "count": _nonneg,
            "as": _str,
            "timeout_ms": _positive,
        },
        ("topic",),
        None,
    ),
    "seek": ({"as": _str, "partition": _partition, "offset": _nonneg}, ("as", "partition", "offset"), None),
    "read": ({"as": _str, "count": _positive, "timeout_ms": _positive}, ("as", "count"), None),
    "kill": ({"broker": _within(limits.BROKER_ID), "lose_unflushed": _bool}, ("broker",), "broker"),
    "restart": (BROKER, ("broker",), "broker"),
    "pause": (BROKER, ("broker",), "broker"),
    "resume": (BROKER, ("broker",), "broker"),
    "heal": (BROKER, ("broker",), "broker"),
    "controlled_shutdown": (BROKER, ("broker",), "broker"),
    "isolate": (
        {"broker": _within(limits.BROKER_ID), "from": _choice("zookeeper", "brokers")},
        ("broker",),
        "broker",
    ),
    "slow": (
        {"broker": _within(limits.BROKER_ID), "delay_ms": _within(limits.SLOW_MS)},
        ("broker",),
        "broker",
    ),
    "wait": ({"ms": _nonneg}, ("ms",), "ms"),
    "wait_until": ({**EXPECT, "timeout_ms": _positive}, (), None),
    "expect": (EXPECT, (), None),
    "lose_ack": ({"client": _str, "count": _positive}, ("client",), "client"),
    "add_producer": (
        {"topic": _str, "name": _str, "rate": _rate(limits.PRODUCER_RATE), "keys": _nonneg, "acks": _acks},
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
            "session_timeout_ms": _positive,
            "heartbeat_interval_ms": _positive,
            "max_poll_interval_ms": _positive,
            "group_instance_id": _str,
        },
        ("group", "topics"),
        None,
    ),
    "stop_consumer": ({"name": _str}, ("name",), "name"),
    "crash_consumer": ({"name": _str}, ("name",), "name"),
    "reassign": ({"partition": _partition, "replicas": _ints}, ("partition", "replicas"), None),
    "elect_preferred": ({"partitions": _strs}, (), "partitions"),
}


def _fields(raw: Mapping[str, Any], schema: Schema, required: tuple[str, ...]) -> dict[str, Any]:
    unknown = [k for k in raw if k not in schema]
    if unknown:
        raise _Bad(f"unknown field {unknown[0]!r} (known: {', '.join(schema)})")
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
            raise _Bad(f"{key!r}: {exc}") from None
    return out


def _step(kind: str, value: Any) -> dict[str, Any]:
    schema, required, scalar = STEPS[kind]
    if not isinstance(value, dict):
        if scalar is None:
            raise _Bad(f"'{kind}' takes a mapping of {', '.join(schema)}")
        value = {scalar: value}
    args = _fields(value, schema, required)
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
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise ScenarioError(str(file), None, f"cannot read the file: {exc.strerror}") from None
    return parse(text, source=str(file), slug=file.stem)


def parse(text: str, *, source: str = "<scenario>", slug: str = "scenario") -> Scenario:
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        line = exc.problem_mark.line + 1 if exc.problem_mark is not None else None
        raise ScenarioError(source, line, f"not valid YAML: {exc.problem}") from None
    except yaml.YAMLError as exc:  # e.g. a control character the reader refuses
        raise ScenarioError(source, None, f"not valid YAML: {exc}") from None
    if root is None:
        raise ScenarioError(source, None, "the file is empty")
    if not isinstance(root, yaml.MappingNode):
        raise ScenarioError(
            source, root.start_mark.line + 1, "a scenario is a mapping with name, cluster and steps"
        )
    data = yaml.safe_load(text)
    lines = {key.value: value.start_mark.line + 1 for key, value in root.value}
    allowed = {"name", "description", "cluster", "steps"}
    for key in data:
        if key not in allowed:
            raise ScenarioError(
                source, lines.get(key), f"unknown top-level key {key!r} (known: {', '.join(sorted(allowed))})"
            )
    name = data.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ScenarioError(source, lines.get("name", 1), "the scenario needs a name")
    description = data.get("description", "")
    if not isinstance(description, str):
        raise ScenarioError(source, lines.get("description"), "description must be text")
    cluster = _cluster(data.get("cluster", {}), source, lines.get("cluster"))
    steps_node = next((v for k, v in root.value if k.value == "steps"), None)
    raw_steps = data.get("steps")
    if not isinstance(raw_steps, list) or not raw_steps or not isinstance(steps_node, yaml.SequenceNode):
        raise ScenarioError(source, lines.get("steps"), "'steps' must be a non-empty list")
    steps: list[Step] = []
    for raw, node in zip(raw_steps, steps_node.value, strict=True):
        line = node.start_mark.line + 1
        if not isinstance(raw, dict) or len(raw) != 1:
            raise ScenarioError(source, line, "each step is a one-key mapping, like '- kill: 1'")
        ((kind, value),) = raw.items()
        if kind not in STEPS:
            raise ScenarioError(source, line, f"unknown step {kind!r} (known: {', '.join(sorted(STEPS))})")
        try:
            args = _step(kind, value)
        except _Bad as bad:
            raise ScenarioError(source, line, f"step '{kind}': {bad}") from None
        steps.append(Step(kind=kind, args=args, line=line))
    return Scenario(
        name=name.strip(),
        description=description.strip(),
        cluster=cluster,
        steps=tuple(steps),
        source=source,
        slug=slug,
    )


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
