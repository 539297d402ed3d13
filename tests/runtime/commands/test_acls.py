"""ACL commands (the API's and the topic admin's): add, list with "who may do what", delete; bad input
refused where it arrives, and nothing changed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from lab.engine.errors import IllegalArgument, InvalidRequest
from lab.runtime.live import LiveLab
from lab.runtime.spec import TopicSpec
from tests.labhelpers import ALICE_WRITES_ORDERS
from tests.walltime import FakeWall, advance, still_lab, until_done

AUTHORIZER = {
    "zookeeper.session.timeout.ms": "1500",
    "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
}
ORDERS = (TopicSpec(name="orders", partitions=1, replication_factor=3),)
ALICE = {"name": "orders", "principal": "User:alice", "operation": "write"}


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[tuple[LiveLab, FakeWall]]:
    made = still_lab(tmp_path, "acls", topics=ORDERS, config=AUTHORIZER)
    yield made
    made[0].stop()


def test_an_acl_is_added_listed_with_who_may_do_what_and_deleted(lab: tuple[LiveLab, FakeWall]) -> None:
    live, wall = lab
    added = until_done(live, wall, live.act("acl-create", ALICE))
    assert added["message"] == "ACL added: ALLOW User:alice Write from * on Topic:orders."
    prefixed = {
        "name": "ord",
        "pattern": "prefixed",
        "principal": "User:bob",
        "operation": "read",
        "permission": "deny",
    }
    until_done(live, wall, live.act("acl-create", prefixed))
    until_done(
        live, wall, live.act("acl-create", {"name": "other", "principal": "User:carol", "operation": "read"})
    )
    listed = until_done(live, wall, live.act("acls", {"topic": "orders"}))
    assert [a["text"] for a in listed["acls"]] == [
        "ALLOW User:alice Write from * on Topic:orders",
        "DENY User:bob Read from * on Topic:ord (prefixed)",
    ]
    assert listed["enforced"] is True
    who = {w["principal"]: w["may"] for w in listed["who_may"]}
    assert who["User:alice"]["Write"] is True
    assert who["User:alice"]["Describe"] is True  # implied by WRITE
    assert who["User:alice"]["Read"] is False
    assert who["User:bob"]["Read"] is False
    assert who["User:admin"]["Delete"] is True  # a super user
    assert "User:carol" not in who  # her ACL is on another topic
    why = {w["principal"]: w["why"] for w in listed["who_may"]}
    assert why["User:bob"]["Read"].startswith("DENY User:bob Read from * on Topic:ord (prefixed) denies")
    gone = until_done(live, wall, live.act("acl-delete", ALICE))
    assert gone["message"] == "ACL deleted: ALLOW User:alice Write from * on Topic:orders."
    again = until_done(live, wall, live.act("acl-delete", ALICE))
    assert again["message"].startswith("No such ACL")
    listed = until_done(live, wall, live.act("acls", {"topic": "orders"}))
    assert [a["principal"] for a in listed["acls"]] == ["User:bob"]


@pytest.mark.parametrize(
    ("args", "said"),
    [
        ({**ALICE, "operation": "fly"}, "'fly' is not an operation; one of: All, Read, Write"),
        ({**ALICE, "principal": "alice"}, "a principal is written Type:name"),
        (
            {**ALICE, "resource_type": "group", "operation": "write"},
            "Write is not a valid operation for resource type Group",
        ),
        ({**ALICE, "host": "example.com"}, "a host is an IP address or *"),
        ({**ALICE, "pattern": "prefixed", "name": "*"}, "a prefixed pattern cannot be the wildcard"),
        (
            {**ALICE, "resource_type": "cluster", "operation": "alter"},
            "the Cluster resource is named 'kafka-cluster'",
        ),
        ({**ALICE, "resource_type": "DelegationToken", "operation": "describe"}, "the lab keeps ACLs on"),
        ({"principal": "User:alice", "operation": "write"}, "name is required"),
    ],
)
def test_bad_input_is_refused_where_it_arrives_and_nothing_is_written(
    lab: tuple[LiveLab, FakeWall], args: dict[str, str], said: str
) -> None:
    live, wall = lab
    future = live.act("acl-create", args)
    assert future.done()
    error = future.exception()
    assert isinstance(error, IllegalArgument | InvalidRequest)
    assert said in error.message
    assert until_done(live, wall, live.act("acls", {}))["acls"] == []


def test_without_an_authorizer_acls_are_kept_and_the_answer_says_nobody_enforces_them(tmp_path: Path) -> None:
    live, wall = still_lab(tmp_path, "plain", topics=ORDERS)
    try:
        added = until_done(live, wall, live.act("acl-create", ALICE))
        assert "not enforced: the brokers have no authorizer" in added["message"]
        listed = until_done(live, wall, live.act("acls", {"topic": "orders"}))
        assert listed["enforced"] is False
        assert "authorizer.class.name is empty" in listed["note"]
    finally:
        live.stop()


def test_a_reset_lab_comes_back_with_the_acls_a_person_added(lab: tuple[LiveLab, FakeWall]) -> None:
    live, wall = lab
    until_done(live, wall, live.act("acl-create", ALICE))
    assert live.spec.acls == (ALICE_WRITES_ORDERS,)
    assert live.act("clock-reset", {}).result(30) == "Lab reset: a fresh cluster with fresh data."
    advance(live, wall, 1.0)  # the spec's ACLs are written as the lab starts; ZooKeeper answers in its time
    listed = until_done(live, wall, live.act("acls", {"topic": "orders"}))
    assert [a["text"] for a in listed["acls"]] == ["ALLOW User:alice Write from * on Topic:orders"]
    until_done(live, wall, live.act("acl-delete", ALICE))
    assert live.spec.acls == ()


def test_a_simulated_client_is_added_with_its_principal_and_a_bad_one_is_refused(
    lab: tuple[LiveLab, FakeWall],
) -> None:
    live, wall = lab
    said = until_done(
        live, wall, live.act("client-producer", {"topic": "orders", "rate": 2, "principal": "User:alice"})
    )
    assert said.endswith("as User:alice.")
    clients = live.submit(lambda lab: lab.cluster.snapshot()["clients"]).result(10)
    assert [c["principal"] for c in clients] == ["User:alice"]
    assert live.spec.clients[-1].principal == "User:alice"  # a reset brings it back as alice
    refused = live.act("client-consumer", {"group": "g", "topics": "orders", "principal": "alice"})
    assert refused.done()
    assert "a principal is written Type:name" in str(refused.exception())
