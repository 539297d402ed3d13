"""CreateAcls, DescribeAcls and DeleteAcls over the wire, in virtual time, and with real admin clients."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kio.schema.errors import ErrorCode

from lab.cluster import ServedCluster
from lab.engine.cluster import Cluster
from tests.engine.helpers import checked_cluster
from tests.wire.harness import WireClient

DESCRIBE_ACLS, CREATE_ACLS, DELETE_ACLS = 29, 30, 31
ANY, MATCH, LITERAL, PREFIXED = 1, 2, 3, 4
TOPIC, GROUP = 2, 3
READ, WRITE, ALL = 3, 4, 2
DENY, ALLOW = 2, 3
# A PLAINTEXT client is User:ANONYMOUS, and managing ACLs takes ALTER on the cluster: as Kafka's docs
# advise for such a setup, the anonymous principal is made a super user here.
AUTHORIZER = {
    "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
    "super.users": "User:admin;User:broker;User:ANONYMOUS",
}


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    with checked_cluster(3, config=AUTHORIZER) as c:
        yield c


def creation(resource_type: int, name: str, principal: str, operation: int, **kw: int) -> dict:
    return {
        "resource_type": resource_type,
        "resource_name": name,
        "resource_pattern_type": kw.get("pattern", LITERAL),
        "principal": principal,
        "host": "*",
        "operation": operation,
        "permission_type": kw.get("permission", ALLOW),
    }


def everything(**kw: object) -> dict:
    wanted: dict[str, object] = {
        "resource_type_filter": ANY,
        "resource_name_filter": None,
        "pattern_type_filter": ANY,
        "principal_filter": None,
        "host_filter": None,
        "operation": ANY,
        "permission_type": ANY,
    }
    wanted.update(kw)
    return wanted


def test_acls_are_created_described_and_deleted_on_any_broker(cluster: Cluster) -> None:
    created = WireClient(cluster, 2).ask(
        CREATE_ACLS,
        3,
        {
            "creations": [
                creation(TOPIC, "orders", "User:alice", READ),
                creation(TOPIC, "ord", "User:eve", ALL, pattern=PREFIXED, permission=DENY),
                creation(GROUP, "billing", "User:alice", WRITE),  # a group takes no Write: refused alone
            ]
        },
    )
    codes = [r.error_code for r in created.results]
    assert codes == [ErrorCode.none, ErrorCode.none, ErrorCode.invalid_request]
    assert "Write is not a valid operation for resource type Group" in (
        created.results[2].error_message or ""
    )
    # Another broker reads them from ZooKeeper: MATCH finds the literal ACL and the prefix for "orders".
    described = WireClient(cluster, 3).ask(
        DESCRIBE_ACLS,
        3,
        everything(resource_type_filter=TOPIC, resource_name_filter="orders", pattern_type_filter=MATCH),
    )
    assert described.error_code == ErrorCode.none
    found = {
        (r.resource_name, r.pattern_type, a.principal, a.operation, a.permission_type)
        for r in described.resources
        for a in r.acls
    }
    assert found == {("orders", LITERAL, "User:alice", READ, ALLOW), ("ord", PREFIXED, "User:eve", ALL, DENY)}
    deleted = WireClient(cluster, 1).ask(
        DELETE_ACLS, 3, {"filters": [everything(principal_filter="User:eve")]}
    )
    [result] = deleted.filter_results
    assert result.error_code == ErrorCode.none
    assert [(m.resource_name, m.principal) for m in result.matching_acls] == [("ord", "User:eve")]
    left = WireClient(cluster, 2).ask(DESCRIBE_ACLS, 3, everything())
    assert [(r.resource_name, [a.principal for a in r.acls]) for r in left.resources] == [
        ("orders", ["User:alice"])
    ]


def test_a_code_that_names_nothing_fails_that_acl_with_invalid_request(cluster: Cluster) -> None:
    answer = WireClient(cluster, 1).ask(
        CREATE_ACLS,
        3,
        {"creations": [creation(TOPIC, "orders", "User:alice", 99), creation(TOPIC, "t", "User:a", ANY)]},
    )
    assert [r.error_code for r in answer.results] == [ErrorCode.invalid_request, ErrorCode.invalid_request]
    assert WireClient(cluster, 1).ask(DESCRIBE_ACLS, 3, everything()).resources == ()


def test_without_an_authorizer_acl_requests_answer_security_disabled() -> None:
    with checked_cluster(3) as cluster:
        client = WireClient(cluster, 1)
        created = client.ask(CREATE_ACLS, 3, {"creations": [creation(TOPIC, "orders", "User:alice", READ)]})
        assert [r.error_code for r in created.results] == [ErrorCode.security_disabled]
        assert "no authorizer" in (created.results[0].error_message or "")
        assert client.ask(DESCRIBE_ACLS, 3, everything()).error_code == ErrorCode.security_disabled
        deleted = client.ask(DELETE_ACLS, 3, {"filters": [everything()]})
        assert [r.error_code for r in deleted.filter_results] == [ErrorCode.security_disabled]


@pytest.mark.kafka_lab(brokers=3, config=AUTHORIZER)
def test_kafka_python_and_confluent_kafka_admin_clients_manage_acls(kafka_lab: ServedCluster) -> None:
    from confluent_kafka.admin import AclBinding as CAclBinding
    from confluent_kafka.admin import AclBindingFilter, AclOperation, AclPermissionType, AdminClient
    from confluent_kafka.admin import ResourcePatternType as CPattern
    from confluent_kafka.admin import ResourceType as CResource
    from kafka.admin import (
        ACL,
        ACLFilter,
        ACLOperation,
        ACLPermissionType,
        ACLResourcePatternType,
        KafkaAdminClient,
        ResourcePattern,
        ResourcePatternFilter,
        ResourceType,
    )

    admin = KafkaAdminClient(bootstrap_servers=kafka_lab.bootstrap_servers, request_timeout_ms=30_000)
    try:
        alice_reads = ACL(
            principal="User:alice",
            host="*",
            operation=ACLOperation.READ,
            permission_type=ACLPermissionType.ALLOW,
            resource_pattern=ResourcePattern(ResourceType.TOPIC, "orders"),
        )
        made = admin.create_acls([alice_reads])
        assert made["failed"] == []
        assert len(made["succeeded"]) == 1
        confluent = AdminClient({"bootstrap.servers": kafka_lab.bootstrap_servers})
        bob_writes = CAclBinding(
            CResource.TOPIC,
            "orders",
            CPattern.LITERAL,
            "User:bob",
            "*",
            AclOperation.WRITE,
            AclPermissionType.ALLOW,
        )
        for future in confluent.create_acls([bob_writes]).values():
            assert future.result(30) is None
        every = AclBindingFilter(
            CResource.ANY, None, CPattern.ANY, None, None, AclOperation.ANY, AclPermissionType.ANY
        )
        seen = confluent.describe_acls(every).result(30)
        assert sorted((b.principal, b.operation.name) for b in seen) == [
            ("User:alice", "READ"),
            ("User:bob", "WRITE"),
        ]
        bobs = ACLFilter(
            principal="User:bob",
            host=None,
            operation=ACLOperation.ANY,
            permission_type=ACLPermissionType.ANY,
            resource_pattern=ResourcePatternFilter(ResourceType.ANY, None, ACLResourcePatternType.ANY),
        )
        [(_, deleted, error)] = admin.delete_acls([bobs])
        assert error is None or error.errno == 0
        assert [(acl.principal, acl.operation) for acl, _ in deleted] == [("User:bob", ACLOperation.WRITE)]
        left, error = admin.describe_acls(
            ACLFilter(
                principal=None,
                host=None,
                operation=ACLOperation.ANY,
                permission_type=ACLPermissionType.ANY,
                resource_pattern=ResourcePatternFilter(
                    ResourceType.TOPIC, "orders", ACLResourcePatternType.MATCH
                ),
            )
        )
        assert [(a.principal, a.operation) for a in left] == [("User:alice", ACLOperation.READ)]
    finally:
        admin.close()
    # What they wrote is Kafka's znode, in the lab's ZooKeeper.
    tree = kafka_lab.lab.submit(lambda lab: lab.cluster.zookeeper_tree("/kafka-acl")).result(30)
    [orders] = [n for n in tree if n["path"] == "/kafka-acl/Topic/orders"]
    assert '"principal":"User:alice"' in orders["data"]
