"""Transactions through the API: a transactional producer call by call, the coordinators' view, Kafka's
errors by name when a call comes out of order, and bad input refused with nothing changed."""

from __future__ import annotations

import pytest

from lab.models import Lab
from tests.api.helpers import Api, error, ok

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("stop_labs")]


def test_init_begin_send_commit_and_the_coordinators_view(ada: Api, lab: Lab) -> None:
    base = f"/labs/{lab.slug}/transactional-producers"
    said = ok(ada.post(base, {"producer": "tp", "transactional_id": "orders-tx"}))["message"]
    assert "init_transactions" in said
    error(ada.post(f"{base}/tp/commit", None), 409, "ILLEGAL_STATE")  # commit before begin
    ok(ada.post(f"{base}/tp/begin", None))
    sent = ok(ada.post(f"{base}/tp/send", {"topic": "orders", "count": 2, "partition": 1}))["message"]
    assert "2 of 2 record(s) acknowledged" in sent
    (txn,) = ok(ada.get(f"/labs/{lab.slug}/transactions"))
    assert (txn["transactional_id"], txn["state"], txn["partitions"]) == (
        "orders-tx",
        "Ongoing",
        [["orders", 1]],
    )
    assert txn["deadline_ms"] == txn["start_ms"] + txn["timeout_ms"]
    assert [(p["producer"], p["state"]) for p in txn["producers"]] == [("tp", "IN_TRANSACTION")]
    ok(ada.post(f"{base}/tp/commit", None))
    ok(ada.call("DELETE", f"{base}/tp", None))
    error(ada.post(f"{base}/tp/begin", None), 409, "ILLEGAL_STATE")  # closed: Init again first


def test_bad_input_is_a_400_and_makes_no_producer(ada: Api, lab: Lab) -> None:
    base = f"/labs/{lab.slug}/transactional-producers"
    error(ada.post(base, {"producer": "tp"}), 400, "INVALID_REQUEST")
    error(
        ada.post(base, {"producer": "tp", "transactional_id": "x", "transaction_timeout_ms": 1}),
        400,
        "INVALID_REQUEST",
    )
    error(ada.post(base, {"producer": "bad name", "transactional_id": "x"}), 400, "INVALID_REQUEST")
    assert ok(ada.get(f"/labs/{lab.slug}/transactions")) == []
