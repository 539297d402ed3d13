"""Produce, read and consume as a group, as a script does; Kafka's errors per record."""

from __future__ import annotations

import pytest

from lab.labs import live_of
from lab.models import Lab
from tests.api.helpers import Api, error, ok
from tests.api.test_topics import eventually

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("stop_labs")]


def _produce(ada: Api, lab: Lab, records: list[dict[str, object]], **body: object) -> dict[str, object]:
    answer: dict[str, object] = ok(
        ada.post(f"/labs/{lab.slug}/topics/orders/records", {"records": records, **body})
    )
    return answer


def test_produce_then_read_by_offset_time_and_search(ada: Api, lab: Lab) -> None:
    sent = _produce(ada, lab, [{"key": f"k{i}", "value": f"order {i}", "partition": 1} for i in range(5)])
    assert sent["acks"] == "all"
    assert [(r["status"], r["partition"], r["offset"]) for r in sent["records"]] == [  # type: ignore[attr-defined]
        ("acknowledged", 1, n) for n in range(5)
    ]
    read = f"/labs/{lab.slug}/topics/orders/records"
    records = ok(ada.get(read, partition=1))["records"]
    assert [(r["offset"], r["key"], r["value"]) for r in records] == [
        (n, f"k{n}", f"order {n}") for n in range(5)
    ]
    assert [r["offset"] for r in ok(ada.get(read, partition=1, offset=3))["records"]] == [3, 4]
    assert [r["offset"] for r in ok(ada.get(read, partition=1, offset=1, limit=2))["records"]] == [1, 2]
    assert [r["value"] for r in ok(ada.get(read, partition=1, search="order 4"))["records"]] == ["order 4"]
    first = records[0]["timestamp"]
    assert len(ok(ada.get(read, partition=1, timestamp=first))["records"]) == 5
    assert ok(ada.get(read, partition=0))["records"] == []
    error(ada.get(read, partition=1, offset=9), 409, "OFFSET_OUT_OF_RANGE")  # past the log's end, now
    error(ada.get(read, partition=1, offset=1, timestamp=first), 400, "INVALID_REQUEST")
    error(ada.get(read, partition=7), 404, "UNKNOWN_TOPIC_OR_PARTITION")
    error(ada.get(read), 400, "INVALID_REQUEST")
    error(ada.get(f"/labs/{lab.slug}/topics/nope/records", partition=0), 404, "UNKNOWN_TOPIC_OR_PARTITION")


def test_keyed_records_land_by_key_and_acks_0_learns_no_offset(ada: Api, lab: Lab) -> None:
    sent = _produce(ada, lab, [{"key": "same", "value": str(i)} for i in range(3)])
    partitions = {r["partition"] for r in sent["records"]}  # type: ignore[attr-defined]
    assert len(partitions) == 1  # one key, one partition: the order of a key's records holds
    fire = _produce(ada, lab, [{"value": "x", "partition": 2}], acks="0")
    assert fire["records"] == [
        {"status": "sent", "partition": 2, "offset": None, "error": None, "message": None}
    ]


def test_bad_produce_requests_change_nothing(ada: Api, lab: Lab) -> None:
    path = f"/labs/{lab.slug}/topics/orders/records"
    error(ada.post(path, {"records": []}), 400, "INVALID_REQUEST")
    error(ada.post(path, {"records": [{"value": "v"}], "acks": "2"}), 400, "INVALID_REQUEST")
    error(ada.post(path, {"records": [{"value": "v", "partition": 3}]}), 404, "UNKNOWN_TOPIC_OR_PARTITION")
    error(ada.post(path, {"records": [{"value": "v" * 100_001}]}), 400, "INVALID_REQUEST")
    error(
        ada.post(f"/labs/{lab.slug}/topics/nope/records", {"records": [{"value": "v"}]}),
        404,
        "UNKNOWN_TOPIC_OR_PARTITION",
    )
    for p in range(3):
        assert ok(ada.get(path, partition=p))["records"] == []


def test_an_oversized_produce_is_a_413_naming_the_limits(ada: Api, lab: Lab) -> None:
    path = f"/labs/{lab.slug}/topics/orders/records"
    refused = error(ada.post(path, {"records": [{"value": "x" * 10_000_000}]}), 413, "INVALID_REQUEST")
    assert refused["message"].startswith("The request (9.5 MB) is over the 2.5 MB the lab reads")
    assert "a record's value holds at most 100000 characters" in refused["message"]
    assert all(ok(ada.get(path, partition=p))["records"] == [] for p in range(3))


def test_a_group_reads_on_from_its_committed_offsets(ada: Api, lab: Lab) -> None:
    _produce(ada, lab, [{"value": f"v{i}", "partition": 0} for i in range(5)])
    consume = f"/labs/{lab.slug}/topics/orders/consume"
    first = ok(
        ada.post(consume, {"group": "audit", "partition": 0, "limit": 2, "auto_offset_reset": "earliest"})
    )
    assert [r["offset"] for r in first["records"]] == [0, 1]
    assert first["committed"] == {"orders/0": 2}
    second = ok(ada.post(consume, {"group": "audit", "partition": 0, "limit": 10}))
    assert [r["value"] for r in second["records"]] == ["v2", "v3", "v4"]
    assert second["committed"] == {"orders/0": 5}
    assert ok(ada.post(consume, {"group": "audit", "partition": 0}))["records"] == []
    group = ok(ada.get(f"/labs/{lab.slug}/groups/audit"))
    assert group["state"] == "Empty"
    assert group["committed"]["orders/0"] == 5
    assert group["lag"]["orders/0"] == 0


def test_a_new_group_starts_at_the_end_by_default_as_kafka_does(ada: Api, lab: Lab) -> None:
    _produce(ada, lab, [{"value": "old", "partition": 0}])
    consume = f"/labs/{lab.slug}/topics/orders/consume"
    late = ok(ada.post(consume, {"group": "late"}))
    assert late["records"] == []
    assert late["committed"] == {"orders/0": 1, "orders/1": 0, "orders/2": 0}
    _produce(ada, lab, [{"value": "new", "partition": 0}])
    assert [r["value"] for r in ok(ada.post(consume, {"group": "late"}))["records"]] == ["new"]


def test_a_group_with_live_members_is_refused_with_non_empty_group(ada: Api, lab: Lab) -> None:
    live = live_of(lab)
    live.act("client-consumer", {"group": "billing", "topics": "orders"}).result(10)
    eventually(
        lambda: ok(ada.get(f"/labs/{lab.slug}/groups")),
        lambda groups: any(g["group"] == "billing" and g["members"] for g in groups),
    )
    refused = error(
        ada.post(f"/labs/{lab.slug}/topics/orders/consume", {"group": "billing"}), 409, "NON_EMPTY_GROUP"
    )
    assert "empty" in refused["message"]
