"""ACLs in ZooKeeper (memory store and a real server): created, described, deleted as Kafka stores them."""

from __future__ import annotations

import json

import pytest

from lab.engine.acl import (
    AclBinding,
    AclEntry,
    AclFilter,
    Match,
    Operation,
    PatternType,
    Permission,
    ResourcePattern,
    ResourceType,
)
from lab.engine.acl_store import AclStore
from lab.engine.errors import InvalidRequest
from lab.engine.tasks import Task
from tests.engine.metadata.conftest import Harness

T, Op = ResourceType, Operation
ORDERS = ResourcePattern(T.TOPIC, "orders")
PREFIX = ResourcePattern(T.TOPIC, "ord", PatternType.PREFIXED)
BILLING = ResourcePattern(T.GROUP, "billing")


def entry(principal: str, operation: Operation, permission: Permission = Permission.ALLOW) -> AclEntry:
    return AclEntry(principal, "*", operation, permission)


READ = AclBinding(ORDERS, entry("User:alice", Op.READ))
WRITE = AclBinding(ORDERS, entry("User:bob", Op.WRITE))
DENY = AclBinding(PREFIX, entry("User:eve", Op.ALL, Permission.DENY))
GROUP = AclBinding(BILLING, entry("User:alice", Op.READ))


def test_created_acls_are_kafkas_znodes_with_a_change_node_each(harness: Harness) -> None:
    session = harness.open("admin").session
    store = AclStore(session)
    harness.run(store.create([READ, WRITE, DENY, GROUP]))
    data, _ = harness.wait(session.get("/kafka-acl/Topic/orders"))
    assert json.loads(data) == {
        "version": 1,
        "acls": [
            {"principal": "User:alice", "permissionType": "Allow", "operation": "Read", "host": "*"},
            {"principal": "User:bob", "permissionType": "Allow", "operation": "Write", "host": "*"},
        ],
    }
    data, _ = harness.wait(session.get("/kafka-acl-extended/prefixed/Topic/ord"))
    assert json.loads(data)["acls"] == [
        {"principal": "User:eve", "permissionType": "Deny", "operation": "All", "host": "*"}
    ]
    literal = harness.wait(session.get_children("/kafka-acl-changes"))
    extended = harness.wait(session.get_children("/kafka-acl-extended-changes"))
    assert len(literal) == 2  # one per resource written: Topic:orders and Group:billing
    assert all(name.startswith("acl_changes_") for name in literal + extended)
    assert len(extended) == 1
    assert harness.run(store.load()) == {READ, WRITE, DENY, GROUP}


def test_describe_filters_as_kafkas_acl_binding_filter(harness: Harness) -> None:
    store = AclStore(harness.open("admin").session)
    harness.run(store.create([READ, WRITE, DENY, GROUP]))
    # Everything, by resource type, pattern type, name and entry.
    assert harness.run(store.describe(AclFilter())) == [GROUP, READ, WRITE, DENY]
    assert harness.run(
        store.describe(AclFilter(resource_type=T.TOPIC, name="orders", pattern=PatternType.LITERAL))
    ) == [READ, WRITE]
    # MATCH: every pattern that applies to the topic "orders": the literal one and the prefix "ord".
    matched = harness.run(
        store.describe(AclFilter(resource_type=T.TOPIC, name="orders", pattern=Match.MATCH))
    )
    assert set(matched) == {READ, WRITE, DENY}
    assert harness.run(store.describe(AclFilter(principal="User:alice"))) == [GROUP, READ]


def test_delete_removes_what_each_filter_matches_and_the_znode_when_empty(harness: Harness) -> None:
    session = harness.open("admin").session
    store = AclStore(session)
    harness.run(store.create([READ, WRITE, GROUP]))
    removed = harness.run(store.delete([AclFilter(principal="User:bob"), AclFilter(resource_type=T.GROUP)]))
    assert removed == [[WRITE], [GROUP]]
    assert harness.run(store.load()) == {READ}
    assert harness.wait(session.get_children("/kafka-acl/Group")) == []
    assert harness.run(store.delete([AclFilter(principal="User:nobody")])) == [[]]


def test_an_acl_with_an_unsupported_operation_is_refused_and_nothing_is_written(harness: Harness) -> None:
    store = AclStore(harness.open("admin").session)
    bad = AclBinding(BILLING, entry("User:alice", Op.WRITE))  # a group takes Read, Describe, Delete
    with pytest.raises(InvalidRequest, match="Write is not a valid operation for resource type Group"):
        harness.run(store.create([READ, bad]))
    assert harness.run(store.load()) == frozenset()


def test_two_writers_on_one_resource_both_land(harness: Harness) -> None:
    one, two = AclStore(harness.open("one").session), AclStore(harness.open("two").session)
    first = Task.start(one.create([READ])).outcome
    second = Task.start(two.create([WRITE])).outcome
    harness.wait(first)
    harness.wait(second)
    assert harness.run(one.load()) == {READ, WRITE}
