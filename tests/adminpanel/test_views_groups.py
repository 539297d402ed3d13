"""Consumer groups in the admin panel: state, members, lag, and offset resets (inactive groups only)."""

from __future__ import annotations

import re
from html import unescape

import pytest
from django.test import Client

from lab.models import Lab
from lab.runtime.live import LiveLab
from tests.adminpanel.conftest import HTMX, commit, fast_forward, field_error, on_driver, produce, snapshot

pytestmark = pytest.mark.django_db


def url(lab: Lab, rest: str = "") -> str:
    return f"/labs/{lab.slug}/admin/groups/{rest}"


def committed(lab: Lab, group: str) -> dict[str, int]:
    return dict(snapshot(lab)["groups"][group]["committed"])


def lag_rows(html: str, group: str) -> dict[str, tuple[str, str]]:
    """Partition -> (committed, lag) as the group's table shows them."""
    block = re.search(rf'<article class="group"[^>]*data-group="{group}".*?</article>', html, re.S)
    assert block is not None
    return {
        p: (c, lag)
        for p, c, lag in re.findall(
            r'<tr data-partition="([^"]+)" data-committed="([^"]*)" data-lag="([^"]*)">', block.group(0)
        )
    }


@pytest.fixture
def billing(lab: Lab) -> Lab:
    """orders-0 has 10 records, orders-1 has 4; group billing (inactive) committed 6 and 1."""
    produce(lab, "orders", [(None, f"a{i}") for i in range(10)], partition=0)
    produce(lab, "orders", [(None, f"b{i}") for i in range(4)], partition=1)
    commit(lab, "billing", {("orders", 0): 6, ("orders", 1): 1})
    return lab


def test_groups_show_their_state_and_lag_per_partition_and_in_all(owner: Client, billing: Lab) -> None:
    page = owner.get(url(billing)).content.decode()
    assert lag_rows(page, "billing") == {"orders-0": ("6", "4"), "orders-1": ("1", "3")}
    assert 'data-state="Empty" data-total-lag="7"' in page
    assert "none: the group is inactive" in page
    fragment = owner.get(url(billing, "list/"), headers=HTMX).content.decode()
    assert 'hx-trigger="every 1s, lab-changed from:body"' in fragment
    produce(billing, "orders", [(None, "more")], partition=1)
    again = owner.get(url(billing, "list/"), headers=HTMX).content.decode()
    assert lag_rows(again, "billing")["orders-1"] == ("1", "4")


def test_an_active_group_shows_its_members_and_its_reset_is_refused(owner: Client, billing: Lab) -> None:
    def join(live: LiveLab) -> None:
        cluster = live.cluster
        cluster.simulated_consumer("live-readers", ["orders"], name="reader-1")
        cluster.wait_for(lambda: cluster.groups().get("live-readers", {}).get("state") == "Stable", 30_000)

    on_driver(billing, join)
    page = owner.get(url(billing)).content.decode()
    assert 'data-group="live-readers" data-state="Stable"' in page
    assert re.search(r"<b>reader-1</b>: orders-0, orders-1, orders-2", page)
    assert "active: stop its consumers to reset" in page
    before = committed(billing, "live-readers")
    response = owner.post(
        url(billing, "reset/"), {"group": "live-readers", "topic": "orders", "to": "earliest"}, headers=HTMX
    )
    assert response.status_code == 409
    assert field_error(response.content.decode(), "group") == (
        "NON_EMPTY_GROUP: Assignments can only be reset if the group 'live-readers' is inactive, but the current "
        "state is Stable."
    )
    assert committed(billing, "live-readers") == before


@pytest.mark.parametrize(
    ("data", "expected", "said"),
    [
        (
            {"to": "earliest"},
            {"orders/0": 0, "orders/1": 0, "orders/2": 0},
            "reset to the earliest offset: orders-0 → 0, orders-1 → 0, orders-2 → 0.",
        ),
        (
            {"to": "latest"},
            {"orders/0": 10, "orders/1": 4, "orders/2": 0},
            "reset to the latest offset: orders-0 → 10, orders-1 → 4, orders-2 → 0.",
        ),
        (
            {"to": "offset", "offset": "3", "partitions": "0"},
            {"orders/0": 3, "orders/1": 1},
            "reset to offset 3: orders-0 → 3.",
        ),
        # Kafka moves an offset beyond the log to its end.
        (
            {"to": "offset", "offset": "99", "partitions": "0, 1"},
            {"orders/0": 10, "orders/1": 4},
            "reset to offset 99: orders-0 → 10, orders-1 → 4.",
        ),
    ],
)
def test_an_inactive_groups_offsets_are_reset(
    owner: Client, billing: Lab, data: dict[str, str], expected: dict[str, int], said: str
) -> None:
    response = owner.post(
        url(billing, "reset/"), {"group": "billing", "topic": "orders", **data}, headers=HTMX
    )
    assert response.status_code == 200
    assert f"Group billing's offsets of orders {said}" in unescape(response.content.decode())
    assert response["HX-Trigger"] == "lab-changed"
    assert committed(billing, "billing") == expected


def test_offsets_are_reset_to_a_time(owner: Client, billing: Lab) -> None:
    fast_forward(billing, 5_000)
    at = on_driver(billing, lambda live: live.cluster.now_ms)
    produce(billing, "orders", [(None, "after")], partition=0)  # offset 10, written after `at`
    response = owner.post(
        url(billing, "reset/"),
        {"group": "billing", "topic": "orders", "to": "time", "time": str(at), "partitions": "0"},
        headers=HTMX,
    )
    assert response.status_code == 200
    assert f"reset to the time {at} ms: orders-0 → 10." in response.content.decode()
    assert committed(billing, "billing")["orders/0"] == 10


@pytest.mark.parametrize(
    ("data", "field", "message"),
    [
        ({"group": "billing", "topic": "orders", "to": "offset"}, "offset", "Give the offset to reset to."),
        (
            {"group": "billing", "topic": "orders", "to": "offset", "offset": "-4"},
            "offset",
            "Offset must be at least 0, not -4.",
        ),
        (
            {"group": "billing", "topic": "orders", "to": "time", "time": "soon"},
            "time",
            "A time is virtual time since the lab started: milliseconds (12500) or minutes:seconds as the clock shows it (0:12.500), not 'soon'.",
        ),
        (
            {"group": "billing", "topic": "nope", "to": "earliest"},
            "topic",
            "UNKNOWN_TOPIC_OR_PARTITION: Topic 'nope' does not exist.",
        ),
        (
            {"group": "billing", "topic": "orders", "to": "earliest", "partitions": "0,5"},
            "partitions",
            "UNKNOWN_TOPIC_OR_PARTITION: orders has 3 partition(s); there is no partition 5",
        ),
        (
            {"group": "billing", "topic": "orders", "to": "earliest", "partitions": "one"},
            "partitions",
            "A partition must be a whole number, not 'one'.",
        ),
        (
            {"group": " ", "topic": "orders", "to": "earliest"},
            "group",
            "INVALID_GROUP_ID: a group id cannot be empty.",
        ),
        (
            {"group": "billing", "topic": "orders", "to": "yesterday"},
            "to",
            "Select a valid choice. yesterday is not one of the available choices.",
        ),
    ],
)
def test_a_bad_reset_is_refused_beside_its_field_and_changes_nothing(
    owner: Client, billing: Lab, data: dict[str, str], field: str, message: str
) -> None:
    response = owner.post(url(billing, "reset/"), data, headers=HTMX)
    assert response.status_code in (400, 409)
    assert field_error(response.content.decode(), field) == message
    assert committed(billing, "billing") == {"orders/0": 6, "orders/1": 1}
