"""Build a kio entity of any version from plain data.

kio has one class per API version, each with the fields that version has. Handlers answer
once, in plain dicts named by Kafka's field names; ``make`` keeps the fields the asked
version has and drops the rest, so one handler serves every version it advertises.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping
from dataclasses import MISSING, fields
from functools import cache
from typing import Any

from kio.schema.errors import ErrorCode
from kio.serial._introspect import EntityField, EntityTupleField, classify_field

from lab.engine.ids import TopicPartition


@cache
def _plan(cls: Any) -> tuple[tuple[str, str, type[Any] | None, bool, bool], ...]:
    """Per field: name, kafka type, nested entity type, is it a tuple of entities, has a default."""
    out = []
    for f in fields(cls):
        kind = classify_field(f)
        nested = kind.type_ if isinstance(kind, EntityField | EntityTupleField) else None
        has_default = f.default is not MISSING or f.default_factory is not MISSING
        out.append(
            (
                f.name,
                f.metadata.get("kafka_type", ""),
                nested,
                isinstance(kind, EntityTupleField),
                has_default,
            )
        )
    return tuple(out)


def make(cls: Any, data: Mapping[str, Any]) -> Any:
    kwargs: dict[str, Any] = {}
    for name, kafka_type, nested, many, has_default in _plan(cls):
        if name not in data:
            if not has_default:
                raise KeyError(f"{cls.__name__} v{cls.__version__} needs {name!r}")
            continue
        value = data[name]
        if nested is not None and value is not None:
            if many:
                value = tuple(make(nested, v) if isinstance(v, Mapping) else v for v in value)
            elif isinstance(value, Mapping):
                value = make(nested, value)
        elif kafka_type == "error_code":
            value = error_code(value)
        elif kafka_type.startswith("timedelta") and isinstance(value, int):
            value = datetime.timedelta(milliseconds=value)
        kwargs[name] = value
    return cls(**kwargs)


def error_code(error: str | int | ErrorCode | None) -> ErrorCode:
    """Kafka's error by name (the engine's ``KafkaError.name``) or number; None is no error."""
    if error is None:
        return ErrorCode.none
    if isinstance(error, ErrorCode):
        return error
    if isinstance(error, int):
        return ErrorCode(error)
    try:
        return ErrorCode[error.lower()]
    except KeyError:
        return ErrorCode.unknown_server_error


def field(body: Any, name: str, default: Any = None) -> Any:
    """A request field that older versions lack, with the value Kafka assumes for them."""
    return getattr(body, name, default)


def millis(value: Any) -> int:
    """kio reads ``timedelta_i32`` fields as timedeltas; the engine counts milliseconds."""
    if isinstance(value, datetime.timedelta):
        return int(value.total_seconds() * 1000)
    return int(value)


# Kafka's AclOperation codes. With no authorizer (the lab has none) a broker answers that the client
# may do every operation the resource supports (AclEntry.supportedOperations); not asked, INT32_MIN.
NOT_ASKED = -2147483648
CLUSTER_OPERATIONS = (
    5,
    7,
    8,
    9,
    10,
    11,
    12,
)  # CREATE ALTER DESCRIBE CLUSTER_ACTION (DESCRIBE|ALTER)_CONFIGS IDEMPOTENT_WRITE
TOPIC_OPERATIONS = (
    3,
    4,
    5,
    6,
    7,
    8,
    10,
    11,
)  # READ WRITE CREATE DELETE ALTER DESCRIBE (DESCRIBE|ALTER)_CONFIGS
GROUP_OPERATIONS = (3, 6, 8)  # READ DELETE DESCRIBE


def authorized_operations(asked: bool, operations: tuple[int, ...]) -> int:
    """Kafka's 32-bit field of the operations allowed, or NOT_ASKED."""
    if not asked:
        return NOT_ASKED
    bits = 0
    for operation in operations:
        bits |= 1 << operation
    return bits


def by_topic(items: Iterable[tuple[TopicPartition, dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    """Per-partition answers grouped under their topic, as Kafka's responses nest them."""
    out: dict[str, list[dict[str, Any]]] = {}
    for tp, item in items:
        out.setdefault(tp.topic, []).append(item)
    return out


def committed_offsets(topics: Iterable[Any]) -> dict[TopicPartition, int]:
    """The offsets an OffsetCommit or TxnOffsetCommit request asks to commit, by partition."""
    return {
        TopicPartition(topic.name, part.partition_index): part.committed_offset
        for topic in topics
        for part in topic.partitions
    }
