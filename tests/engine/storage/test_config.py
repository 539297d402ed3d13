"""LogConfig: Kafka's defaults and Kafka's topic config keys."""

from __future__ import annotations

import pytest

from lab.engine.errors import InvalidConfig
from lab.engine.storage.config import LogConfig


def test_defaults_are_kafkas() -> None:
    config = LogConfig()
    assert config.segment_bytes == 1024**3
    assert config.segment_ms == 7 * 24 * 3600 * 1000
    assert config.retention_ms == 7 * 24 * 3600 * 1000
    assert config.retention_bytes == -1
    assert config.cleanup_policy == frozenset({"delete"})
    assert config.index_interval_bytes == 4096
    assert config.segment_index_bytes == 10 * 1024 * 1024
    assert config.delete_retention_ms == 24 * 3600 * 1000
    assert config.min_cleanable_dirty_ratio == 0.5
    assert config.max_message_bytes == 1048588
    assert config.min_compaction_lag_ms == 0
    assert config.delete
    assert not config.compact


def test_parses_kafkas_keys_and_ignores_others() -> None:
    config = LogConfig.from_topic_config(
        {
            "segment.bytes": "1024",
            "segment.ms": "60000",
            "retention.ms": "-1",
            "retention.bytes": "5000",
            "cleanup.policy": "compact, delete",
            "index.interval.bytes": "128",
            "segment.index.bytes": "4096",
            "delete.retention.ms": "10",
            "min.cleanable.dirty.ratio": "0.25",
            "max.message.bytes": "2000",
            "min.compaction.lag.ms": "5",
            "file.delete.delay.ms": "0",
            "min.insync.replicas": "2",  # not a log config: ignored here
        }
    )
    assert config == LogConfig(
        segment_bytes=1024,
        segment_ms=60000,
        retention_ms=-1,
        retention_bytes=5000,
        cleanup_policy=frozenset({"compact", "delete"}),
        index_interval_bytes=128,
        segment_index_bytes=4096,
        delete_retention_ms=10,
        min_cleanable_dirty_ratio=0.25,
        max_message_bytes=2000,
        min_compaction_lag_ms=5,
        file_delete_delay_ms=0,
    )
    assert config.compact
    assert config.delete


def test_unset_keys_keep_the_defaults_given() -> None:
    base = LogConfig(segment_bytes=2048)
    assert LogConfig.from_topic_config({"retention.ms": "100"}, defaults=base) == LogConfig(
        segment_bytes=2048, retention_ms=100
    )


@pytest.mark.parametrize(
    ("key", "value", "problem"),
    [
        ("segment.bytes", "big", "Not a number of type INT"),
        ("segment.bytes", "13", "at least 14"),
        ("segment.bytes", "3000000000", "Not a number of type INT"),
        ("segment.ms", "0", "at least 1"),
        ("retention.ms", "-2", "at least -1"),
        ("retention.bytes", "1.5", "Not a number of type LONG"),
        ("cleanup.policy", "compact,shred", "shred"),
        ("index.interval.bytes", "-1", "at least 0"),
        ("segment.index.bytes", "3", "at least 4"),
        ("min.cleanable.dirty.ratio", "1.5", "no more than 1"),
        ("min.cleanable.dirty.ratio", "half", "Not a number of type DOUBLE"),
        ("max.message.bytes", "", "Not a number of type INT"),
        ("min.compaction.lag.ms", "-5", "at least 0"),
        ("delete.retention.ms", "nan", "Not a number of type LONG"),
    ],
)
def test_bad_values_name_the_key_and_the_problem(key: str, value: str, problem: str) -> None:
    with pytest.raises(InvalidConfig) as raised:
        LogConfig.from_topic_config({key: value})
    assert key in str(raised.value)
    assert problem in str(raised.value)
    assert raised.value.name == "INVALID_CONFIG"


def test_building_directly_is_validated_too() -> None:
    with pytest.raises(InvalidConfig, match=r"segment\.bytes"):
        LogConfig(segment_bytes=0)
    with pytest.raises(InvalidConfig, match=r"cleanup\.policy"):
        LogConfig(cleanup_policy=frozenset({"archive"}))


def test_renders_back_to_kafkas_keys() -> None:
    config = LogConfig(cleanup_policy=frozenset({"delete", "compact"}), retention_ms=-1)
    rendered = config.to_topic_config()
    assert rendered["cleanup.policy"] == "compact,delete"
    assert rendered["retention.ms"] == "-1"
    assert rendered["min.cleanable.dirty.ratio"] == "0.5"
    assert LogConfig.from_topic_config(rendered) == config
