"""ACLs through the API: add, list with who may do what to a topic, delete; bad input a 400 with
nothing written."""

from __future__ import annotations

import pytest

from lab.models import Lab
from tests.api.helpers import Api, error, ok

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("stop_labs")]

ALICE = {"name": "orders", "principal": "User:alice", "operation": "Write"}


def test_add_list_and_delete_an_acl(ada: Api, lab: Lab) -> None:
    made = ok(ada.post(f"/labs/{lab.slug}/acls", ALICE), 201)
    assert made["acl"]["text"] == "ALLOW User:alice Write from * on Topic:orders"
    ok(
        ada.post(
            f"/labs/{lab.slug}/acls", {**ALICE, "name": "ord", "pattern": "Prefixed", "principal": "User:bob"}
        ),
        201,
    )
    listed = ok(ada.get(f"/labs/{lab.slug}/acls", topic="orders"))
    assert [a["text"] for a in listed["acls"]] == [
        "ALLOW User:alice Write from * on Topic:orders",
        "ALLOW User:bob Write from * on Topic:ord (prefixed)",
    ]
    who = {w["principal"]: w["may"] for w in listed["who_may"]}
    assert who["User:bob"]["Write"] is True
    assert who["User:bob"]["Read"] is False
    assert listed["enforced"] is False  # the demo lab has no authorizer: kept, not enforced
    assert "authorizer.class.name is empty" in listed["note"]
    everything = ok(ada.get(f"/labs/{lab.slug}/acls"))
    assert len(everything["acls"]) == 2
    assert everything["who_may"] is None
    gone = ok(ada.call("DELETE", f"/labs/{lab.slug}/acls", ALICE))
    assert [a["principal"] for a in gone["deleted"]] == ["User:alice"]
    assert ok(ada.call("DELETE", f"/labs/{lab.slug}/acls", ALICE))["deleted"] == []
    assert [a["principal"] for a in ok(ada.get(f"/labs/{lab.slug}/acls"))["acls"]] == ["User:bob"]


@pytest.mark.parametrize(
    ("body", "status", "name"),
    [
        ({**ALICE, "operation": "Fly"}, 400, "INVALID_REQUEST"),
        ({**ALICE, "principal": "alice"}, 400, "INVALID_REQUEST"),
        (
            {**ALICE, "resource_type": "Group"},
            409,
            "INVALID_REQUEST",
        ),  # well formed; Kafka refuses Write on a group
        ({**ALICE, "host": "somewhere"}, 400, "INVALID_REQUEST"),
        ({**ALICE, "extra": 1}, 400, "INVALID_REQUEST"),
    ],
)
def test_bad_input_is_a_400_and_nothing_is_written(
    ada: Api, lab: Lab, body: dict, status: int, name: str
) -> None:
    answer = error(ada.post(f"/labs/{lab.slug}/acls", body), status, name)
    assert answer["message"]
    assert ok(ada.get(f"/labs/{lab.slug}/acls"))["acls"] == []
