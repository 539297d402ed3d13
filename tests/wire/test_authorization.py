"""A real client (kafka-python, unmodified, PLAINTEXT: User:ANONYMOUS) allowed and denied per operation
as Kafka would, row by row from Kafka's documented operation/resource matrix
(docs: "Operations and Resources on Protocols"): without the ACL the row names, the client hears
Kafka's error; with it (and nothing more), the operation succeeds ("ok": no *_AUTHORIZATION_FAILED
in the answer; an answer may still carry other errors, NOT_COORDINATOR say, which are not the
authorizer's). Each row runs on a lab of its own."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import KafkaError, for_code
from kafka.protocol import admin as admin_protocol
from kafka.protocol import commit, find_coordinator, group, init_producer_id, list_offsets, metadata

from lab.cluster import ServedCluster
from lab.engine.acl import AclBinding, AclFilter, parse_binding
from tests.processes import wait_until

ANONYMOUS = "User:ANONYMOUS"
AUTHORIZER = {
    "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
    "allow.everyone.if.no.acl.found": "false",
}
pytestmark = pytest.mark.kafka_lab(brokers=3, topics=["orders:2:3", "doomed:1:3"], config=AUTHORIZER)
Grant = tuple[str, str, str]  # (resource type, name, operation) for User:ANONYMOUS


def raised(error: BaseException) -> str:
    """Kafka's name of what a kafka-python call raised."""
    if isinstance(error, KafkaError):
        return str(error.message)
    return type(error).__name__


@dataclass(frozen=True)
class Row:
    name: str
    needs: tuple[Grant, ...]  # what Kafka's matrix says the operation needs (the row adds them)
    denied_with: str  # Kafka's error without them
    run: Callable[[str], str]  # bootstrap -> "ok" or Kafka's error name
    given: tuple[Grant, ...] = ()  # what the row's client has anyway (the other half of the operation)


# ---------------------------------------------------------------------------- the operations


def produce(bootstrap: str) -> str:
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks=1, max_block_ms=4_000, retries=0)
    try:
        producer.send("orders", b"v", partition=0).get(timeout=10)
        return "ok"
    except KafkaError as error:
        return raised(error)
    finally:
        producer.close(timeout=2)


def idempotent_produce(bootstrap: str) -> str:
    producer = KafkaProducer(bootstrap_servers=bootstrap, enable_idempotence=True, max_block_ms=4_000)
    try:
        producer.send("orders", b"v", partition=0).get(timeout=10)
        return "ok"
    except KafkaError as error:
        return raised(error)
    finally:
        producer.close(timeout=2)


def consume(bootstrap: str) -> str:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, request_timeout_ms=5_000)
    try:
        tp = TopicPartition("orders", 0)
        consumer.assign([tp])
        consumer.seek(tp, 0)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if consumer.poll(timeout_ms=300):
                return "ok"
        return "nothing fetched"
    except KafkaError as error:
        return raised(error)
    finally:
        consumer.close()


def errors_of(response: object) -> list[int]:
    """Every error code in a kafka-python response, wherever it sits."""
    found: list[int] = []

    def walk(item: object) -> None:
        if isinstance(item, dict):
            for key, value in item.items():
                if key.endswith("error_code") and isinstance(value, int):
                    found.append(value)
                else:
                    walk(value)
        elif isinstance(item, list | tuple):
            for value in item:
                walk(value)

    walk(response.to_object())  # type: ignore[attr-defined]
    return found


def asking(request: Callable[[], object]) -> Callable[[str], str]:
    """One request from kafka-python's own protocol classes, sent by its admin client's connection:
    the authorization error its answer carries, or "ok" (other errors are not the authorizer's)."""

    def run(bootstrap: str) -> str:
        admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10_000)
        try:
            names = [for_code(c).message for c in errors_of(admin.send_request(request())) if c]
        finally:
            admin.close()
        denied = [n for n in names if n.endswith("_AUTHORIZATION_FAILED")]
        return denied[0] if denied else "ok"

    return run


def acl_filter() -> object:
    return admin_protocol.DescribeAclsRequest[1](
        resource_type=1,
        resource_name=None,
        resource_pattern_type_filter=1,
        principal=None,
        host=None,
        operation=1,
        permission_type=1,
    )


ZED = [(2, "zed", 3, "User:zed", "*", 3, 3)]  # ALLOW User:zed READ on Topic:zed (literal)
ROWS = [
    # What a user sees: kafka-python's producer and consumer.
    Row("Produce", (("topic", "orders", "write"),), "TOPIC_AUTHORIZATION_FAILED", produce),
    Row(
        "InitProducerId (idempotent)",
        (("topic", "orders", "write"),),
        "TOPIC_AUTHORIZATION_FAILED",
        idempotent_produce,
    ),
    # DESCRIBE given, so the metadata answers and the Fetch itself is what is denied.
    Row(
        "Fetch",
        (("topic", "orders", "read"),),
        "TOPIC_AUTHORIZATION_FAILED",
        consume,
        given=(("topic", "orders", "describe"),),
    ),
    # Each API on its own, as kafka-python encodes it.
    Row(
        "Metadata",
        (("topic", "orders", "describe"),),
        "TOPIC_AUTHORIZATION_FAILED",
        asking(lambda: metadata.MetadataRequest[4](topics=["orders"], allow_auto_topic_creation=False)),
    ),
    Row(
        "Metadata (auto-create)",
        (("cluster", "kafka-cluster", "create"),),
        "TOPIC_AUTHORIZATION_FAILED",
        asking(lambda: metadata.MetadataRequest[4](topics=["brand-new"], allow_auto_topic_creation=True)),
        given=(("topic", "brand-new", "describe"),),
    ),
    Row(
        "ListOffsets",
        (("topic", "orders", "describe"),),
        "TOPIC_AUTHORIZATION_FAILED",
        asking(lambda: list_offsets.ListOffsetsRequest[1](replica_id=-1, topics=[("orders", [(0, -1)])])),
    ),
    Row(
        "FindCoordinator",
        (("group", "billing", "describe"),),
        "GROUP_AUTHORIZATION_FAILED",
        asking(
            lambda: find_coordinator.FindCoordinatorRequest[1](coordinator_key="billing", coordinator_type=0)
        ),
    ),
    Row(
        "JoinGroup",
        (("group", "billing", "read"),),
        "GROUP_AUTHORIZATION_FAILED",
        asking(
            lambda: group.JoinGroupRequest[2](
                group="billing",
                session_timeout=6_000,
                rebalance_timeout=6_000,
                member_id="",
                protocol_type="consumer",
                group_protocols=[("range", b"")],
            )
        ),
    ),
    Row(
        "OffsetFetch",
        (("group", "billing", "describe"),),
        "GROUP_AUTHORIZATION_FAILED",
        asking(lambda: commit.OffsetFetchRequest[1](consumer_group="billing", topics=[("orders", [0])])),
        given=(("topic", "orders", "describe"),),
    ),
    Row(
        "OffsetFetch (topic)",
        (("topic", "orders", "describe"),),
        "TOPIC_AUTHORIZATION_FAILED",
        asking(lambda: commit.OffsetFetchRequest[1](consumer_group="billing", topics=[("orders", [0])])),
        given=(("group", "billing", "describe"),),
    ),
    Row(
        "OffsetCommit",
        (("topic", "orders", "read"),),
        "TOPIC_AUTHORIZATION_FAILED",
        asking(
            lambda: commit.OffsetCommitRequest[2](
                consumer_group="billing",
                consumer_group_generation_id=-1,
                consumer_id="",
                retention_time=-1,
                topics=[("orders", [(0, 0, "")])],
            )
        ),
        given=(("group", "billing", "read"),),
    ),
    Row(
        "DescribeGroups",
        (("group", "billing", "describe"),),
        "GROUP_AUTHORIZATION_FAILED",
        asking(lambda: admin_protocol.DescribeGroupsRequest[0](groups=["billing"])),
    ),
    Row(
        "DeleteGroups",
        (("group", "billing", "delete"),),
        "GROUP_AUTHORIZATION_FAILED",
        asking(lambda: admin_protocol.DeleteGroupsRequest[0](groups_names=["billing"])),
    ),
    Row(
        "CreateTopics",
        (("topic", "fresh", "create"),),
        "TOPIC_AUTHORIZATION_FAILED",
        asking(
            lambda: admin_protocol.CreateTopicsRequest[2](
                create_topic_requests=[("fresh", 1, 1, [], [])], timeout=10_000, validate_only=True
            )
        ),
    ),
    Row(
        "DeleteTopics",
        (("topic", "doomed", "delete"),),
        "TOPIC_AUTHORIZATION_FAILED",
        asking(lambda: admin_protocol.DeleteTopicsRequest[1](topics=["doomed"], timeout=10_000)),
    ),
    Row(
        "CreatePartitions",
        (("topic", "orders", "alter"),),
        "TOPIC_AUTHORIZATION_FAILED",
        asking(
            lambda: admin_protocol.CreatePartitionsRequest[0](
                topic_partitions=[("orders", (3, None))], timeout=10_000, validate_only=True
            )
        ),
    ),
    Row(
        "DescribeConfigs",
        (("topic", "orders", "describe_configs"),),
        "TOPIC_AUTHORIZATION_FAILED",
        asking(
            lambda: admin_protocol.DescribeConfigsRequest[1](
                resources=[(2, "orders", None)], include_synonyms=False
            )
        ),
    ),
    Row(
        "DescribeConfigs (broker)",
        (("cluster", "kafka-cluster", "describe_configs"),),
        "CLUSTER_AUTHORIZATION_FAILED",
        asking(
            lambda: admin_protocol.DescribeConfigsRequest[1](
                resources=[(4, "1", None)], include_synonyms=False
            )
        ),
    ),
    Row(
        "AlterConfigs",
        (("topic", "orders", "alter_configs"),),
        "TOPIC_AUTHORIZATION_FAILED",
        asking(
            lambda: admin_protocol.AlterConfigsRequest[0](
                resources=[(2, "orders", [("retention.ms", "600000")])], validate_only=True
            )
        ),
    ),
    Row(
        "ElectLeaders",
        (("cluster", "kafka-cluster", "alter"),),
        "CLUSTER_AUTHORIZATION_FAILED",
        asking(
            lambda: admin_protocol.ElectLeadersRequest[0](
                election_type=0, topic_partitions=[("orders", [0])], timeout=10_000
            )
        ),
    ),
    Row(
        "DescribeAcls",
        (("cluster", "kafka-cluster", "describe"),),
        "CLUSTER_AUTHORIZATION_FAILED",
        asking(acl_filter),
    ),
    Row(
        "CreateAcls",
        (("cluster", "kafka-cluster", "alter"),),
        "CLUSTER_AUTHORIZATION_FAILED",
        asking(lambda: admin_protocol.CreateAclsRequest[1](creations=ZED)),
    ),
    Row(
        "InitProducerId (transactional)",
        (("transactional_id", "tx-1", "write"),),
        "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
        asking(
            lambda: init_producer_id.InitProducerIdRequest[0](
                transactional_id="tx-1", transaction_timeout_ms=60_000
            )
        ),
    ),
    Row(
        "InitProducerId (idempotent, cluster)",
        (("cluster", "kafka-cluster", "idempotent_write"),),
        "CLUSTER_AUTHORIZATION_FAILED",
        asking(
            lambda: init_producer_id.InitProducerIdRequest[0](
                transactional_id=None, transaction_timeout_ms=60_000
            )
        ),
    ),
]


def grants(grants: tuple[Grant, ...]) -> list[AclBinding]:
    return [parse_binding(resource_type=k, name=n, principal=ANONYMOUS, operation=o) for k, n, o in grants]


def hold(kafka_lab: ServedCluster, bindings: list[AclBinding]) -> None:
    """ANONYMOUS holds exactly ``bindings``, every broker knowing it."""
    handle = kafka_lab.cluster
    handle.delete_acls([AclFilter(principal=ANONYMOUS)])
    if bindings:
        handle.create_acls(bindings)
    held = handle.describe_acls()
    assert wait_until(lambda: handle.acls_taken_in(held), 10), "the brokers did not read the ACLs"


def seed(kafka_lab: ServedCluster) -> None:
    """A record in orders-0, written by the lab's own (super) user."""
    sent = kafka_lab.lab.submit(
        lambda lab: lab.cluster.producer().send("orders", b"first", partition=0)
    ).result(30)
    assert wait_until(lambda: kafka_lab.lab.submit(lambda lab: sent.done()).result(10), 30)


def denials(kafka_lab: ServedCluster) -> list[str]:
    return kafka_lab.lab.submit(
        lambda lab: [e.text for e in lab.cluster.journal if e.kind == "authorization_denied"]
    ).result(10)


@pytest.mark.parametrize("row", ROWS, ids=[r.name for r in ROWS])
def test_each_operation_needs_what_kafkas_matrix_says(kafka_lab: ServedCluster, row: Row) -> None:
    seed(kafka_lab)
    hold(kafka_lab, grants(row.given))
    assert row.run(kafka_lab.bootstrap_servers) == row.denied_with
    assert any(ANONYMOUS in text for text in denials(kafka_lab))  # and the timeline says why
    hold(kafka_lab, grants(row.given + row.needs))
    assert row.run(kafka_lab.bootstrap_servers) == "ok"
