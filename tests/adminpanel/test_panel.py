"""Who may use the admin panel: every page and every change, for each kind of person asking."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from lab.labs import live_of
from lab.models import Lab
from lab.runtime.spec import TopicSpec
from tests.adminpanel.conftest import HTMX, snapshot
from tests.labhelpers import make_lab

pytestmark = pytest.mark.django_db

PAGES = [
    "",
    "table/",
    "topics/orders/",
    "topics/orders/partitions/",
    "topics/orders/messages/",
    "topics/orders/messages/records/",
    "topics/orders/messages/export.csv",
    "groups/",
    "groups/list/",
]
# Each change with input that would work for the owner.
CHANGES = {
    "create/": {"name": "payments", "partitions": "1", "replication_factor": "1"},
    "elect/": {},
    "topics/orders/config/": {"retention.ms": "1000"},
    "topics/orders/grow/": {"total": "5"},
    "topics/orders/reassign/": {"step": "apply", "plan": '{"0": [1, 2]}'},
    "topics/orders/elect/": {"partition": "0"},
    "topics/orders/delete/": {"confirm": "orders"},
    "topics/orders/produce/": {"value": "x"},
    "groups/reset/": {"group": "billing", "topic": "orders", "to": "earliest"},
}
READ_ONLY = "Read-only: only this lab&#x27;s owner can change it."


def url(lab: Lab, rest: str) -> str:
    return f"/labs/{lab.slug}/admin/{rest}"


def unchanged(lab: Lab) -> None:
    snap = snapshot(lab)
    assert list(snap["topics"]) == ["orders"]
    orders = snap["topics"]["orders"]
    assert orders["config"] == {}
    assert [len(p["replicas"]) for p in orders["partitions"]] == [3, 3, 3]
    assert all(log["log_end_offset"] == 0 for p in orders["partitions"] for log in p["logs"].values())
    assert snap["groups"] == {}


def test_anonymous_people_are_sent_to_log_in(lab: Lab) -> None:
    anonymous = Client()
    for rest in PAGES:
        response = anonymous.get(url(lab, rest))
        assert response.status_code == 302, rest
        assert response["Location"] == f"/accounts/login/?next={url(lab, rest)}"
    for rest, data in CHANGES.items():
        assert anonymous.post(url(lab, rest), data).status_code == 302, rest
        htmx = anonymous.post(url(lab, rest), data, headers=HTMX)
        assert htmx.status_code == 401, rest
        assert "You are logged out: reload the page and log in." in htmx.content.decode()
    unchanged(lab)


def test_someone_elses_lab_does_not_exist_for_a_student(stranger: Client, lab: Lab) -> None:
    for rest in PAGES:
        assert stranger.get(url(lab, rest)).status_code == 404, rest
    for rest, data in CHANGES.items():
        assert stranger.post(url(lab, rest), data, headers=HTMX).status_code == 404, rest
    assert stranger.get("/labs/no-such-lab/admin/").status_code == 404
    unchanged(lab)


def test_a_read_only_viewer_sees_everything_with_disabled_controls_and_changes_nothing(
    viewer: Client, lab: Lab
) -> None:
    for rest in PAGES:
        assert viewer.get(url(lab, rest)).status_code == 200, rest
    for rest in ("", "topics/orders/", "topics/orders/messages/", "groups/"):
        page = viewer.get(url(lab, rest)).content.decode()
        assert f'title="{READ_ONLY}"><span aria-hidden="true">⊘</span> read-only</span>' in page
        for fieldset in re.findall(r"<fieldset[^>]*>", page):
            assert fieldset == f'<fieldset disabled title="{READ_ONLY}">', rest
    topic = viewer.get(url(lab, "topics/orders/")).content.decode()
    buttons = re.findall(r'<span class="act" title="([^"]*)"><button[^>]*?( disabled)?>', topic)
    assert len(buttons) == 4  # all partitions, then each of the three
    assert all(title == READ_ONLY and disabled for title, disabled in buttons)
    for rest, data in CHANGES.items():
        assert viewer.post(url(lab, rest), data, headers=HTMX).status_code == 403, rest
    unchanged(lab)


def test_the_owner_sees_enabled_controls(owner: Client, lab: Lab) -> None:
    page = owner.get(url(lab, "topics/orders/")).content.decode()
    assert "read-only" not in page
    assert "<fieldset>" in page
    assert "<fieldset disabled" not in page


def test_changes_need_a_csrf_token(lab: Lab) -> None:
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(lab.owner)
    for rest, data in CHANGES.items():
        assert strict.post(url(lab, rest), data, headers=HTMX).status_code == 403, rest
    unchanged(lab)
    # The page hands htmx the token for its POSTs.
    page = strict.get(url(lab, "")).content.decode()
    assert re.search(r'<body hx-headers=\'\{"X-CSRFToken": "[A-Za-z0-9]{64}"\}\'>', page)


def test_pages_and_changes_answer_only_their_own_method(owner: Client, lab: Lab) -> None:
    for rest in PAGES:
        assert owner.post(url(lab, rest), {}).status_code == 405, rest
    for rest in CHANGES:
        assert owner.get(url(lab, rest)).status_code == 405, rest
    unchanged(lab)


def test_the_lab_page_links_to_the_panel(owner: Client, lab: Lab) -> None:
    page = owner.get(f"/labs/{lab.slug}/").content.decode()
    assert f'<a href="/labs/{lab.slug}/admin/" id="to-admin"' in page


def test_a_lab_that_cannot_run_says_why_instead_of_failing(owner: Client, lab: Lab) -> None:
    broken = make_lab(lab.owner, "Broken", topics=[TopicSpec(name="bad", partitions=0)])
    live_of(broken).ready.result(30)
    page = owner.get(url(broken, ""))
    assert page.status_code == 503
    assert "INVALID_PARTITIONS: Number of partitions must be larger than 0." in page.content.decode()
    polled = owner.get(url(broken, "table/"), headers=HTMX)
    assert polled.status_code == 503
    assert polled.content.decode().startswith(
        '<p class="banner bad" role="alert">ILLEGAL_STATE: the lab is failed'
    )
