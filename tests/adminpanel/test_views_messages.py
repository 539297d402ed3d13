"""The message browser: by partition, offset or time, search, paging, live tail, export, and produce."""

from __future__ import annotations

import csv
import io
import json
import re
from html import unescape
from typing import Any

import pytest
from django.test import Client

from lab.models import Lab
from tests.adminpanel.conftest import HTMX, fast_forward, field_error, on_driver, produce

pytestmark = pytest.mark.django_db


def url(lab: Lab, rest: str = "") -> str:
    return f"/labs/{lab.slug}/admin/topics/orders/{rest}"


def shown(html: str) -> list[tuple[int, str, str]]:
    """(offset, key, value) of each record row."""
    out = []
    for row in re.findall(r'<tr data-offset="(\d+)">(.*?)</tr>', html, re.S):
        cells = [
            unescape(re.sub(r"<[^>]+>", "", c)).strip()
            for c in re.findall(r"<td[^>]*>(.*?)</td>", row[1], re.S)
        ]
        out.append((int(row[0]), cells[2], cells[3]))
    return out


def records(lab: Lab, partition: int) -> list[dict[str, Any]]:
    return on_driver(lab, lambda live: live.cluster.browse("orders", partition, limit=10_000))  # type: ignore[no-any-return]


@pytest.fixture
def filled(lab: Lab) -> Lab:
    """orders-0 holds 30 records (keys k0..k2, values v0..v29); orders-1 holds one."""
    produce(lab, "orders", [(f"k{i % 3}", f"v{i}") for i in range(30)], partition=0)
    produce(lab, "orders", [(None, "lonely")], partition=1)
    return lab


def test_the_browser_shows_a_partitions_records_from_the_log_start(owner: Client, filled: Lab) -> None:
    page = owner.get(url(filled, "messages/")).content.decode()
    rows = shown(page)
    assert rows[:3] == [(0, "k0", "v0"), (1, "k1", "v1"), (2, "k2", "v2")]
    assert len(rows) == 30
    assert "high watermark <b>30</b>" in page
    one = owner.get(url(filled, "messages/?partition=1")).content.decode()
    assert shown(one) == [(0, "null", "lonely")]


def test_search_finds_keys_and_values_and_marks_them(owner: Client, filled: Lab) -> None:
    by_key = owner.get(url(filled, "messages/records/?partition=0&search=k1"), headers=HTMX).content.decode()
    assert [r[0] for r in shown(by_key)] == list(range(1, 30, 3))
    assert "<mark>k1</mark>" in by_key
    by_value = owner.get(
        url(filled, "messages/records/?partition=0&search=v2"), headers=HTMX
    ).content.decode()
    assert [r[2] for r in shown(by_value)] == [
        "v2",
        "v20",
        "v21",
        "v22",
        "v23",
        "v24",
        "v25",
        "v26",
        "v27",
        "v28",
        "v29",
    ]
    # The address bar follows the selection.
    response = owner.get(url(filled, "messages/records/?partition=0&search=v2"), headers=HTMX)
    assert response["HX-Push-Url"].endswith(
        "/topics/orders/messages/?partition=0&start=offset&search=v2&limit=50"
    )


def test_records_are_found_by_time(owner: Client, lab: Lab) -> None:
    produce(lab, "orders", [("early", "a")])
    fast_forward(lab, 5_000)
    at = on_driver(lab, lambda live: live.cluster.now_ms)
    produce(lab, "orders", [("late", "b")])
    html = owner.get(
        url(lab, f"messages/records/?partition=0&start=time&time={at}"), headers=HTMX
    ).content.decode()
    assert shown(html) == [(1, "late", "b")]
    minutes, rest = divmod(at, 60_000)
    clock = f"{minutes}:{rest // 1000:02d}.{rest % 1000:03d}"
    html = owner.get(
        url(lab, f"messages/records/?partition=0&start=time&time={clock}"), headers=HTMX
    ).content.decode()
    assert shown(html) == [(1, "late", "b")]
    later = owner.get(url(lab, f"messages/records/?partition=0&start=time&time={at + 60_000}"), headers=HTMX)
    assert shown(later.content.decode()) == []
    assert "No record at or after that time below the high watermark." in later.content.decode()


def test_pages_go_forward_and_back(owner: Client, filled: Lab) -> None:
    first = owner.get(url(filled, "messages/records/?partition=0&limit=20"), headers=HTMX).content.decode()
    assert [r[0] for r in shown(first)] == list(range(20))
    nxt = unescape(re.search(r'hx-get="([^"]+)"[^>]*rel="next"', first).group(1))  # type: ignore[union-attr]
    assert "offset=20" in nxt
    second = owner.get(nxt, headers=HTMX).content.decode()
    assert [r[0] for r in shown(second)] == list(range(20, 30))
    assert 'rel="next"' not in second  # the last page
    back = unescape(re.search(r'hx-get="([^"]+)"[^>]*rel="prev"', second).group(1))  # type: ignore[union-attr]
    assert [r[0] for r in shown(owner.get(back, headers=HTMX).content.decode())] == list(range(20))
    newest = owner.get(url(filled, "messages/records/?partition=0&start=newest&limit=20"), headers=HTMX)
    assert [r[0] for r in shown(newest.content.decode())] == list(range(10, 30))


def test_the_live_tail_polls_and_shows_new_records(owner: Client, filled: Lab) -> None:
    tail = owner.get(
        url(filled, "messages/records/?partition=0&tail=on&limit=20"), headers=HTMX
    ).content.decode()
    assert 'hx-trigger="every 1s, lab-changed from:body" data-tail="on"' in tail
    assert shown(tail)[-1] == (29, "k2", "v29")
    poll = unescape(re.search(r'<div id="results" class="results" hx-get="([^"]+)"', tail).group(1))  # type: ignore[union-attr]
    produce(filled, "orders", [("fresh", "new one")], partition=0)
    again = owner.get(poll, headers=HTMX).content.decode()
    assert shown(again)[-1] == (30, "fresh", "new one")
    assert len(shown(again)) == 20
    still = owner.get(url(filled, "messages/records/?partition=0"), headers=HTMX).content.decode()
    assert "every 1s" not in still


@pytest.mark.parametrize(
    ("query", "field", "message"),
    [
        (
            "partition=7",
            "partition",
            "UNKNOWN_TOPIC_OR_PARTITION: the topic has 3 partition(s); there is no partition 7",
        ),
        ("partition=x", "partition", "Partition must be a whole number, not 'x'."),
        (
            "partition=0&offset=99",
            "offset",
            "OFFSET_OUT_OF_RANGE: offset 99 is outside orders-0's log [0, 30)",
        ),
        ("partition=0&offset=-1", "offset", "Offset must be at least 0, not -1."),
        (
            "partition=0&start=time&time=noon",
            "time",
            "A time is virtual time since the lab started: milliseconds (12500) or minutes:seconds as the clock "
            "shows it (0:12.500), not 'noon'.",
        ),
        ("partition=0&start=time", "time", "Give a time to start from, or start from an offset."),
    ],
)
def test_a_bad_selection_is_explained_beside_its_field(
    owner: Client, filled: Lab, query: str, field: str, message: str
) -> None:
    response = owner.get(url(filled, f"messages/records/?{query}"), headers=HTMX)
    assert response.status_code == 400
    html = response.content.decode()
    # The results carry the error to the browse form's field (out of band).
    assert f'<span id="browse-{field}-errors" hx-swap-oob="true">' in html
    assert field_error(html, field) == message
    assert shown(html) == []
    page = owner.get(url(filled, f"messages/?{query}"))
    assert page.status_code == 400
    assert field_error(page.content.decode(), field) == message


def test_the_selection_exports_as_csv_and_json(owner: Client, filled: Lab) -> None:
    response = owner.get(url(filled, "messages/export.csv?partition=0&search=k1&limit=20"))
    assert response.status_code == 200
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"] == 'attachment; filename="failover-orders-0-offsets-1-28.csv"'
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [(int(r["offset"]), r["key"], r["value"]) for r in rows] == [
        (o, "k1", f"v{o}") for o in range(1, 30, 3)
    ]
    stored = {r["offset"]: r for r in records(filled, 0)}
    assert all(int(r["timestamp"]) == stored[int(r["offset"])]["timestamp"] for r in rows)

    response = owner.get(url(filled, "messages/export.json?partition=1"))
    assert response["Content-Disposition"] == 'attachment; filename="failover-orders-1-offsets-0-0.json"'
    assert json.loads(response.content) == records(filled, 1)
    page = owner.get(url(filled, "messages/?partition=0&search=k1")).content.decode()
    assert (
        'href="/labs/failover/admin/topics/orders/messages/export.csv?partition=0&amp;start=offset&amp;search=k1&amp;limit=50" download'
        in page
    )

    bad = owner.get(url(filled, "messages/export.csv?partition=9"))
    assert bad.status_code == 400
    assert "UNKNOWN_TOPIC_OR_PARTITION" in bad.content.decode()
    assert owner.get(url(filled, "messages/export.xml?partition=0")).status_code == 404


def test_produce_writes_records_and_says_where_they_went(owner: Client, lab: Lab) -> None:
    response = owner.post(
        url(lab, "produce/"),
        {"key": "order-{i}", "value": "paid {i}", "partition": "2", "acks": "all", "count": "3"},
        headers=HTMX,
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert "3 of 3 record(s) acknowledged (acks=all): orders-2 offsets 0 to 2." in html
    assert response["HX-Trigger"] == "lab-changed"  # the results refresh
    assert [(r["key"], r["value"]) for r in records(lab, 2)] == [
        ("order-1", "paid 1"),
        ("order-2", "paid 2"),
        ("order-3", "paid 3"),
    ]

    tombstone = owner.post(
        url(lab, "produce/"),
        {"key": "order-1", "tombstone": "on", "partition": "2", "count": "1"},
        headers=HTMX,
    )
    assert "1 of 1 record(s) acknowledged (acks=all): orders-2 offset 3." in tombstone.content.decode()
    assert records(lab, 2)[-1]["value"] is None
    quiet = owner.post(url(lab, "produce/"), {"value": "x", "acks": "0", "count": "2"}, headers=HTMX)
    assert (
        "2 record(s) sent to orders with acks=0: no answer comes back, so no offsets."
        in quiet.content.decode()
    )


@pytest.mark.parametrize(
    ("data", "field", "message"),
    [
        (
            {"value": "x", "partition": "5"},
            "partition",
            "UNKNOWN_TOPIC_OR_PARTITION: the topic has 3 partition(s); there is no partition 5",
        ),
        ({"value": "x", "count": "0"}, "count", "Count must be at least 1, not 0."),
        ({"value": "x", "count": "5000"}, "count", "Count must be at most 1000, not 5000."),
        (
            {"value": "x", "tombstone": "on"},
            "value",
            "A tombstone has no value: empty the value, or untick tombstone.",
        ),
        (
            {"value": "x", "acks": "2"},
            "acks",
            "Select a valid choice. 2 is not one of the available choices.",
        ),
    ],
)
def test_a_bad_produce_is_refused_beside_its_field_and_writes_nothing(
    owner: Client, lab: Lab, data: dict[str, str], field: str, message: str
) -> None:
    response = owner.post(url(lab, "produce/"), data, headers=HTMX)
    assert response.status_code == 400
    assert field_error(response.content.decode(), field, prefix="produce_") == message
    assert all(records(lab, p) == [] for p in range(3))


def _as_a_browser(lab: Lab) -> tuple[Client, dict[str, str]]:
    """The owner's browser: the CSRF check enforced, its token sent in the header as htmx sends it."""
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(lab.owner)
    browser.get(url(lab, "messages/"))
    return browser, {**HTMX, "X-CSRFToken": browser.cookies["csrftoken"].value}


def test_an_oversized_produce_is_refused_beside_the_value_and_writes_nothing(lab: Lab) -> None:
    browser, headers = _as_a_browser(lab)
    response = browser.post(url(lab, "produce/"), {"value": "x" * 10_000_000, "count": "1"}, headers=headers)
    assert response.status_code == 413
    said = field_error(response.content.decode(), "value", prefix="produce_")
    assert said.startswith("The request (9.5 MB) is over the 2.5 MB the lab reads")
    assert "a record's value holds at most 100000 characters" in said
    assert all(records(lab, p) == [] for p in range(3))
    # The form stays usable: the next, smaller produce goes through.
    fine = browser.post(url(lab, "produce/"), {"value": "x", "partition": "0", "count": "1"}, headers=headers)
    assert fine.status_code == 200
    assert [r["value"] for r in records(lab, 0)] == ["x"]


def test_a_nul_in_a_key_or_value_is_kept_as_kafka_keeps_it(owner: Client, lab: Lab) -> None:
    response = owner.post(
        url(lab, "produce/"),
        {"key": "a\x00b", "value": "v\x00", "partition": "1", "count": "1"},
        headers=HTMX,
    )
    assert response.status_code == 200, field_error(response.content.decode(), "key", prefix="produce_")
    assert [(r["key"], r["value"]) for r in records(lab, 1)] == [("a\x00b", "v\x00")]
