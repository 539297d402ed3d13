"""Grading conditions: on ACLs, what the brokers' authorizer answers, from the snapshot's ACLs; on
transactions, what the coordinators and the partitions' leaders hold."""

from __future__ import annotations

from typing import Any

import pytest

from lab.engine.errors import ProducerFenced
from lab.exercises.checks import condition
from tests.engine.helpers import checked_cluster
from tests.labhelpers import ALICE_WRITES_ORDERS


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


def test_acl_allows_and_denies_answer_as_the_authorizer_with_its_reason() -> None:
    snap = snapshot(ALICE_WRITES_ORDERS, allow_everyone=True)
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
    snap = snapshot(ALICE_WRITES_ORDERS, enforced=False)
    for name in ("acl_allows", "acl_denies"):
        outcome = condition(
            name, {"principal": "User:alice", "operation": "Write", "topic": "orders"}, snap, []
        )
        assert not outcome.ok
        assert outcome.detail == "the brokers have no authorizer: nothing is enforced"


def test_transaction_conditions_read_the_coordinators_and_the_leaders_state() -> None:
    """From a real engine's snapshot: an open transaction, then a fenced producer and an aborted one."""
    with checked_cluster(3) as c:
        c.create_topic("orders", partitions=1, replication_factor=3)
        old = c.producer(client_id="old", transactional_id="tx")
        old.init_transactions()
        old.begin_transaction()
        old.send("orders", b"a")
        assert old.flush()
        snap = c.snapshot()
        state = condition("transaction_state", {"id": "tx", "state": "Ongoing"}, snap, [])
        assert state.ok
        assert state.detail.startswith("tx: Ongoing at coordinator broker ")
        lso = condition("lso_at_hw", "orders-0", snap, [])
        assert (lso.ok, lso.detail) == (
            False,
            "orders-0: LSO 0, HW 1, 0 aborted transaction(s) at the leader",
        )
        assert not condition("producer_fenced", "old", snap, []).ok
        assert condition("transaction_state", {"id": "nobody", "state": "Empty"}, snap, []).detail == (
            "no coordinator knows transactional.id nobody yet"
        )
        c.producer(client_id="new", transactional_id="tx").init_transactions()
        with pytest.raises(ProducerFenced):
            old.commit_transaction()
        c.run_for(500)
        snap = c.snapshot()
        assert condition("transaction_epoch_at_least", {"id": "tx", "epoch": 2}, snap, []).ok
        fenced = condition("producer_fenced", "old", snap, [])
        assert (fenced.ok, fenced.detail) == (True, "old is FATAL_ERROR (PRODUCER_FENCED)")
        assert condition("lso_at_hw", "orders-0", snap, []).ok
        assert condition("aborted_transactions_at_least", {"partition": "orders-0", "count": 1}, snap, []).ok
        assert not condition(
            "aborted_transactions_at_least", {"partition": "orders-0", "count": 2}, snap, []
        ).ok
