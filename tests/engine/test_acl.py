"""AclAuthorizer's decisions, Kafka's operation/resource matrix, and the ACL znodes' formats."""

from __future__ import annotations

import json

import pytest

from lab.engine.acl import (
    ACL_CHANGES,
    EXTENDED_CHANGES,
    AclBinding,
    AclEntry,
    Authorizer,
    Operation,
    PatternType,
    Permission,
    ResourcePattern,
    ResourceType,
    change_node,
    check_binding,
    decode_acls,
    encode_acls,
    named,
    resource_of_change,
    resource_path,
)
from lab.engine.errors import InvalidRequest

Op, T = Operation, ResourceType
ALICE = "User:alice"

# Kafka's documentation, "Operations and Resources on Protocols" / AclEntry: which operations each
# resource type takes (All aside).
MATRIX = {
    T.TOPIC: {"Read", "Write", "Create", "Delete", "Alter", "Describe", "DescribeConfigs", "AlterConfigs"},
    T.GROUP: {"Read", "Describe", "Delete"},
    T.CLUSTER: {
        "Create",
        "ClusterAction",
        "DescribeConfigs",
        "AlterConfigs",
        "IdempotentWrite",
        "Alter",
        "Describe",
    },
    T.TRANSACTIONAL_ID: {"Describe", "Write"},
    T.DELEGATION_TOKEN: {"Describe"},
}
NAMES = {T.TOPIC: "orders", T.GROUP: "billing", T.CLUSTER: "kafka-cluster", T.TRANSACTIONAL_ID: "tx-1"}


def allow(
    resource: ResourcePattern, operation: Operation, principal: str = ALICE, host: str = "*"
) -> AclBinding:
    return AclBinding(resource, AclEntry(principal, host, operation, Permission.ALLOW))


def deny(
    resource: ResourcePattern, operation: Operation, principal: str = ALICE, host: str = "*"
) -> AclBinding:
    return AclBinding(resource, AclEntry(principal, host, operation, Permission.DENY))


@pytest.mark.parametrize("resource", list(MATRIX))
@pytest.mark.parametrize("operation", [o for o in Operation if o is not Op.ALL])
def test_an_acl_is_stored_only_for_an_operation_its_resource_type_takes(
    resource: ResourceType, operation: Operation
) -> None:
    binding = allow(ResourcePattern(resource, NAMES.get(resource, "t")), operation)
    if operation.value in MATRIX[resource]:
        assert check_binding(binding) is binding
    else:
        with pytest.raises(
            InvalidRequest, match=f"{operation.value} is not a valid operation for resource type"
        ):
            check_binding(binding)


GRANTS = [
    (resource, NAMES[resource], Operation(op))
    for resource in (T.TOPIC, T.GROUP, T.TRANSACTIONAL_ID, T.CLUSTER)
    for op in sorted(MATRIX[resource])
]


@pytest.mark.parametrize(("resource", "name", "granted"), GRANTS)
def test_a_client_with_one_allow_may_do_that_and_what_it_implies_and_nothing_else(
    resource: ResourceType, name: str, granted: Operation
) -> None:
    authorizer = Authorizer([allow(ResourcePattern(resource, name), granted)])
    implied = {
        Op.READ: {"Describe"},
        Op.WRITE: {"Describe"},
        Op.DELETE: {"Describe"},
        Op.ALTER: {"Describe"},
        Op.ALTER_CONFIGS: {"DescribeConfigs"},
    }.get(granted, set())
    for asked in MATRIX[resource]:
        decision = authorizer.authorize(ALICE, "10.0.0.5", Operation(asked), resource, name)
        assert decision.allowed == (asked == granted.value or asked in implied), (
            granted,
            asked,
            decision.reason,
        )
    assert not authorizer.authorize("User:bob", "10.0.0.5", granted, resource, name).allowed


def test_no_acl_on_a_resource_follows_allow_everyone_if_no_acl_found_and_says_so() -> None:
    closed = Authorizer([allow(ResourcePattern(T.TOPIC, "other"), Op.READ)])
    decision = closed.authorize(ALICE, "h", Op.WRITE, T.TOPIC, "orders")
    assert not decision.allowed
    assert decision.reason == "no ACL on Topic:orders; allow.everyone.if.no.acl.found=false"
    assert (
        Authorizer(allow_everyone_if_no_acl_found=True)
        .authorize(ALICE, "h", Op.WRITE, T.TOPIC, "orders")
        .allowed
    )
    # Once any ACL exists on the resource, the flag no longer opens it.
    guarded = Authorizer(
        [allow(ResourcePattern(T.TOPIC, "orders"), Op.READ, "User:bob")], allow_everyone_if_no_acl_found=True
    )
    decision = guarded.authorize(ALICE, "h", Op.WRITE, T.TOPIC, "orders")
    assert not decision.allowed
    assert decision.reason.startswith(
        "no ALLOW ACL for User:alice WRITE on Topic:orders; allow.everyone.if.no.acl.found=true"
    )


def test_deny_wins_over_allow_and_all_stands_for_every_operation() -> None:
    orders = ResourcePattern(T.TOPIC, "orders")
    authorizer = Authorizer([allow(orders, Op.ALL), deny(orders, Op.WRITE)])
    assert authorizer.authorize(ALICE, "h", Op.READ, T.TOPIC, "orders").allowed
    decision = authorizer.authorize(ALICE, "h", Op.WRITE, T.TOPIC, "orders")
    assert not decision.allowed
    assert "a DENY wins over any ALLOW" in decision.reason
    everything = Authorizer([allow(orders, Op.READ), deny(orders, Op.ALL, "User:*")])
    assert not everything.authorize(ALICE, "h", Op.READ, T.TOPIC, "orders").allowed


def test_wildcards_prefixes_and_hosts_match_as_kafkas_do() -> None:
    authorizer = Authorizer(
        [
            allow(ResourcePattern(T.TOPIC, "*"), Op.READ, "User:*"),
            allow(ResourcePattern(T.TOPIC, "orders-", PatternType.PREFIXED), Op.WRITE),
            allow(ResourcePattern(T.GROUP, "billing"), Op.READ, host="10.0.0.5"),
        ]
    )
    assert authorizer.authorize("User:bob", "any", Op.READ, T.TOPIC, "anything").allowed
    assert authorizer.authorize(ALICE, "h", Op.WRITE, T.TOPIC, "orders-eu").allowed
    assert not authorizer.authorize(
        ALICE, "h", Op.WRITE, T.TOPIC, "orders"
    ).allowed  # "orders" lacks the dash
    assert authorizer.authorize(ALICE, "10.0.0.5", Op.READ, T.GROUP, "billing").allowed
    assert not authorizer.authorize(ALICE, "10.0.0.6", Op.READ, T.GROUP, "billing").allowed


def test_a_super_user_may_do_anything_even_against_a_deny() -> None:
    orders = ResourcePattern(T.TOPIC, "orders")
    authorizer = Authorizer([deny(orders, Op.ALL, "User:admin")], super_users={"User:admin"})
    decision = authorizer.authorize("User:admin", "h", Op.DELETE, T.TOPIC, "orders")
    assert decision.allowed
    assert "super user" in decision.reason


@pytest.mark.parametrize(
    ("binding", "message"),
    [
        (
            allow(ResourcePattern(T.CLUSTER, "mine"), Op.ALTER),
            "the Cluster resource is named 'kafka-cluster'",
        ),
        (allow(ResourcePattern(T.TOPIC, "*", PatternType.PREFIXED), Op.READ), "cannot be the wildcard"),
        (allow(ResourcePattern(T.TOPIC, "orders"), Op.READ, principal="alice"), "written Type:name"),
        (allow(ResourcePattern(T.TOPIC, ""), Op.READ), "cannot be empty"),
    ],
)
def test_a_bad_acl_is_refused_with_invalid_request(binding: AclBinding, message: str) -> None:
    with pytest.raises(InvalidRequest, match=message):
        check_binding(binding)


def test_names_are_read_in_any_case_and_an_unknown_one_is_refused() -> None:
    assert named(Operation, "describe_configs") is Op.DESCRIBE_CONFIGS
    assert named(Operation, "IdempotentWrite") is Op.IDEMPOTENT_WRITE
    assert named(ResourceType, "TRANSACTIONAL_ID") is T.TRANSACTIONAL_ID
    with pytest.raises(InvalidRequest, match="'Frobnicate' is not an operation; one of: All, Read"):
        named(Operation, "Frobnicate")


def test_znodes_are_kafkas_paths_and_json() -> None:
    literal = ResourcePattern(T.TOPIC, "orders")
    prefixed = ResourcePattern(T.GROUP, "team-", PatternType.PREFIXED)
    assert resource_path(literal) == "/kafka-acl/Topic/orders"
    assert resource_path(prefixed) == "/kafka-acl-extended/prefixed/Group/team-"
    entries = {
        AclEntry(ALICE, "*", Op.READ, Permission.ALLOW),
        AclEntry("User:bob", "10.0.0.1", Op.WRITE, Permission.DENY),
    }
    data = encode_acls(entries)
    assert json.loads(data) == {
        "version": 1,
        "acls": [
            {"principal": "User:alice", "permissionType": "Allow", "operation": "Read", "host": "*"},
            {"principal": "User:bob", "permissionType": "Deny", "operation": "Write", "host": "10.0.0.1"},
        ],
    }
    assert decode_acls(data) == entries
    path, change = change_node(literal)
    assert (path, change) == (f"{ACL_CHANGES}/acl_changes_", b"Topic:orders")
    assert resource_of_change(ACL_CHANGES, change) == literal
    path, change = change_node(prefixed)
    assert path == f"{EXTENDED_CHANGES}/acl_changes_"
    assert json.loads(change) == {
        "version": 1,
        "resourceType": "GROUP",
        "name": "team-",
        "patternType": "PREFIXED",
    }
    assert resource_of_change(EXTENDED_CHANGES, change) == prefixed
