"""Simulated clients: state, counters apart from controls, and which controls apply."""

from __future__ import annotations

from lab.visuals.clients import client_stats, clients_view
from tests.visuals.snapshots import three_brokers

PRODUCER = {
    "name": "checkout",
    "kind": "producer",
    "state": "running",
    "topic": "orders",
    "rate": 5.0,
    "acks": "all",
    "sent": 12,
    "acked": 11,
    "failed": 0,
}
CONSUMER = {
    "name": "billing-1",
    "kind": "consumer",
    "state": "crashed",
    "group": "billing",
    "topics": ["orders"],
    "processing_ms": 50,
    "assignment": [["orders", 0]],
    "consumed": 7,
}
DASHBOARD = {
    "name": "dashboard-acks-all",
    "kind": "producer",
    "state": "running",
    "topics": ["orders"],
    "acks": "all",
    "sent": 3,
    "acked": 3,
    "failed": 0,
}


def test_rows_say_what_each_client_does_and_which_controls_apply() -> None:
    view = clients_view(three_brokers(clients=[PRODUCER, CONSUMER, DASHBOARD]))
    rows = {r.name: r for r in view.clients}
    consumer = rows["billing-1"]
    assert (consumer.state_label, consumer.glyph) == ("crashed", "✕")
    assert consumer.target == "orders · group billing · owns orders-0"
    assert {a.name: a.enabled for a in consumer.actions} == {
        "client-stop": False,
        "client-crash": False,
        "client-remove": True,
    }
    assert dict(consumer.actions[0].params) == {"name": "billing-1"}
    producer = rows["checkout"]
    assert {a.name: a.enabled for a in producer.actions} == {
        "client-stop": True,
        "client-crash": True,
        "client-remove": True,
    }
    assert not rows["dashboard-acks-all"].simulated
    assert rows["dashboard-acks-all"].actions == ()
    assert view.topics == ("orders",)


def test_counters_are_a_view_of_their_own() -> None:
    before = three_brokers(clients=[PRODUCER])
    after = three_brokers(clients=[{**PRODUCER, "sent": 13, "acked": 13}])
    assert clients_view(before) == clients_view(after)  # the controls are not redrawn for a counter
    assert client_stats(before) != client_stats(after)
    assert client_stats(after).of("checkout") == (
        ("sent", "13"),
        ("acked", "13"),
        ("failed", "0"),
        ("rate", "5/s"),
    )


def test_a_producers_controls_say_what_stopping_and_crashing_a_producer_does() -> None:
    view = clients_view(three_brokers(clients=[PRODUCER, {**CONSUMER, "state": "running"}]))
    rows = {r.name: r for r in view.clients}
    stop, crash, _ = rows["checkout"].actions
    assert stop.title == "Stop checkout: it sends no new records; those already sent still get their answers"
    assert crash.title.startswith("Crash checkout: records it had not sent yet are lost")
    for title in (stop.title, crash.title):
        assert "group" not in title
        assert "session.timeout" not in title
    stop, crash, _ = rows["billing-1"].actions
    assert "leaves its group" in stop.title
    assert "session.timeout.ms" in crash.title


def test_every_producer_says_the_topic_it_writes_to() -> None:
    view = clients_view(
        three_brokers(clients=[PRODUCER, DASHBOARD, {**DASHBOARD, "name": "fresh", "topics": []}])
    )
    rows = {r.name: r for r in view.clients}
    assert rows["checkout"].target == "orders · acks=all"
    assert rows["dashboard-acks-all"].target == "orders · acks=all"  # the produce form's producer
    assert rows["fresh"].target == "nothing written yet · acks=all"


def test_each_client_shows_the_principal_its_requests_come_from() -> None:
    from lab.engine.cluster import Cluster

    cluster = Cluster.create(brokers=1, seed=1)
    try:
        cluster.create_topic("orders")
        cluster.simulated_producer("orders", name="checkout", principal="User:alice")
        cluster.simulated_consumer("billing", ["orders"], name="billing-1")
        snap = cluster.snapshot()
    finally:
        cluster.close()
    rows = {c.name: c for c in clients_view(snap).clients}
    assert rows["checkout"].principal == "User:alice"
    assert rows["billing-1"].principal == "User:admin"  # the lab's super user, by default
