"""A topic's ACLs in the admin panel: listed with who may do what, added, deleted; bad input beside
its field and nothing written; read-only for those who only watch."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from lab.models import Lab
from tests.adminpanel.conftest import HTMX
from tests.labhelpers import ALICE_WRITES_ORDERS

pytestmark = pytest.mark.django_db


def url(lab: Lab, rest: str = "") -> str:
    return f"/labs/{lab.slug}/admin/topics/orders/acls/{rest}"


def who(html: str) -> dict[str, dict[str, str]]:
    """principal -> operation -> "true"/"false", as the who-may table shows it."""
    out: dict[str, dict[str, str]] = {}
    for principal, cells in re.findall(r'<tr data-principal="([^"]+)">(.*?)</tr>', html, re.S):
        out[principal] = dict(re.findall(r'data-operation="([^"]+)" data-allowed="([^"]+)"', cells))
    return out


def test_add_list_and_delete_with_who_may_do_what(owner: Client, lab: Lab) -> None:
    page = owner.get(url(lab)).content.decode()
    assert "No ACL applies to orders." in page
    assert "nobody enforces them" in page  # this lab has no authorizer
    added = owner.post(
        url(lab, "add/"),
        {
            "principal": "User:alice",
            "host": "*",
            "operation": "Write",
            "permission": "Allow",
            "pattern": "Literal",
        },
        headers=HTMX,
    )
    assert added.status_code == 200
    html = added.content.decode()
    assert "ACL added: ALLOW User:alice Write from * on Topic:orders" in html
    denied = owner.post(
        url(lab, "add/"),
        {
            "principal": "User:alice",
            "host": "*",
            "operation": "Read",
            "permission": "Deny",
            "pattern": "Prefixed",
            "prefix": "ord",
        },
        headers=HTMX,
    ).content.decode()
    assert (
        'data-principal="User:alice" data-operation="Read" data-permission="Deny" data-pattern="Prefixed"'
        in denied
    )
    table = who(denied)
    assert table["User:alice"]["Write"] == "true"
    assert table["User:alice"]["Describe"] == "true"  # implied by WRITE
    assert table["User:alice"]["Read"] == "false"  # the prefixed DENY wins
    assert table["User:admin"]["Delete"] == "true"  # a super user
    gone = owner.post(
        url(lab, "delete/"),
        ALICE_WRITES_ORDERS,
        headers=HTMX,
    ).content.decode()
    assert "ACL deleted: ALLOW User:alice Write from * on Topic:orders" in gone
    assert 'data-operation="Write" data-permission="Allow"' not in gone


@pytest.mark.parametrize(
    ("data", "field", "said"),
    [
        ({"principal": "alice", "operation": "Write"}, "principal", "is written Type:name"),
        ({"principal": "User:alice", "operation": "Fly"}, "operation", "Select a valid choice"),
        ({"principal": "User:alice", "operation": "Read", "host": "nowhere"}, "host", "an IP address or *"),
        (
            {"principal": "User:alice", "operation": "Read", "pattern": "Prefixed", "prefix": "pay"},
            "prefix",
            "orders does not start with",
        ),
    ],
)
def test_bad_input_is_shown_beside_its_field_and_nothing_is_written(
    owner: Client, lab: Lab, data: dict[str, str], field: str, said: str
) -> None:
    form = {"host": "*", "permission": "Allow", "pattern": "Literal", **data}
    answer = owner.post(url(lab, "add/"), form, headers=HTMX)
    assert answer.status_code == 400
    html = answer.content.decode()
    error = re.search(rf'<span class="field-error" id="id_{field}-error" role="alert">([^<]*)</span>', html)
    assert error is not None, html[:3000]
    assert said in error.group(1).replace("&#x27;", "'")
    assert "No ACL applies to orders." in html


def test_someone_who_only_watches_sees_the_acls_but_cannot_change_them(viewer: Client, lab: Lab) -> None:
    page = viewer.get(url(lab)).content.decode()
    assert '<fieldset disabled title="Read-only' in page
    refused = viewer.post(url(lab, "add/"), {"principal": "User:x", "operation": "Read"}, headers=HTMX)
    assert refused.status_code == 403
