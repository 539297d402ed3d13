"""Kafka's configuration keys: Kafka's defaults beside the lab's, parsing, and clear errors."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import pytest

from lab.engine.cluster import Cluster
from lab.engine.config import (
    BROKER_KEYS,
    CONSUMER_KEYS,
    KEYS,
    PRODUCER_KEYS,
    TOPIC_KEYS,
    BrokerConfig,
    ClientConfig,
    ConfigKey,
    consumer_config,
    describe,
    effective_topic_config,
    main,
    producer_config,
    validate_broker_config,
    validate_topic_config,
)
from lab.engine.errors import ConfigException, InvalidConfig
from lab.engine.storage import LogConfig

ALL_KEYS = [key for keys in KEYS.values() for key in keys.values()]


def _id(key: ConfigKey) -> str:
    return f"{key.scope}:{key.name}"


@pytest.mark.parametrize("key", ALL_KEYS, ids=_id)
def test_every_key_parses_its_kafka_default_and_its_lab_default(key: ConfigKey) -> None:
    key.parse(key.kafka_default)
    key.parse(key.default)
    assert key.doc.strip()  # every key has a sentence for its tooltip


# Kafka 3.x's defaults (ReplicationConfigs, GroupCoordinatorConfig, LogConfig, KAFKA-FACTS.md).
KAFKA_DEFAULTS = {
    "replica.lag.time.max.ms": "30000",
    "zookeeper.session.timeout.ms": "18000",
    "min.insync.replicas": "1",
    "unclean.leader.election.enable": "false",
    "auto.leader.rebalance.enable": "true",
    "leader.imbalance.check.interval.seconds": "300",
    "leader.imbalance.per.broker.percentage": "10",
    "replica.fetch.wait.max.ms": "500",
    "replica.fetch.max.bytes": "1048576",
    "replica.fetch.backoff.ms": "1000",
    "replica.socket.timeout.ms": "30000",
    "replica.high.watermark.checkpoint.interval.ms": "5000",
    "log.retention.check.interval.ms": "300000",
    "request.timeout.ms": "30000",
    "controlled.shutdown.enable": "true",
    "offsets.topic.num.partitions": "50",
    "offsets.topic.replication.factor": "3",
    "group.initial.rebalance.delay.ms": "3000",
    "group.min.session.timeout.ms": "6000",
    "group.max.session.timeout.ms": "1800000",
}
KAFKA_TOPIC_DEFAULTS = {
    "cleanup.policy": "delete",
    "retention.ms": "604800000",
    "retention.bytes": "-1",
    "segment.bytes": "1073741824",
    "segment.ms": "604800000",
    "index.interval.bytes": "4096",
    "segment.index.bytes": "10485760",
    "delete.retention.ms": "86400000",
    "min.cleanable.dirty.ratio": "0.5",
    "min.compaction.lag.ms": "0",
    "max.message.bytes": "1048588",
    "min.insync.replicas": "1",
    "unclean.leader.election.enable": "false",
}


@pytest.mark.parametrize(("name", "value"), sorted(KAFKA_DEFAULTS.items()))
def test_broker_keys_carry_kafkas_own_default(name: str, value: str) -> None:
    assert BROKER_KEYS[name].kafka_default == value


@pytest.mark.parametrize(("name", "value"), sorted(KAFKA_TOPIC_DEFAULTS.items()))
def test_topic_keys_carry_kafkas_own_default(name: str, value: str) -> None:
    assert TOPIC_KEYS[name].kafka_default == value


def test_topic_defaults_agree_with_the_logs_own_defaults() -> None:
    kafka = {name: key.kafka_default for name, key in TOPIC_KEYS.items()}
    assert LogConfig.from_topic_config(kafka) == LogConfig()


def test_the_lab_shortens_timings_and_says_so_beside_kafkas_value() -> None:
    lag = BROKER_KEYS["replica.lag.time.max.ms"]
    assert (lag.kafka_default, lag.lab_default, lag.default) == ("30000", "10000", "10000")
    session = BROKER_KEYS["zookeeper.session.timeout.ms"]
    assert (session.kafka_default, session.default) == ("18000", "6000")
    unchanged = BROKER_KEYS["min.insync.replicas"]
    assert unchanged.lab_default is None
    assert unchanged.default == unchanged.kafka_default == "1"
    rows = {row["name"]: row for row in describe(BROKER_KEYS)}
    assert rows["replica.lag.time.max.ms"]["lab"] == "10000"
    assert rows["replica.lag.time.max.ms"]["kafka"] == "30000"
    assert rows["replica.lag.time.max.ms"]["scope"] == "broker"
    assert rows["replica.lag.time.max.ms"]["doc"] == lag.doc
    assert set(rows) == set(BROKER_KEYS)


def test_lab_only_keys_are_named_lab_and_default_to_kafkas_behaviour() -> None:
    lab_keys = [k for k in BROKER_KEYS.values() if k.name.startswith("lab.")]
    assert lab_keys
    for key in lab_keys:
        assert key.doc.startswith("Lab only")
    # Kafka has no network latency and has leader epochs: "Kafka's default" is Kafka's behaviour.
    assert BROKER_KEYS["lab.network.latency.ms"].kafka_default == "0"
    assert BROKER_KEYS["lab.leader.epochs"].kafka_default == "true"


@pytest.mark.parametrize(
    ("name", "raw", "expected"),
    [
        ("replica.lag.time.max.ms", "1000", 1000),
        ("replica.lag.time.max.ms", " 2500 ", 2500),
        ("replica.lag.time.max.ms", 700, 700),
        ("unclean.leader.election.enable", "TRUE", True),
        ("unclean.leader.election.enable", False, False),
        ("log.flush.interval.ms", "-1", -1),
    ],
)
def test_broker_values_parse_to_their_types(name: str, raw: object, expected: object) -> None:
    assert BROKER_KEYS[name].parse(raw) == expected


def test_topic_values_parse_to_their_types() -> None:
    assert TOPIC_KEYS["cleanup.policy"].parse("compact, delete") == ("compact", "delete")
    assert TOPIC_KEYS["min.cleanable.dirty.ratio"].parse("0.25") == 0.25
    assert TOPIC_KEYS["retention.ms"].parse("-1") == -1


BAD_VALUES = [
    ("broker", "replica.lag.time.max.ms", "ten seconds", "not a number"),
    ("broker", "replica.lag.time.max.ms", "1.5", "not a number"),
    ("broker", "replica.lag.time.max.ms", "0", "at least 1"),
    ("broker", "unclean.leader.election.enable", "yes", "true or false"),
    ("broker", "unclean.leader.election.enable", "1", "true or false"),
    ("broker", "min.insync.replicas", True, "not a number"),
    ("broker", "zookeeper.session.timeout.ms", "500", "at least 1000"),
    ("broker", "zookeeper.session.timeout.ms", "60001", "at most 60000"),
    ("broker", "leader.imbalance.per.broker.percentage", "101", "at most 100"),
    ("broker", "replica.fetch.max.bytes", str(2**31), "not a number"),  # an INT is 32 bits in Kafka
    ("broker", "log.flush.interval.ms", str(2**63), "not a number"),  # a LONG is 64 bits
    ("topic", "cleanup.policy", "archive", "'archive' is not one of delete, compact"),
    ("topic", "cleanup.policy", " , ", "empty list"),
    ("topic", "min.cleanable.dirty.ratio", "1.5", "at most 1"),
    ("topic", "min.cleanable.dirty.ratio", "nan", "not a number"),
    ("topic", "min.cleanable.dirty.ratio", "-inf", "not a number"),
    ("topic", "retention.ms", "-2", "at least -1"),
    ("topic", "segment.bytes", "13", "at least 14"),
    ("topic", "segment.bytes", "4294967296", "not a number"),
]


@pytest.mark.parametrize(("scope", "name", "raw", "problem"), BAD_VALUES)
def test_a_bad_value_raises_invalid_config_naming_the_key_and_the_problem(
    scope: str, name: str, raw: object, problem: str
) -> None:
    keys = BROKER_KEYS if scope == "broker" else TOPIC_KEYS
    with pytest.raises(InvalidConfig) as info:
        keys[name].parse(raw)
    assert name in str(info.value)
    assert problem in str(info.value)
    assert info.value.name == "INVALID_CONFIG"


def test_unknown_keys_are_refused_by_name() -> None:
    with pytest.raises(InvalidConfig, match=r"Unknown broker config name: replica\.lag\.time\.max$"):
        validate_broker_config({"replica.lag.time.max": "1000"})
    with pytest.raises(InvalidConfig, match=r"Unknown topic config name: replica\.lag\.time\.max\.ms"):
        validate_topic_config({"replica.lag.time.max.ms": "1000"})  # a broker key, not a topic key
    with pytest.raises(InvalidConfig, match=r"Unknown broker config name: retention\.ms"):
        validate_broker_config({"retention.ms": "1000"})


def test_validation_returns_the_normal_string_form() -> None:
    assert validate_topic_config({"cleanup.policy": " compact ,delete", "retention.ms": 5000}) == {
        "cleanup.policy": "compact,delete",
        "retention.ms": "5000",
    }
    assert validate_broker_config({"unclean.leader.election.enable": True}) == {
        "unclean.leader.election.enable": "true"
    }


def test_broker_config_of_holds_every_broker_key_with_the_labs_defaults() -> None:
    config = BrokerConfig.of()
    assert set(config.values) == set(BROKER_KEYS)
    assert config.int("replica.lag.time.max.ms") == 10_000
    assert config.int("zookeeper.session.timeout.ms") == 6000
    assert config.bool("unclean.leader.election.enable") is False
    assert config.bool("auto.leader.rebalance.enable") is True


def test_broker_config_of_applies_overrides() -> None:
    config = BrokerConfig.of({"replica.lag.time.max.ms": "1000", "unclean.leader.election.enable": True})
    assert config.int("replica.lag.time.max.ms") == 1000
    assert config.bool("unclean.leader.election.enable") is True
    assert config.int("min.insync.replicas") == 1  # the rest stay at their defaults


def test_a_bad_override_raises_and_no_cluster_is_made() -> None:
    with pytest.raises(InvalidConfig, match=r"replica\.lag\.time\.max\.ms"):
        BrokerConfig.of({"replica.lag.time.max.ms": "-5"})
    with pytest.raises(InvalidConfig, match=r"Unknown broker config name: no\.such\.key"):
        Cluster.create(brokers=1, config={"no.such.key": "1"})


def test_effective_topic_config_falls_back_to_the_brokers_values() -> None:
    broker = BrokerConfig.of({"min.insync.replicas": "2", "unclean.leader.election.enable": "true"})
    effective = effective_topic_config({}, broker)
    assert set(effective) == set(TOPIC_KEYS)
    assert effective["min.insync.replicas"] == "2"
    assert effective["unclean.leader.election.enable"] == "true"
    assert effective["retention.ms"] == "604800000"  # no broker key of the lab's: the topic default
    assert effective["cleanup.policy"] == "delete"


def test_a_topic_override_beats_the_brokers_value() -> None:
    broker = BrokerConfig.of({"min.insync.replicas": "2"})
    effective = effective_topic_config({"min.insync.replicas": "3", "retention.ms": "1000"}, broker)
    assert effective["min.insync.replicas"] == "3"
    assert effective["retention.ms"] == "1000"


def test_the_effective_topic_config_makes_a_valid_log_config() -> None:
    config = LogConfig.from_topic_config(effective_topic_config({}, BrokerConfig.of()))
    assert config == LogConfig()


# Producer and consumer configs: the ones the lab's clients honour, Kafka 3.x's defaults.
KAFKA_PRODUCER_DEFAULTS = {
    "acks": "all",
    "batch.size": "16384",
    "linger.ms": "0",
    "retries": "2147483647",
    "retry.backoff.ms": "100",
    "retry.backoff.max.ms": "1000",  # KIP-580, Kafka 3.7
    "delivery.timeout.ms": "120000",
    "request.timeout.ms": "30000",
    "max.in.flight.requests.per.connection": "5",
    "max.block.ms": "60000",
    "compression.type": "none",
    "enable.idempotence": "true",
    "transactional.id": "",
    "transaction.timeout.ms": "60000",
    "partitioner.adaptive.partitioning.enable": "true",
    "partitioner.availability.timeout.ms": "0",
    "partitioner.ignore.keys": "false",
}
KAFKA_CONSUMER_DEFAULTS = {
    "group.id": "",
    "group.instance.id": "",
    "auto.offset.reset": "latest",
    "isolation.level": "read_uncommitted",
    "enable.auto.commit": "true",
    "auto.commit.interval.ms": "5000",
    "fetch.max.wait.ms": "500",
    "max.partition.fetch.bytes": "1048576",
    "max.poll.records": "500",
    "request.timeout.ms": "30000",
    "retry.backoff.ms": "100",
    "session.timeout.ms": "45000",
    "heartbeat.interval.ms": "3000",
    "max.poll.interval.ms": "300000",
    "partition.assignment.strategy": "range,cooperative-sticky",
}


def test_the_client_keys_are_the_ones_the_clients_honour_with_kafkas_defaults() -> None:
    assert {name: key.kafka_default for name, key in PRODUCER_KEYS.items()} == KAFKA_PRODUCER_DEFAULTS
    assert {name: key.kafka_default for name, key in CONSUMER_KEYS.items()} == KAFKA_CONSUMER_DEFAULTS
    # The producer takes every one of Kafka's defaults, idempotence (since 3.0) included.
    assert [k.name for k in PRODUCER_KEYS.values() if k.lab_default is not None] == []
    assert PRODUCER_KEYS["enable.idempotence"].default == "true"
    # The lab's groups notice a lost member in seconds, not Kafka's 45: a class watches it happen.
    assert {k.name: k.lab_default for k in CONSUMER_KEYS.values() if k.lab_default is not None} == {
        "session.timeout.ms": "6000",
        "heartbeat.interval.ms": "2000",
    }


def test_the_assignors_a_consumer_may_name_are_the_engines() -> None:
    from lab.engine.assignment import ASSIGNORS

    assert set(CONSUMER_KEYS["partition.assignment.strategy"].choices) == set(ASSIGNORS)


def test_client_configs_take_the_labs_defaults_under_what_was_given() -> None:
    config = producer_config({"linger.ms": 5, "acks": "1"})
    assert config.values["linger.ms"] == "5"
    assert config.number("batch.size") == 16384
    assert config.text("acks") == "1"
    # acks=1 contradicts idempotence, which was left at its default: Kafka 3.2+ turns it off.
    assert config.flag("enable.idempotence") is False
    assert config.given == {"linger.ms", "acks"}
    assert producer_config({}).flag("enable.idempotence") is True
    assert producer_config({"acks": "all", "retries": 3}).flag("enable.idempotence") is True
    assert producer_config({"retries": 0}).flag("enable.idempotence") is False
    assert producer_config({"max.in.flight.requests.per.connection": 6}).flag("enable.idempotence") is False
    consumer = consumer_config({"group.id": "g", "partition.assignment.strategy": "sticky, range"})
    assert consumer.names("partition.assignment.strategy") == ("sticky", "range")
    assert consumer.values["partition.assignment.strategy"] == "sticky,range"


@pytest.mark.parametrize(
    ("make", "config", "problem"),
    [
        (
            producer_config,
            {"linger.ms": "-1"},
            "Invalid value -1 for configuration linger.ms: must be at least 0",
        ),
        (
            producer_config,
            {"batch.size": "big"},
            "Invalid value 'big' for configuration batch.size: not a number",
        ),
        (
            producer_config,
            {"acks": "2"},
            "Invalid value '2' for configuration acks: must be one of all, -1, 0, 1",
        ),
        (producer_config, {"max.in.flight.requests.per.connection": 0}, "must be at least 1"),
        (producer_config, {"partitioner.ignore.keys": "yes"}, "expected true or false"),
        (producer_config, {"lingerms": 5}, "Unknown producer config name: lingerms"),
        (producer_config, {"group.id": "g"}, "Unknown producer config name: group.id"),
        (consumer_config, {"acks": "all"}, "Unknown consumer config name: acks"),
        (consumer_config, {"session.timeout.ms": "1.5"}, "session.timeout.ms: not a number"),
    ],
)
def test_a_bad_client_config_is_a_config_exception_naming_the_key(
    make: Callable[[Mapping[str, object]], ClientConfig], config: dict[str, object], problem: str
) -> None:
    with pytest.raises(ConfigException) as info:
        make(config)
    assert problem in info.value.message
    assert info.value.name == "INVALID_CONFIG"


def test_python_m_lab_engine_config_prints_every_key_with_both_defaults(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main([]) == 0
    out = capsys.readouterr().out
    for scope, keys in KEYS.items():
        assert f"{scope} configs ({len(keys)})" in out
    lines = {line.split()[0]: line.split() for line in out.splitlines() if line.startswith("  ")}
    assert lines["enable.idempotence"][1:3] == ["true", "true"]  # the lab's, then Kafka's
    assert lines["replica.lag.time.max.ms"][1:3] == ["10000", "30000"]
    assert lines["linger.ms"][1:3] == ["0", "0"]
    assert main(["producer"]) == 0
    only = capsys.readouterr().out
    assert "producer configs" in only
    assert "consumer configs" not in only
    assert main(["producers"]) == 2
    assert "unknown scope 'producers'" in capsys.readouterr().err


def test_each_keys_json_values_are_typed_as_the_key_is() -> None:
    retention = TOPIC_KEYS["retention.ms"]
    assert retention.json_schema()["type"] == "integer"
    assert (retention.json_schema()["minimum"], retention.json_schema()["maximum"]) == (-1, 2**63 - 1)
    assert retention.from_json(60000) == "60000"
    assert retention.from_json(5.0) == "5"  # JSON's 5.0 is the integer 5
    with pytest.raises(InvalidConfig, match=r"retention\.ms: expected a whole number"):
        retention.from_json("60000")  # text is not a number in JSON
    with pytest.raises(InvalidConfig, match="must be at least -1"):
        retention.from_json(-2)
    session = BROKER_KEYS["zookeeper.session.timeout.ms"]
    assert (session.json_schema()["minimum"], session.json_schema()["maximum"]) == (1000, 60000)
    unclean = TOPIC_KEYS["unclean.leader.election.enable"]
    assert unclean.json_schema()["type"] == "boolean"
    assert unclean.from_json(True) == "true"
    with pytest.raises(InvalidConfig, match="expected true or false"):
        unclean.from_json(1)
    ratio = TOPIC_KEYS["min.cleanable.dirty.ratio"]
    assert ratio.from_json(1) == "1.0"
    with pytest.raises(InvalidConfig, match="expected a number"):
        ratio.from_json(False)


def test_a_list_key_takes_each_list_of_its_choices_and_nothing_else() -> None:
    policy = TOPIC_KEYS["cleanup.policy"]
    assert policy.json_schema()["enum"] == ["delete", "compact", "delete,compact", "compact,delete"]
    assert policy.from_json("compact,delete") == "compact,delete"
    for bad in ("compact, delete", "delete,delete", "", "none"):
        with pytest.raises(InvalidConfig, match=r"cleanup\.policy"):
            policy.from_json(bad)


def test_every_keys_schema_accepts_its_own_default() -> None:
    for key in [*BROKER_KEYS.values(), *TOPIC_KEYS.values()]:
        schema = key.json_schema()
        assert key.doc in str(schema["description"])
        assert key.from_json(_as_json(key, key.default)) is not None


def _as_json(key: ConfigKey, text: str) -> object:
    if key.kind in ("int", "long"):
        return int(text)
    if key.kind == "double":
        return float(text)
    if key.kind == "bool":
        return text == "true"
    return text
