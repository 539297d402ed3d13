"""Grading conditions on ACLs: what the brokers' authorizer answers, from the snapshot's ACLs."""

from __future__ import annotations

from typing import Any

from lab.exercises.checks import condition


def snapshot(
    *bindings: dict[str, str], enforced: bool = True, allow_everyone: bool = False
) -> dict[str, Any]:
    return {
        "acls": {
            "enforced": enforced,
            "super_users": ["User:admin"],
            "allow_everyone_if_no_acl_found": allow_everyone,
            "bindings": list(bindings),
        }
    }


ALICE_WRITES = {
    "resource_type": "Topic",
    "name": "orders",
    "pattern": "Literal",
    "principal": "User:alice",
    "host": "*",
    "operation": "Write",
    "permission": "Allow",
}


def test_acl_allows_and_denies_answer_as_the_authorizer_with_its_reason() -> None:
    snap = snapshot(ALICE_WRITES, allow_everyone=True)
    allowed = condition(
        "acl_allows", {"principal": "User:alice", "operation": "Write", "topic": "orders"}, snap, []
    )
    assert allowed.ok
    assert allowed.detail.startswith("User:alice may WRITE Topic:orders (ALLOW User:alice Write")
    # An ACL on the topic closes it to everyone else, allow.everyone.if.no.acl.found or not.
    bob = condition(
        "acl_denies", {"principal": "User:bob", "operation": "Write", "topic": "orders"}, snap, []
    )
    assert bob.ok
    assert "no ALLOW ACL for User:bob WRITE on Topic:orders" in bob.detail
    group = condition(
        "acl_allows", {"principal": "User:bob", "operation": "Read", "group": "billing"}, snap, []
    )
    assert group.ok  # no ACL names the group: allow.everyone.if.no.acl.found=true


def test_without_an_authorizer_no_acl_condition_holds() -> None:
    snap = snapshot(ALICE_WRITES, enforced=False)
    for name in ("acl_allows", "acl_denies"):
        outcome = condition(
            name, {"principal": "User:alice", "operation": "Write", "topic": "orders"}, snap, []
        )
        assert not outcome.ok
        assert outcome.detail == "the brokers have no authorizer: nothing is enforced"
