"""SASL users through the API: created with a password (only SCRAM credentials are kept), listed,
removed by mechanism or whole; bad input is a 400 that changes nothing; the OpenAPI document has them."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.models import Lab
from tests.api.helpers import Api, error, ok

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("stop_labs")]


def test_users_are_created_listed_and_removed(ada: Api, lab: Lab) -> None:
    users = f"/labs/{lab.slug}/users"
    said = ok(ada.post(users, {"name": "alice", "password": "alice-secret"}), 201)
    assert "SCRAM-SHA-256" in said["message"]
    assert "SCRAM-SHA-512" in said["message"]
    ok(
        ada.post(
            users, {"name": "bob", "password": "pw", "mechanisms": ["SCRAM-SHA-512"], "iterations": 8192}
        ),
        201,
    )
    listed = ok(ada.get(users))
    assert listed == {
        "users": [
            {
                "user": "alice",
                "credentials": [
                    {"mechanism": "SCRAM-SHA-256", "iterations": 4096},
                    {"mechanism": "SCRAM-SHA-512", "iterations": 4096},
                ],
            },
            {"user": "bob", "credentials": [{"mechanism": "SCRAM-SHA-512", "iterations": 8192}]},
        ],
        "complete": True,
    }
    journal = (Path(lab.data_dir) / "commands.jsonl").read_text()
    assert "user-upsert" in journal
    assert "alice-secret" not in journal  # only what Kafka stores travelled
    ok(ada.call("DELETE", f"{users}/alice", mechanism="SCRAM-SHA-256"))
    ok(ada.delete(f"{users}/bob"))
    assert [u["user"] for u in ok(ada.get(users))["users"]] == ["alice"]
    error(ada.delete(f"{users}/bob"), 404, "RESOURCE_NOT_FOUND")


@pytest.mark.parametrize(
    "body",
    [
        {"name": "", "password": "x"},
        {"name": "carol", "password": ""},
        {"name": "carol", "password": "x", "iterations": 100},
        {"name": "carol", "password": "x", "mechanisms": ["PLAIN"]},
        {"name": "carol", "password": "x", "mechanisms": []},
        {"name": "carol"},
    ],
)
def test_bad_input_is_a_400_and_nothing_is_made(ada: Api, lab: Lab, body: dict) -> None:
    error(ada.post(f"/labs/{lab.slug}/users", body), 400, "INVALID_REQUEST")
    assert ok(ada.get(f"/labs/{lab.slug}/users"))["users"] == []


def test_the_openapi_document_has_the_users(ada: Api) -> None:
    doc = ok(ada.get("/openapi.json"))
    assert {"get", "post"} <= set(doc["paths"]["/api/labs/{slug}/users"])
    assert "delete" in doc["paths"]["/api/labs/{slug}/users/{user}"]
