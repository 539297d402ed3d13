"""Topics through the API: create, describe with configs beside Kafka's defaults, change, grow, move, delete."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from pytest_django.fixtures import Settings

from lab.models import Lab
from tests.api.conftest import running
from tests.api.helpers import Api, error, ok
from tests.labhelpers import make_lab
from tests.processes import wait_until
from tests.zkoutage import KillableZooKeeper

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("stop_labs")]


def eventually(fetch: Callable[[], Any], check: Callable[[Any], bool], timeout_s: float = 20.0) -> Any:
    """Poll the API until ``check`` holds (the lab's clock runs in real time: a controller takes some ms)."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = fetch()
        if check(value) or time.monotonic() > deadline:
            return value
        time.sleep(0.05)


def test_create_a_topic_and_read_it_back(ada: Api, lab: Lab) -> None:
    made = ok(
        ada.post(
            f"/labs/{lab.slug}/topics",
            {"name": "payments", "partitions": 2, "replication_factor": 3, "config": {"retention.ms": 60000}},
        ),
        201,
    )
    assert made["name"] == "payments"
    assert [p["partition"] for p in made["partitions"]] == [0, 1]
    # Kafka's placement: partition i's first replica on broker (i mod n) + 1, the rest following.
    assert [p["replicas"] for p in made["partitions"]] == [[1, 2, 3], [2, 3, 1]]
    assert all(p["leader"] == p["replicas"][0] for p in made["partitions"])
    configs = {c["name"]: c for c in made["configs"]}
    assert configs["retention.ms"]["value"] == "60000"
    assert configs["retention.ms"]["source"] == "topic"
    assert configs["retention.ms"]["kafka_default"] == "604800000"
    assert configs["cleanup.policy"] == {
        **configs["cleanup.policy"],
        "value": "delete",
        "source": "default",
        "kafka_default": "delete",
    }
    assert configs["min.insync.replicas"]["doc"]

    listed = {t["name"]: t for t in ok(ada.get(f"/labs/{lab.slug}/topics"))}
    assert listed["payments"] == {
        "name": "payments",
        "partitions": 2,
        "replication_factor": 3,
        "under_replicated": 0,
        "offline": 0,
        "internal": False,
        "reassigning": False,
    }
    assert ok(ada.get(f"/labs/{lab.slug}/topics/payments"))["partitions"] == made["partitions"]
    # The lab remembers it, so a reset or a restart brings it back.
    lab.refresh_from_db()
    assert {t["name"] for t in lab.settings["topics"]} == {"orders", "payments"}


@pytest.mark.parametrize(
    ("body", "status", "name"),
    [
        ({"name": "orders"}, 409, "TOPIC_ALREADY_EXISTS"),
        ({"name": "bad name!"}, 400, "INVALID_TOPIC_EXCEPTION"),
        ({"name": "__consumer_offsets"}, 400, "INVALID_TOPIC_EXCEPTION"),
        ({"name": "__transaction_state"}, 400, "INVALID_TOPIC_EXCEPTION"),
        ({"name": "wide", "replication_factor": 4}, 409, "INVALID_REPLICATION_FACTOR"),  # 3 brokers
        ({"name": "cfg", "config": {"retention.ms": "soon"}}, 400, "INVALID_CONFIG"),
        ({"name": "cfg", "config": {"no.such.key": "1"}}, 400, "INVALID_CONFIG"),
        ({"name": "many", "partitions": 0}, 400, "INVALID_REQUEST"),
        ({"name": "many", "partitions": 10_000}, 400, "INVALID_REQUEST"),
        ({"partitions": 1}, 400, "INVALID_REQUEST"),
    ],
)
def test_a_bad_topic_is_refused_by_name_and_nothing_is_created(
    ada: Api, lab: Lab, body: dict[str, Any], status: int, name: str
) -> None:
    error(ada.post(f"/labs/{lab.slug}/topics", body), status, name)
    names = [t["name"] for t in ok(ada.get(f"/labs/{lab.slug}/topics")) if not t["internal"]]
    assert names == ["orders"]


def test_a_topic_whose_name_collides_with_another_is_refused(ada: Api, lab: Lab) -> None:
    ok(
        ada.post(f"/labs/{lab.slug}/topics", {"name": "pay.ments", "partitions": 1, "replication_factor": 1}),
        201,
    )
    # The name is well formed; the cluster refuses it for the topic it already has: a 409.
    body = error(ada.post(f"/labs/{lab.slug}/topics", {"name": "pay_ments"}), 409, "INVALID_TOPIC_EXCEPTION")
    assert body["message"] == "Topic 'pay_ments' collides with existing topics: pay.ments"
    names = [t["name"] for t in ok(ada.get(f"/labs/{lab.slug}/topics")) if not t["internal"]]
    assert sorted(names) == ["orders", "pay.ments"]


def test_change_configs_and_a_bad_change_changes_nothing(ada: Api, lab: Lab) -> None:
    path = f"/labs/{lab.slug}/topics/orders/configs"
    changed = ok(ada.patch(path, {"set": {"retention.ms": 1000, "cleanup.policy": "compact"}}))
    values = {c["name"]: (c["value"], c["source"]) for c in changed}
    assert values["retention.ms"] == ("1000", "topic")
    assert values["cleanup.policy"] == ("compact", "topic")
    error(ada.patch(path, {"set": {"min.insync.replicas": "zero"}}), 400, "INVALID_CONFIG")
    error(ada.patch(path, {"remove": ["no.such.key"]}), 400, "INVALID_CONFIG")
    after = {c["name"]: (c["value"], c["source"]) for c in ok(ada.get(path))}
    assert after == values
    dropped = {c["name"]: c["source"] for c in ok(ada.patch(path, {"remove": ["cleanup.policy"]}))}
    assert dropped["cleanup.policy"] == "default"
    assert dropped["retention.ms"] == "topic"
    error(ada.get(f"/labs/{lab.slug}/topics/nope/configs"), 404, "UNKNOWN_TOPIC_OR_PARTITION")


def test_add_partitions_but_never_fewer(ada: Api, lab: Lab) -> None:
    grown = ok(ada.post(f"/labs/{lab.slug}/topics/orders/partitions", {"total": 5}))
    assert [p["partition"] for p in grown["partitions"]] == [0, 1, 2, 3, 4]
    assert all(p["leader"] > 0 for p in grown["partitions"])
    refused = error(
        ada.post(f"/labs/{lab.slug}/topics/orders/partitions", {"total": 4}), 409, "INVALID_PARTITIONS"
    )
    assert "5 partitions" in refused["message"]
    lab.refresh_from_db()
    assert lab.settings["topics"][0]["partitions"] == 5


def test_reassign_to_fewer_replicas_then_elect_the_preferred_leader(ada: Api, lab: Lab) -> None:
    topic = f"/labs/{lab.slug}/topics/orders"
    error(ada.post(f"{topic}/reassign", {"plan": {"0": [1, 9]}}), 409, "INVALID_REPLICA_ASSIGNMENT")
    error(ada.post(f"{topic}/reassign", {"plan": {"7": [1, 2]}}), 404, "UNKNOWN_TOPIC_OR_PARTITION")
    error(ada.post(f"{topic}/reassign", {"plan": {"0": "one"}}), 400, "INVALID_REQUEST")
    said = ok(ada.post(f"{topic}/reassign", {"plan": {"0": [3, 1]}}))["message"]
    assert said.startswith("Reassignment of 1 partition(s) of orders started"), said
    moved = eventually(
        lambda: ok(ada.get(topic))["partitions"][0],
        lambda p: p["replicas"] == [3, 1] and sorted(p["isr"]) == [1, 3],
    )
    assert moved["replicas"] == [3, 1]
    assert sorted(moved["isr"]) == [1, 3]
    # Broker 3 is the preferred replica now, but broker 1 kept the lead through the move: elect.
    assert moved["leader"] == 1
    ok(ada.post(f"{topic}/elect-preferred", {"partitions": [0]}))
    moved = eventually(lambda: ok(ada.get(topic))["partitions"][0], lambda p: p["leader"] == 3)
    assert moved["leader"] == 3
    error(ada.post(f"{topic}/elect-preferred", {"partitions": [3]}), 404, "UNKNOWN_TOPIC_OR_PARTITION")
    error(ada.post(f"{topic}/elect-preferred", {"partitions": []}), 400, "INVALID_REQUEST")


def test_delete_a_topic(ada: Api, lab: Lab) -> None:
    answer = ok(ada.delete(f"/labs/{lab.slug}/topics/orders"))
    assert "orders" in answer["message"]
    gone = eventually(
        lambda: [t["name"] for t in ok(ada.get(f"/labs/{lab.slug}/topics"))],
        lambda names: "orders" not in names,
    )
    assert "orders" not in gone
    error(ada.get(f"/labs/{lab.slug}/topics/orders"), 404, "UNKNOWN_TOPIC_OR_PARTITION")
    error(ada.delete(f"/labs/{lab.slug}/topics/orders"), 404, "UNKNOWN_TOPIC_OR_PARTITION")
    lab.refresh_from_db()
    assert lab.settings["topics"] == []


def test_internal_topics_are_not_deleted(ada: Api, lab: Lab) -> None:
    ok(ada.post(f"/labs/{lab.slug}/topics/orders/consume", {"group": "g"}))  # makes __consumer_offsets
    error(ada.delete(f"/labs/{lab.slug}/topics/__consumer_offsets"), 409, "INVALID_TOPIC_EXCEPTION")


def test_zookeeper_down_is_a_503_at_once_and_the_lab_works_again(
    ada: Api, killable_zookeeper: KillableZooKeeper, settings: Settings
) -> None:
    settings.LAB_ZOOKEEPER = killable_zookeeper.hosts
    row = make_lab(ada.user, "Outage", config={"zookeeper.session.timeout.ms": "6000"})
    live = running(row)
    assert live.store == "zookeeper"
    records = f"/labs/{row.slug}/topics/orders/records"
    first = ok(ada.post(records, {"records": [{"key": "k", "value": "before"}], "acks": "all"}))["records"][0]
    assert first["status"] == "acknowledged"

    killable_zookeeper.kill()
    assert wait_until(lambda: bool(live.zookeeper_outage), 10)
    refused = ada.post(
        f"/labs/{row.slug}/topics", {"name": "later", "partitions": 1, "replication_factor": 3}
    )
    body = error(refused, 503, "ZOOKEEPER_NOT_AVAILABLE")
    assert body["message"].startswith("ZooKeeper is not answering")
    assert refused["Retry-After"] == "2"
    assert ok(ada.get(f"/labs/{row.slug}"))["zookeeper_outage"] == live.zookeeper_outage
    # Producing needs no ZooKeeper: the brokers keep answering, as Kafka's do.
    during = ok(ada.post(records, {"records": [{"key": "k", "value": "during"}], "acks": "all"}))["records"][
        0
    ]
    assert (during["status"], during["partition"], during["offset"]) == (
        "acknowledged",
        first["partition"],
        1,
    )

    killable_zookeeper.back()
    assert wait_until(lambda: live.zookeeper_outage == "", 30)
    assert ok(ada.get(f"/labs/{row.slug}"))["zookeeper_outage"] is None
    # A broker whose session did not make it through registers again first (3 live brokers for RF 3).
    created = eventually(
        lambda: ada.post(
            f"/labs/{row.slug}/topics", {"name": "later", "partitions": 1, "replication_factor": 3}
        ),
        lambda r: r.status_code != 400 or r.json()["error"] != "INVALID_REPLICATION_FACTOR",
    )
    ok(created, 201)
    read = eventually(
        lambda: ada.get(records, partition=first["partition"]),
        lambda r: r.status_code == 200 and len(r.json()["records"]) == 2,
    )
    assert [r["value"] for r in ok(read)["records"]] == ["before", "during"]
