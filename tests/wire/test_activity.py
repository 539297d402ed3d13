"""Counting what real clients do: requests per second, and one timeline line per client."""

from __future__ import annotations

from collections import Counter

from lab.wire.activity import Activity, RequestRate, backs_off, client_label, summary


def test_the_rate_is_the_mean_over_the_last_five_seconds() -> None:
    rate = RequestRate()
    for i in range(50):
        rate.add(100 + i / 10)  # 10 a second for 5 s
    assert rate.per_second(104.9, since_s=0) == 10.0
    assert rate.per_second(107.0, since_s=0) == 4.0  # 100..101.9 fell out of the window
    assert rate.per_second(200.0, since_s=0) == 0.0
    assert not rate.buckets  # nothing old is kept


def test_a_young_connection_is_measured_over_its_life() -> None:
    rate = RequestRate()
    for _ in range(3):
        rate.add(10.2)
    assert rate.per_second(10.5, since_s=10.0) == 3.0  # less than a second old: over one second
    assert rate.per_second(12.0, since_s=10.0) == 1.5


def test_a_client_is_named_by_its_software_and_client_id() -> None:
    assert client_label(("kafka-python", "2.3.3"), "billing") == "kafka-python 2.3.3 (client.id billing)"
    assert client_label(("", ""), "billing") == "a client (client.id billing)"
    assert client_label(("", ""), None) == "a client"


def test_the_summary_names_records_by_topic_and_errors_by_name_and_api() -> None:
    done = Activity(
        produced=Counter({"orders": 1200}),
        fetched=Counter({"orders": 3000, "payments": 400}),
        errors=Counter({("NOT_LEADER_OR_FOLLOWER", "Produce"): 2, ("REQUEST_TIMED_OUT", "Produce"): 1}),
        since_ms=1_000,
    )
    assert summary("kafka-python 2.3.3 (client.id x)", done, 6_000) == (
        "kafka-python 2.3.3 (client.id x) produced 1,200 records to orders, fetched 3,400 records from "
        "orders, payments, 3 errors NOT_LEADER_OR_FOLLOWER in Produce (2 times), REQUEST_TIMED_OUT in Produce "
        "(last 5.0 s)"
    )
    assert backs_off(done)
    assert not backs_off(Activity(errors=Counter({("TOPIC_ALREADY_EXISTS", "CreateTopics"): 1})))
    assert not Activity()
