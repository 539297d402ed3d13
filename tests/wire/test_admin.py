"""The admin API over the wire, in virtual time: topics, configs, elections, reassignments, log dirs,
the cluster and groups, with Kafka's errors."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kio.schema.errors import ErrorCode

from lab.engine.cluster import Cluster
from lab.engine.ids import TopicPartition
from tests.engine.helpers import checked_cluster
from tests.wire.harness import WireClient

CREATE_TOPICS, DELETE_TOPICS, CREATE_PARTITIONS = 19, 20, 37
DESCRIBE_CONFIGS, ALTER_CONFIGS, INCREMENTAL_ALTER = 32, 33, 44
ELECT_LEADERS, ALTER_REASSIGNMENTS, LIST_REASSIGNMENTS = 43, 45, 46
DESCRIBE_LOG_DIRS, DESCRIBE_CLUSTER = 35, 60
LIST_GROUPS, DESCRIBE_GROUPS, DELETE_GROUPS = 16, 15, 42
TOPIC, BROKER = 2, 4


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    with checked_cluster(3) as c:
        yield c


def controller(cluster: Cluster) -> WireClient:
    found = cluster.controller_id()
    assert found is not None
    return WireClient(cluster, found)


def not_controller(cluster: Cluster) -> WireClient:
    return WireClient(cluster, next(b for b in cluster.broker_ids if b != cluster.controller_id()))


def new_topic(name: str, partitions: int = 3, rf: int = 3, **config: str) -> dict:
    return {
        "name": name,
        "num_partitions": partitions,
        "replication_factor": rf,
        "assignments": [],
        "configs": [{"name": k.replace("_", "."), "value": v} for k, v in config.items()],
    }


def configured(cluster: Cluster, topic: str, expected: dict[str, str]) -> bool:
    """The brokers apply a config change when ZooKeeper's change notification reaches them, as in Kafka."""
    return cluster.run_until_true(lambda: cluster.topic_config(topic) == expected, 5_000)


def create(client: WireClient, *topics: dict, validate_only: bool = False) -> dict:
    answer = client.ask(
        CREATE_TOPICS, 7, {"topics": list(topics), "timeout": 10_000, "validate_only": validate_only}
    )
    return {t.name: t for t in answer.topics}


def test_create_topics_makes_the_topic_with_its_leaders_and_says_its_configs(cluster: Cluster) -> None:
    result = create(controller(cluster), new_topic("orders", min_insync_replicas="2"))["orders"]
    assert result.error_code == ErrorCode.none
    assert (result.num_partitions, result.replication_factor) == (3, 3)
    assert result.topic_id is not None
    configs = {c.name: (c.value, c.config_source) for c in result.configs}
    assert configs["min.insync.replicas"] == ("2", 1)  # a dynamic topic config
    assert cluster.partition_count("orders") == 3
    assert all(cluster.leader_of("orders", p) is not None for p in range(3))
    assert cluster.topic_config("orders") == {"min.insync.replicas": "2"}


def test_create_topics_answers_each_topic_with_kafkas_error(cluster: Cluster) -> None:
    client = controller(cluster)
    create(client, new_topic("a.b", 1, 1))
    results = create(
        client,
        new_topic("a.b", 1, 1),
        new_topic("a_b", 1, 1),
        new_topic("wide", 1, 4),
        new_topic("none", 0, 1),
        new_topic("bad config", 1, 1),
        new_topic("cfg", 1, 1, retention_ms="soon"),
        new_topic("__consumer_offsets", 1, 1),
    )
    errors = {name: r.error_code for name, r in results.items()}
    assert errors == {
        "a.b": ErrorCode.topic_already_exists,
        "a_b": ErrorCode.invalid_topic_exception,
        "wide": ErrorCode.invalid_replication_factor,
        "none": ErrorCode.invalid_partitions,
        "bad config": ErrorCode.invalid_topic_exception,
        "cfg": ErrorCode.invalid_config,
        "__consumer_offsets": ErrorCode.invalid_topic_exception,
    }
    assert "collides with existing topics: a.b" in (results["a_b"].error_message or "")
    assert sorted(t for t in cluster.topics() if not t.startswith("__")) == ["a.b"]


def test_defaults_and_validate_only(cluster: Cluster) -> None:
    client = controller(cluster)
    checked = create(client, new_topic("later", -1, -1), validate_only=True)["later"]
    assert (checked.error_code, checked.num_partitions, checked.replication_factor) == (ErrorCode.none, 1, 1)
    assert "later" not in cluster.topics()  # validate_only: nothing written
    assert create(client, new_topic("now", -1, -1))["now"].error_code == ErrorCode.none
    assert cluster.partition_count("now") == 1  # num.partitions; default.replication.factor 1


def test_only_the_controller_creates_and_the_others_say_not_controller(cluster: Cluster) -> None:
    result = create(not_controller(cluster), new_topic("orders"))["orders"]
    assert result.error_code == ErrorCode.not_controller
    assert "orders" not in cluster.topics()


def test_create_partitions_and_delete_topics(cluster: Cluster) -> None:
    client = controller(cluster)
    create(client, new_topic("orders", 2, 2))
    grown = client.ask(
        CREATE_PARTITIONS,
        3,
        {
            "topics": [
                {"name": "orders", "count": 4, "assignments": None},
                {"name": "orders2", "count": 4, "assignments": None},
            ],
            "timeout": 10_000,
            "validate_only": False,
        },
    )
    results = {r.name: r.error_code for r in grown.results}
    assert results == {"orders": ErrorCode.none, "orders2": ErrorCode.unknown_topic_or_partition}
    assert cluster.partition_count("orders") == 4
    shrink = client.ask(
        CREATE_PARTITIONS,
        3,
        {
            "topics": [{"name": "orders", "count": 2, "assignments": None}],
            "timeout": 10_000,
            "validate_only": False,
        },
    )
    assert shrink.results[0].error_code == ErrorCode.invalid_partitions
    gone = client.ask(DELETE_TOPICS, 5, {"topic_names": ["orders", "nope"], "timeout": 30_000})
    assert {r.name: r.error_code for r in gone.responses} == {
        "orders": ErrorCode.none,
        "nope": ErrorCode.unknown_topic_or_partition,
    }
    assert "orders" not in cluster.topics()


def test_describe_and_alter_topic_configs(cluster: Cluster) -> None:
    client = controller(cluster)
    create(client, new_topic("orders", 1, 3, retention_ms="60000"))
    described = client.ask(
        DESCRIBE_CONFIGS,
        4,
        {
            "resources": [
                {"resource_type": TOPIC, "resource_name": "orders", "configuration_keys": None},
                {"resource_type": TOPIC, "resource_name": "nope", "configuration_keys": None},
            ],
            "include_synonyms": False,
            "include_documentation": True,
        },
    )
    orders, nope = described.results
    assert nope.error_code == ErrorCode.unknown_topic_or_partition
    values = {c.name: (c.value, c.config_source) for c in orders.configs}
    assert values["retention.ms"] == ("60000", 1)
    assert values["cleanup.policy"] == ("delete", 5)  # Kafka's default
    assert all(c.documentation for c in orders.configs)
    # Incremental: set one, delete another, append to a list.
    changed = client.ask(
        INCREMENTAL_ALTER,
        1,
        {
            "resources": [
                {
                    "resource_type": TOPIC,
                    "resource_name": "orders",
                    "configs": [
                        {"name": "min.insync.replicas", "config_operation": 0, "value": "2"},
                        {"name": "retention.ms", "config_operation": 1, "value": None},
                        {"name": "cleanup.policy", "config_operation": 2, "value": "compact"},
                    ],
                }
            ],
            "validate_only": False,
        },
    )
    assert changed.responses[0].error_code == ErrorCode.none
    assert configured(cluster, "orders", {"min.insync.replicas": "2", "cleanup.policy": "delete,compact"})
    # A bad value changes nothing.
    bad = client.ask(
        INCREMENTAL_ALTER,
        1,
        {
            "resources": [
                {
                    "resource_type": TOPIC,
                    "resource_name": "orders",
                    "configs": [{"name": "min.insync.replicas", "config_operation": 0, "value": "zero"}],
                }
            ],
            "validate_only": False,
        },
    )
    assert bad.responses[0].error_code == ErrorCode.invalid_config
    assert cluster.topic_config("orders")["min.insync.replicas"] == "2"
    # AlterConfigs replaces every override.
    client.ask(
        ALTER_CONFIGS,
        2,
        {
            "resources": [
                {
                    "resource_type": TOPIC,
                    "resource_name": "orders",
                    "configs": [{"name": "retention.ms", "value": "1000"}],
                }
            ],
            "validate_only": False,
        },
    )
    assert configured(cluster, "orders", {"retention.ms": "1000"})
    # Broker configs are read-only: the lab sets them when it makes the lab.
    broker = client.ask(
        INCREMENTAL_ALTER,
        1,
        {
            "resources": [
                {
                    "resource_type": BROKER,
                    "resource_name": "1",
                    "configs": [{"name": "min.insync.replicas", "config_operation": 0, "value": "2"}],
                }
            ],
            "validate_only": False,
        },
    )
    assert broker.responses[0].error_code == ErrorCode.invalid_request


def test_a_broker_describes_its_own_configs(cluster: Cluster) -> None:
    client = WireClient(cluster, 2)
    described = client.ask(
        DESCRIBE_CONFIGS,
        4,
        {
            "resources": [
                {
                    "resource_type": BROKER,
                    "resource_name": "2",
                    "configuration_keys": ["zookeeper.session.timeout.ms"],
                },
            ],
            "include_synonyms": False,
            "include_documentation": False,
        },
    )
    [config] = described.results[0].configs
    assert (config.name, config.value, config.read_only, config.config_source) == (
        "zookeeper.session.timeout.ms",
        "6000",
        True,
        4,  # the lab's 6000, not Kafka's 18000: a static config
    )


def describe_broker(cluster: Cluster, broker: int, keys: list[str] | None = None) -> dict[str, object]:
    described = WireClient(cluster, broker).ask(
        DESCRIBE_CONFIGS,
        4,
        {
            "resources": [
                {"resource_type": BROKER, "resource_name": str(broker), "configuration_keys": keys}
            ],
            "include_synonyms": False,
            "include_documentation": False,
        },
    )
    return {c.name: c for c in described.results[0].configs}


def test_a_broker_describes_its_listeners_and_security_as_kafka_does(cluster: Cluster) -> None:
    # What the runtime sets when it opens a lab's sockets (LiveLab: Listeners.server_properties).
    cluster.ctx.listener_config[2] = {
        "listeners": "PLAINTEXT://127.0.0.1:19093,SASL_SSL://127.0.0.1:19096",
        "advertised.listeners": "PLAINTEXT://10.0.0.5:19093,SASL_SSL://10.0.0.5:19096",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "ssl.keystore.type": "PEM",
    }
    configs = describe_broker(cluster, 2)

    def seen(name: str) -> tuple[object, ...]:
        c = configs[name]
        return (c.value, c.config_source, c.is_sensitive, c.read_only, c.config_type)  # type: ignore[attr-defined]

    STRING, LIST, CLASS_OR_STRING, PASSWORD, UNKNOWN = 2, 7, 2, 9, 0
    assert seen("listeners") == (
        "PLAINTEXT://127.0.0.1:19093,SASL_SSL://127.0.0.1:19096",
        4,
        False,
        True,
        STRING,
    )
    assert seen("advertised.listeners")[0] == "PLAINTEXT://10.0.0.5:19093,SASL_SSL://10.0.0.5:19096"
    assert seen("listener.security.protocol.map")[:2] == ("PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL", 4)
    assert seen("sasl.enabled.mechanisms") == ("PLAIN,SCRAM-SHA-256,SCRAM-SHA-512", 4, False, True, LIST)
    # Kafka's default where the lab sets nothing; a password never has a value.
    assert seen("authorizer.class.name") == ("", 5, False, True, CLASS_OR_STRING)
    assert seen("ssl.key.password") == (None, 5, True, True, PASSWORD)
    assert seen("sasl.jaas.config")[:3] == (None, 5, True)
    # An authorizer's own keys are no KafkaConfig's: listed only when set, sensitive, of unknown type.
    assert seen("super.users") == (None, 4, True, True, UNKNOWN)
    assert "allow.everyone.if.no.acl.found" not in configs  # Kafka's default, so not set


def test_without_listeners_a_broker_describes_the_address_it_registers(cluster: Cluster) -> None:
    configs = describe_broker(cluster, 1, ["listeners", "advertised.listeners", "sasl.enabled.mechanisms"])
    host, port = cluster.brokers[1].advertised
    assert configs["listeners"].value == f"PLAINTEXT://{host}:{port}"  # type: ignore[attr-defined]
    assert configs["sasl.enabled.mechanisms"].value == "GSSAPI"  # type: ignore[attr-defined]
    assert configs["sasl.enabled.mechanisms"].config_source == 5  # type: ignore[attr-defined]


def test_preferred_leader_election(cluster: Cluster) -> None:
    client = controller(cluster)
    create(client, new_topic("orders", 1, 3))
    preferred = cluster.partition_state("orders", 0)["replicas"][0]
    cluster.kill_broker(preferred)
    cluster.run_until_true(lambda: cluster.leader_of("orders", 0) not in (None, preferred), 60_000)
    cluster.restart_broker(preferred)
    # The controller learns of the ISR change through /isr_change_notification, a moment after the leader.
    tp = TopicPartition("orders", 0)

    def controller_sees_it_in_sync() -> bool:
        ctx = cluster.ctx.controller_context
        return ctx is not None and tp in ctx.states and preferred in ctx.states[tp].isr

    assert cluster.run_until_true(controller_sees_it_in_sync, 60_000)
    client = controller(cluster)
    asked = {
        "election_type": 0,
        "topic_partitions": [{"topic": "orders", "partitions": [0, 7]}],
        "timeout": 30_000,
    }
    answer = client.ask(ELECT_LEADERS, 2, asked)
    results = {
        r.partition_id: r.error_code for t in answer.replica_election_results for r in t.partition_result
    }
    assert results == {0: ErrorCode.none, 7: ErrorCode.unknown_topic_or_partition}
    assert cluster.leader_of("orders", 0) == preferred
    again = client.ask(ELECT_LEADERS, 2, asked)
    assert again.replica_election_results[0].partition_result[0].error_code == ErrorCode.election_not_needed


def test_reassignment_is_listed_while_it_runs_and_done_after(cluster: Cluster) -> None:
    client = controller(cluster)
    create(client, new_topic("orders", 1, 2))
    current = cluster.partition_state("orders", 0)["replicas"]
    target = [b for b in cluster.broker_ids if b not in current][:1] + current[:1]
    # A paused new replica cannot catch up, so the move is still under way when the client asks.
    cluster.pause_broker(target[0])
    answer = client.ask(
        ALTER_REASSIGNMENTS,
        0,
        {
            "timeout": 30_000,
            "topics": [{"name": "orders", "partitions": [{"partition_index": 0, "replicas": target}]}],
        },
    )
    assert answer.responses[0].partitions[0].error_code == ErrorCode.none
    ongoing = client.ask(LIST_REASSIGNMENTS, 0, {"timeout": 30_000, "topics": None}).topics[0].partitions[0]
    assert target[0] in ongoing.adding_replicas
    cluster.resume_broker(target[0])
    assert cluster.run_until_true(lambda: not cluster.reassignments(), 60_000)
    assert sorted(cluster.partition_state("orders", 0)["replicas"]) == sorted(target)
    assert client.ask(LIST_REASSIGNMENTS, 0, {"timeout": 30_000, "topics": None}).topics == ()
    cancel = client.ask(
        ALTER_REASSIGNMENTS,
        0,
        {
            "timeout": 30_000,
            "topics": [{"name": "orders", "partitions": [{"partition_index": 0, "replicas": None}]}],
        },
    )
    assert cancel.responses[0].partitions[0].error_code == ErrorCode.no_reassignment_in_progress


def test_describe_log_dirs_and_the_cluster(cluster: Cluster) -> None:
    client = controller(cluster)
    create(client, new_topic("orders", 2, 3))
    dirs = WireClient(cluster, 1).ask(DESCRIBE_LOG_DIRS, 4, {"topics": None})
    [result] = dirs.results
    assert result.log_dir.endswith("broker-1")
    assert {t.name for t in result.topics} >= {"orders"}
    described = WireClient(cluster, 2).ask(
        DESCRIBE_CLUSTER, 1, {"include_cluster_authorized_operations": False, "endpoint_type": 1}
    )
    assert described.cluster_id == cluster.cluster_id
    assert described.controller_id == cluster.controller_id()
    assert sorted(b.broker_id for b in described.brokers) == [1, 2, 3]


def test_describe_log_dirs_v0_is_served_as_kafka_3_serves_it(cluster: Cluster) -> None:
    # kafka-python's admin client knows v0 only. Kafka's schema: "Version 1 is the same as
    # version 0"; kio, made from Kafka 4's schemas where v0 is gone, reads and writes it as v1.
    from kio.index import load_request_schema

    from lab.wire.codec import Header, encode_request
    from lab.wire.shape import make

    client = controller(cluster)
    create(client, new_topic("orders", 2, 3))
    asking = WireClient(cluster, 1)
    body = make(load_request_schema(DESCRIBE_LOG_DIRS, 1), {"topics": None})
    asking.send_raw(
        encode_request(
            Header(api_key=DESCRIBE_LOG_DIRS, api_version=0, correlation_id=9, client_id="kp"), body
        )
    )
    dirs = asking.answer(DESCRIBE_LOG_DIRS, 1)
    assert asking.last_correlation == 9
    [result] = dirs.results
    assert {t.name for t in result.topics} >= {"orders"}


def test_groups_are_listed_described_and_deleted_when_empty(cluster: Cluster) -> None:
    cluster.create_topic("orders", partitions=2, replication_factor=3)
    member = cluster.consumer("billing")
    member.subscribe(["orders"])
    cluster.run_until_true(lambda: bool(member.assignment()), 30_000)
    member.commit()
    cluster.run_for(500)
    coordinator = cluster.groups()["billing"]["coordinator"]
    client = WireClient(cluster, coordinator)
    listed = client.ask(LIST_GROUPS, 4, {"states_filter": []})
    assert [(g.group_id, g.protocol_type, g.group_state) for g in listed.groups] == [
        ("billing", "consumer", "Stable")
    ]
    described = client.ask(
        DESCRIBE_GROUPS, 5, {"groups": ["billing", "ghost"], "include_authorized_operations": False}
    )
    billing, ghost = described.groups
    assert (billing.group_state, billing.protocol_data) == ("Stable", "range")
    assert billing.members[0].member_assignment  # Kafka's assignment bytes, as any client reads them
    assert ghost.group_state == "Dead"
    refused = client.ask(DELETE_GROUPS, 2, {"groups_names": ["billing"]})
    assert refused.results[0].error_code == ErrorCode.non_empty_group
    member.close()
    cluster.run_for(1_000)
    deleted = client.ask(DELETE_GROUPS, 2, {"groups_names": ["billing", "ghost"]})
    assert {r.group_id: r.error_code for r in deleted.results} == {
        "billing": ErrorCode.none,
        "ghost": ErrorCode.group_id_not_found,
    }
    assert "billing" not in cluster.groups()
