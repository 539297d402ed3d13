"""Consumer groups through the API: list, describe, reset offsets (earliest, latest, an offset, a time)."""

from __future__ import annotations

import pytest

from lab.labs import live_of
from lab.models import Lab
from tests.api.helpers import Api, error, ok
from tests.api.test_topics import eventually

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("stop_labs")]


@pytest.fixture
def audit(ada: Api, lab: Lab) -> str:
    """Group audit has read all of orders-0's five records."""
    records = [{"value": f"v{i}", "partition": 0} for i in range(5)]
    ok(ada.post(f"/labs/{lab.slug}/topics/orders/records", {"records": records}))
    ok(
        ada.post(
            f"/labs/{lab.slug}/topics/orders/consume", {"group": "audit", "auto_offset_reset": "earliest"}
        )
    )
    return f"/labs/{lab.slug}/groups/audit"


def test_list_and_describe(ada: Api, lab: Lab, audit: str) -> None:
    groups = ok(ada.get(f"/labs/{lab.slug}/groups"))
    assert [g["group"] for g in groups] == ["audit"]
    described = ok(ada.get(audit))
    assert described["state"] == "Empty"
    assert described["members"] == []
    assert described["committed"] == {"orders/0": 5, "orders/1": 0, "orders/2": 0}
    assert described["total_lag"] == 0
    error(ada.get(f"/labs/{lab.slug}/groups/nobody"), 404, "GROUP_ID_NOT_FOUND")
    # A blank id is no group id: said in words, as a body's group is, not as the schema's regex.
    blank = error(ada.get(f"/labs/{lab.slug}/groups/%20%0D"), 400, "INVALID_REQUEST")
    assert blank["message"] == "group: is printable text, not only spaces", blank


def test_reset_to_earliest_an_offset_a_time_and_latest(ada: Api, lab: Lab, audit: str) -> None:
    reset = f"{audit}/reset-offsets"
    assert ok(ada.post(reset, {"topic": "orders", "to": "earliest", "partitions": [0]}))["offsets"] == {
        "orders/0": 0
    }
    assert ok(ada.get(audit))["lag"]["orders/0"] == 5
    again = ok(ada.post(f"/labs/{lab.slug}/topics/orders/consume", {"group": "audit", "partition": 0}))
    assert [r["value"] for r in again["records"]] == [f"v{i}" for i in range(5)]
    assert ok(ada.post(reset, {"topic": "orders", "to": "offset", "offset": 3}))["offsets"] == {
        "orders/0": 3,
        "orders/1": 0,
        "orders/2": 0,
    }
    stamp = ok(ada.get(f"/labs/{lab.slug}/topics/orders/records", partition=0, offset=2))["records"][0][
        "timestamp"
    ]
    by_time = ok(
        ada.post(reset, {"topic": "orders", "to": "timestamp", "timestamp": stamp, "partitions": [0]})
    )
    assert by_time["offsets"]["orders/0"] <= 2  # the first record at or after that time
    assert ok(ada.post(reset, {"topic": "orders", "to": "latest"}))["offsets"]["orders/0"] == 5


def test_bad_resets_change_nothing(ada: Api, lab: Lab, audit: str) -> None:
    reset = f"{audit}/reset-offsets"
    error(ada.post(reset, {"topic": "orders", "to": "offset"}), 400, "INVALID_REQUEST")
    error(ada.post(reset, {"topic": "orders", "to": "timestamp"}), 400, "INVALID_REQUEST")
    error(ada.post(reset, {"topic": "orders", "to": "latest", "offset": 3}), 400, "INVALID_REQUEST")
    error(ada.post(reset, {"topic": "orders", "to": "yesterday"}), 400, "INVALID_REQUEST")
    error(
        ada.post(reset, {"topic": "orders", "to": "earliest", "partitions": [9]}),
        404,
        "UNKNOWN_TOPIC_OR_PARTITION",
    )
    error(ada.post(reset, {"topic": "nope", "to": "earliest"}), 404, "UNKNOWN_TOPIC_OR_PARTITION")
    assert ok(ada.get(audit))["committed"]["orders/0"] == 5


def test_an_active_group_is_not_reset(ada: Api, lab: Lab) -> None:
    live_of(lab).act("client-consumer", {"group": "billing", "topics": "orders"}).result(10)
    eventually(
        lambda: ok(ada.get(f"/labs/{lab.slug}/groups")),
        lambda groups: any(g["group"] == "billing" and g["members"] for g in groups),
    )
    error(
        ada.post(f"/labs/{lab.slug}/groups/billing/reset-offsets", {"topic": "orders", "to": "earliest"}),
        409,
        "NON_EMPTY_GROUP",
    )
