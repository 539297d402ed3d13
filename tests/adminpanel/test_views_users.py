"""SASL users in the admin panel: added with a password (only SCRAM credentials are kept), listed,
removed; bad input is named beside its field and changes nothing; a viewer cannot change them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.test import Client

from lab.models import Lab
from tests.adminpanel.conftest import HTMX, field_error, on_driver

pytestmark = pytest.mark.django_db


def url(lab: Lab, rest: str = "") -> str:
    return f"/labs/{lab.slug}/admin/users/{rest}"


def stored(lab: Lab) -> dict[str, list[str]]:
    tree = on_driver(lab, lambda live: live.cluster.zookeeper_tree("/config/users"))
    return {
        n["path"].rsplit("/", 1)[1]: sorted(json.loads(n["data"])["config"])
        for n in tree
        if n["path"].startswith("/config/users/")
    }


def test_a_user_is_added_listed_and_removed(owner: Client, lab: Lab) -> None:
    page = owner.get(url(lab)).content.decode()
    assert "No user yet" in page
    assert 'aria-current="page">Users</a>' in page
    answer = owner.post(
        url(lab, "create/"),
        {"name": "alice", "password": "alice-secret", "mechanisms": ["SCRAM-SHA-256", "SCRAM-SHA-512"]},
        headers=HTMX,
    )
    assert answer.status_code == 200
    assert answer["HX-Trigger"] == "lab-changed"
    said = answer.content.decode()
    assert "User alice has a SCRAM-SHA-256 credential (4096 iterations)." in said
    assert "asked for" not in said  # the clock runs: ZooKeeper has it already
    assert stored(lab) == {"alice": ["SCRAM-SHA-256", "SCRAM-SHA-512"]}
    assert "alice-secret" not in (Path(lab.data_dir) / "commands.jsonl").read_text()
    listed = owner.get(url(lab, "list/"), headers=HTMX).content.decode()
    assert '<tr data-user="alice">' in listed
    assert "User:alice" in listed
    removed = owner.post(url(lab, "delete/"), {"user": "alice"}, headers=HTMX)
    assert removed.status_code == 200
    assert "User alice removed" in removed.content.decode()
    assert '<tr data-user="alice">' not in removed.content.decode()
    gone = owner.post(url(lab, "delete/"), {"user": "alice"}, headers=HTMX)
    assert gone.status_code == 404
    assert "RESOURCE_NOT_FOUND" in gone.content.decode()


@pytest.mark.parametrize(
    ("data", "field", "words"),
    [
        ({"name": "", "password": "x", "mechanisms": ["SCRAM-SHA-256"]}, "name", "cannot be empty"),
        ({"name": "\x01bad", "password": "x", "mechanisms": ["SCRAM-SHA-256"]}, "name", "printable"),
        (
            {"name": "bob", "password": "", "mechanisms": ["SCRAM-SHA-256"]},
            "password",
            "password is required",
        ),
        ({"name": "bob", "password": "x"}, "mechanisms", "at least one"),
        ({"name": "bob", "password": "x", "mechanisms": ["PLAIN"]}, "mechanisms", "valid choice"),
    ],
)
def test_bad_input_is_named_beside_its_field_and_nothing_is_stored(
    owner: Client, lab: Lab, data: dict, field: str, words: str
) -> None:
    answer = owner.post(url(lab, "create/"), data, headers=HTMX)
    assert answer.status_code == 400
    assert words in field_error(answer.content.decode(), field)
    assert stored(lab) == {}


def test_a_viewer_sees_the_users_but_cannot_change_them(owner: Client, viewer: Client, lab: Lab) -> None:
    owner.post(url(lab, "create/"), {"name": "alice", "password": "pw", "mechanisms": ["SCRAM-SHA-256"]})
    page = viewer.get(url(lab)).content.decode()
    assert '<tr data-user="alice">' in page
    assert "disabled" in page
    refused = viewer.post(
        url(lab, "create/"), {"name": "eve", "password": "pw", "mechanisms": ["SCRAM-SHA-256"]}
    )
    assert refused.status_code == 403
    assert viewer.post(url(lab, "delete/"), {"user": "alice"}).status_code == 403
    assert stored(lab) == {"alice": ["SCRAM-SHA-256"]}
