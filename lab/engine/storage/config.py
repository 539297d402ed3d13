"""A partition log's configuration: Kafka's topic-level log configs, with Kafka's defaults."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Any

from lab.engine.errors import InvalidConfig

COMPACT = "compact"
DELETE = "delete"
_POLICIES = frozenset({COMPACT, DELETE})
_INT_RANGE = (-(2**31), 2**31 - 1)
_LONG_RANGE = (-(2**63), 2**63 - 1)


@dataclass(frozen=True, slots=True)
class _Key:
    name: str  # Kafka's config key
    field: str
    kind: str  # INT, LONG, DOUBLE, LIST
    at_least: float | None = None
    at_most: float | None = None


_KEYS = (
    _Key("segment.bytes", "segment_bytes", "INT", 14),  # Kafka: at least LegacyRecord.RECORD_OVERHEAD_V0
    _Key("segment.ms", "segment_ms", "LONG", 1),
    _Key("retention.ms", "retention_ms", "LONG", -1),
    _Key("retention.bytes", "retention_bytes", "LONG"),
    _Key("cleanup.policy", "cleanup_policy", "LIST"),
    _Key("index.interval.bytes", "index_interval_bytes", "INT", 0),
    _Key("segment.index.bytes", "segment_index_bytes", "INT", 4),
    _Key("delete.retention.ms", "delete_retention_ms", "LONG", 0),
    _Key("min.cleanable.dirty.ratio", "min_cleanable_dirty_ratio", "DOUBLE", 0, 1),
    _Key("max.message.bytes", "max_message_bytes", "INT", 0),
    _Key("file.delete.delay.ms", "file_delete_delay_ms", "LONG", 0),
    _Key("min.compaction.lag.ms", "min_compaction_lag_ms", "LONG", 0),
)


def _invalid(key: str, value: object, problem: str) -> InvalidConfig:
    return InvalidConfig(f"Invalid value {value} for configuration {key}: {problem}")


def _parse_policy(key: str, raw: str) -> frozenset[str]:
    policy = frozenset(p.strip() for p in raw.split(",") if p.strip())
    unknown = sorted(policy - _POLICIES)
    if unknown:
        raise _invalid(key, raw, f"String must be one of: compact, delete (got {', '.join(unknown)})")
    return policy


def _parse_number(spec: _Key, raw: str) -> int | float:
    text = raw.strip()
    if spec.kind == "DOUBLE":
        try:
            number: int | float = float(text)
        except ValueError:
            raise _invalid(spec.name, raw, "Not a number of type DOUBLE") from None
        if not math.isfinite(number):
            raise _invalid(spec.name, raw, "Not a number of type DOUBLE")
        return number
    try:
        number = int(text)
    except ValueError:
        raise _invalid(spec.name, raw, f"Not a number of type {spec.kind}") from None
    low, high = _INT_RANGE if spec.kind == "INT" else _LONG_RANGE
    if not low <= number <= high:
        raise _invalid(spec.name, raw, f"Not a number of type {spec.kind}")
    return number


@dataclass(frozen=True, slots=True, kw_only=True)
class LogConfig:
    """Kafka's topic log configs (field = key with dots as underscores), Kafka's defaults."""

    segment_bytes: int = 1073741824  # 1 GiB
    segment_ms: int = 604800000  # 7 days
    retention_ms: int = 604800000  # 7 days; -1 keeps forever
    retention_bytes: int = -1
    cleanup_policy: frozenset[str] = frozenset({DELETE})
    index_interval_bytes: int = 4096
    segment_index_bytes: int = 10485760  # 10 MiB
    delete_retention_ms: int = 86400000  # 1 day
    min_cleanable_dirty_ratio: float = 0.5
    max_message_bytes: int = 1048588  # 1 MiB + the record batch overhead
    file_delete_delay_ms: int = 60000
    min_compaction_lag_ms: int = 0

    def __post_init__(self) -> None:
        for spec in _KEYS:
            value = getattr(self, spec.field)
            if spec.kind == "LIST":
                if not isinstance(value, frozenset) or not value <= _POLICIES:
                    raise _invalid(spec.name, value, "String must be one of: compact, delete")
                continue
            if spec.kind == "DOUBLE":
                ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
            else:
                low, high = _INT_RANGE if spec.kind == "INT" else _LONG_RANGE
                ok = isinstance(value, int) and not isinstance(value, bool) and low <= value <= high
            if not ok:
                raise _invalid(spec.name, value, f"Not a number of type {spec.kind}")
            if spec.at_least is not None and value < spec.at_least:
                raise _invalid(spec.name, value, f"Value must be at least {spec.at_least:g}")
            if spec.at_most is not None and value > spec.at_most:
                raise _invalid(spec.name, value, f"Value must be no more than {spec.at_most:g}")

    @property
    def compact(self) -> bool:
        return COMPACT in self.cleanup_policy

    @property
    def delete(self) -> bool:
        return DELETE in self.cleanup_policy

    @classmethod
    def from_topic_config(cls, config: Mapping[str, str], *, defaults: LogConfig | None = None) -> LogConfig:
        """Parse Kafka's topic config keys (``segment.bytes``...) over ``defaults``.

        A bad value raises InvalidConfig naming the key and the problem; keys that are not log
        configs are ignored here (the topic layer validates names).
        """
        base = defaults or cls()
        changes: dict[str, Any] = {}
        for spec in _KEYS:
            if spec.name not in config:
                continue
            raw = config[spec.name]
            if not isinstance(raw, str):
                raise _invalid(spec.name, raw, "expected a string value")
            if spec.kind == "LIST":
                changes[spec.field] = _parse_policy(spec.name, raw)
            else:
                changes[spec.field] = _parse_number(spec, raw)
        values = {f.name: getattr(base, f.name) for f in fields(cls)}
        values.update(changes)
        return cls(**values)

    def to_topic_config(self) -> dict[str, str]:
        """Kafka's keys and this config's values, as strings (``cleanup.policy`` as Kafka lists it)."""
        render: dict[str, Callable[[Any], str]] = {
            "LIST": lambda v: ",".join(sorted(v)),
            "DOUBLE": lambda v: repr(float(v)),
        }
        return {spec.name: render.get(spec.kind, str)(getattr(self, spec.field)) for spec in _KEYS}
