"""Labs through the API, as a script uses them: create, list, get the snapshot, reset, delete."""

from __future__ import annotations

import socket
import time
from pathlib import Path
from typing import Any

import pytest
from pytest_django.fixtures import Settings

from lab.models import Lab, LabPort
from lab.ports import ports_of
from tests.api.conftest import running
from tests.api.helpers import Api, error, ok

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("stop_labs")]


def test_a_script_creates_a_lab_reads_its_snapshot_and_deletes_it(ada: Api) -> None:
    made = ok(
        ada.post("/labs", {"name": "Drill", "brokers": 2, "config": {"replica.lag.time.max.ms": 5000}}), 201
    )
    assert made["slug"] == "drill"
    assert made["owner"] == "ada"
    assert made["brokers"] == 2
    assert made["store"] == "memory"
    assert made["can_act"] is True
    assert [lab["slug"] for lab in ok(ada.get("/labs"))] == ["drill"]

    detail = ok(ada.get("/labs/drill"))
    assert [b["id"] for b in detail["snapshot"]["brokers"]] == [1, 2]
    assert {b["state"] for b in detail["snapshot"]["brokers"]} == {"alive"}
    assert detail["snapshot"]["store"] == "memory"
    data_dir = Path(Lab.objects.get(slug="drill").data_dir)
    assert data_dir.is_dir()

    assert ada.delete("/labs/drill").status_code == 204
    assert not Lab.objects.filter(slug="drill").exists()
    assert not data_dir.exists()
    error(ada.get("/labs/drill"), 404, "NOT_FOUND")


def test_bad_labs_are_refused_with_the_field_and_nothing_is_made(ada: Api) -> None:
    bad = error(ada.post("/labs", {"name": "x", "brokers": 13}), 400, "INVALID_REQUEST")
    assert bad["fields"][0]["field"] == "brokers"
    assert "less than or equal to 12" in bad["fields"][0]["problem"]
    error(ada.post("/labs", {"name": "x", "config": {"no.such.key": 1}}), 400, "INVALID_CONFIG")
    error(ada.post("/labs", {"name": "   "}), 400, "INVALID_REQUEST")
    typo = error(ada.post("/labs", {"name": "x", "broker": 3}), 400, "INVALID_REQUEST")
    assert typo["fields"][0]["field"] == "broker"
    error(ada.post("/labs", ["not", "an", "object"]), 400, "INVALID_REQUEST")
    assert not Lab.objects.exists()


def test_a_person_has_a_limited_number_of_labs(ada: Api, teacher: Api, settings: Settings) -> None:
    settings.LAB_MAX_LABS_PER_USER = 1
    ok(ada.post("/labs", {"name": "One", "brokers": 1}), 201)
    refused = error(ada.post("/labs", {"name": "Two", "brokers": 1}), 409, "POLICY_VIOLATION")
    assert refused["message"] == (
        "ada has 1 lab already, the most a student may have (LAB_MAX_LABS_PER_USER); delete one first."
    )
    # A lab an instructor makes for Ada counts for Ada.
    for_ada = error(
        teacher.post("/labs", {"name": "For Ada", "brokers": 1, "owner": "ada"}), 409, "POLICY_VIOLATION"
    )
    assert for_ada["message"].startswith("ada has 1 lab already")
    assert Lab.objects.count() == 1
    # An instructor's own limit is higher.
    ok(teacher.post("/labs", {"name": "Demo one", "brokers": 1}), 201)
    ok(teacher.post("/labs", {"name": "Demo two", "brokers": 1}), 201)
    # Deleting makes room.
    assert ada.delete("/labs/one").status_code == 204
    ok(ada.post("/labs", {"name": "Two", "brokers": 1}), 201)


def test_a_full_server_refuses_a_new_lab_for_anyone(ada: Api, teacher: Api, settings: Settings) -> None:
    settings.LAB_MAX_LIVE_LABS = 1
    ok(ada.post("/labs", {"name": "One", "brokers": 1}), 201)
    for who in (ada, teacher):
        full = error(who.post("/labs", {"name": "Two", "brokers": 1}), 409, "POLICY_VIOLATION")
        assert full["message"] == (
            "The class server is full (1 lab running, the most it takes: LAB_MAX_LIVE_LABS); ask your instructor."
        )
    assert Lab.objects.count() == 1


def test_an_instructor_makes_a_lab_for_a_student_and_a_student_cannot(ada: Api, teacher: Api) -> None:
    made = ok(teacher.post("/labs", {"name": "For Ada", "brokers": 1, "owner": "ada"}), 201)
    assert made["owner"] == "ada"
    assert made["can_act"] is False  # the instructor sees it, Ada runs it
    assert [lab["slug"] for lab in ok(ada.get("/labs"))] == ["for-ada"]
    error(ada.post("/labs", {"name": "For the teacher", "owner": "teacher"}), 403, "FORBIDDEN")
    error(teacher.post("/labs", {"name": "Ghost", "owner": "nobody"}), 404, "NOT_FOUND")


def test_another_persons_lab_is_not_found_and_an_instructor_only_reads_it(
    ada: Api, grace: Api, teacher: Api, lab: Lab
) -> None:
    error(grace.get(f"/labs/{lab.slug}"), 404, "NOT_FOUND")
    error(grace.delete(f"/labs/{lab.slug}"), 404, "NOT_FOUND")
    assert ok(grace.get("/labs")) == []
    assert ok(teacher.get(f"/labs/{lab.slug}"))["can_act"] is False
    error(teacher.delete(f"/labs/{lab.slug}"), 403, "FORBIDDEN")
    error(teacher.post(f"/labs/{lab.slug}/reset"), 403, "FORBIDDEN")
    assert Lab.objects.filter(slug=lab.slug).exists()


def test_reset_throws_the_data_away_and_keeps_the_topics(ada: Api, lab: Lab) -> None:
    ok(ada.post(f"/labs/{lab.slug}/topics/orders/records", {"records": [{"value": "v", "partition": 0}]}))
    assert ok(ada.get(f"/labs/{lab.slug}/topics/orders/records", partition=0))["records"]
    assert "fresh cluster" in ok(ada.post(f"/labs/{lab.slug}/reset"))["message"]
    running(lab)
    deadline = time.monotonic() + 20
    while True:  # the rebuilt cluster elects leaders for the spec's topics in a few virtual ms
        answer = ada.get(f"/labs/{lab.slug}/topics/orders/records", partition=0)
        if answer.status_code == 200 or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert ok(answer)["records"] == []
    assert [t["name"] for t in ok(ada.get(f"/labs/{lab.slug}/topics")) if not t["internal"]] == ["orders"]


def test_a_student_watching_a_demo_reads_it_but_cannot_change_it(grace: Api, teacher: Api) -> None:
    from lab.classroom.models import Demo, DemoViewer

    made = ok(teacher.post("/labs", {"name": "Demo", "brokers": 1}), 201)
    demo = Demo.objects.create(lab=Lab.objects.get(slug=made["slug"]))
    error(grace.get(f"/labs/{made['slug']}"), 404, "NOT_FOUND")  # not joined: not there
    DemoViewer.objects.create(demo=demo, user=grace.user)
    watched = ok(grace.get(f"/labs/{made['slug']}"))
    assert watched["can_act"] is False
    assert [lab["slug"] for lab in ok(grace.get("/labs"))] == [made["slug"]]
    error(grace.post(f"/labs/{made['slug']}/brokers/1/kill", {}), 403, "FORBIDDEN")
    error(grace.post(f"/labs/{made['slug']}/clock/pause"), 403, "FORBIDDEN")
    error(grace.delete(f"/labs/{made['slug']}"), 403, "FORBIDDEN")
    assert {b["state"] for b in ok(teacher.get(f"/labs/{made['slug']}"))["snapshot"]["brokers"]} == {"alive"}


# ---------------------------------------------------------------------------- real Kafka clients


def _listening(api: Api, slug: str, want: list[bool], timeout_s: float = 20.0) -> dict[str, Any]:
    """The lab as the API shows it once its listeners are open (or not) as ``want`` says."""
    deadline = time.monotonic() + timeout_s
    while True:
        detail: dict[str, Any] = ok(api.get(f"/labs/{slug}"))
        if [b["open"] for b in detail["listeners"]] == want or time.monotonic() > deadline:
            return detail
        time.sleep(0.05)


def test_the_api_tells_where_each_broker_listens_and_a_deleted_lab_frees_its_ports(ada: Api) -> None:
    ok(ada.post("/labs", {"name": "Wired", "brokers": 3}), 201)
    detail = _listening(ada, "wired", [True, True, True])
    ports = ports_of(Lab.objects.get(slug="wired"))
    assert detail["listeners"] == [
        {"broker": b, "host": "127.0.0.1", "port": ports[b], "open": True, "error": None} for b in (1, 2, 3)
    ]
    assert detail["bootstrap_servers"] == ",".join(f"127.0.0.1:{ports[b]}" for b in (1, 2, 3))
    ok(ada.post("/labs/wired/brokers/3/kill", {}))
    assert _listening(ada, "wired", [True, True, False])["listeners"][2]["open"] is False
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", ports[3]), timeout=5).close()

    assert ada.delete("/labs/wired").status_code == 204
    assert not LabPort.objects.exists()
    for port in ports.values():  # closed with the lab, and free for the next
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", port), timeout=5).close()


def test_a_real_client_round_trips_records_through_a_lab_made_with_the_api(ada: Api) -> None:
    """What a student does: make a lab, read bootstrap_servers, point kafka-python at it; what the
    client wrote is in the lab, as the API and the message browser show it."""
    from kafka import KafkaConsumer, KafkaProducer

    ok(ada.post("/labs", {"name": "Own client", "brokers": 3}), 201)
    ok(
        ada.post(
            "/labs/own-client/topics",
            {
                "name": "payments",
                "partitions": 3,
                "replication_factor": 3,
                "config": {"min.insync.replicas": 2},
            },
        ),
        201,
    )
    bootstrap = _listening(ada, "own-client", [True, True, True])["bootstrap_servers"]
    sent = {f"key-{i}": f"payment {i}" for i in range(30)}
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", client_id="students-app")
    try:
        acked = [
            producer.send("payments", key=k.encode(), value=v.encode()).get(timeout=30)
            for k, v in sent.items()
        ]
    finally:
        producer.close()
    assert {(m.topic, m.partition) for m in acked} <= {("payments", p) for p in range(3)}

    consumer = KafkaConsumer(
        "payments",
        bootstrap_servers=bootstrap,
        group_id="billing",
        auto_offset_reset="earliest",
        consumer_timeout_ms=15_000,
    )
    try:
        got: dict[str, str] = {}
        for record in consumer:
            got[record.key.decode()] = record.value.decode()
            if len(got) == len(sent):
                break
        consumer.commit()
    finally:
        consumer.close()
    assert got == sent

    # The lab holds what the client wrote: the API reads it back, partition by partition...
    stored = {
        r["key"]: (r["value"], r["partition"], r["offset"])
        for p in range(3)
        for r in ok(ada.get("/labs/own-client/topics/payments/records", partition=p))["records"]
    }
    assert {k: v for k, (v, _, _) in stored.items()} == sent
    assert {(m.partition, m.offset) for m in acked} == {(p, o) for _, p, o in stored.values()}
    # ...the group's commits are the partitions' ends...
    group = ok(ada.get("/labs/own-client/groups/billing"))
    assert group["total_lag"] == 0, group
    assert sum(group["committed"].values()) == len(sent), group
    # ...and the message browser shows the records.
    ada.client.force_login(ada.user)
    page = ada.client.get(
        f"/labs/own-client/admin/topics/payments/messages/?partition={acked[0].partition}&start=offset&limit=50"
    ).content.decode()
    first = next(k for k, (_, p, _) in stored.items() if p == acked[0].partition)
    assert first in page
    assert sent[first] in page


def test_a_sleeping_lab_is_listed_asleep_and_an_api_call_wakes_it_with_its_clock_where_it_stopped(
    ada: Api, settings: Settings
) -> None:
    from lab.runtime.manager import runtime
    from tests.processes import wait_until

    settings.LAB_SLEEP_AFTER_S = 0.001  # asleep as soon as nobody uses it
    ok(ada.post("/labs", {"name": "Nap", "brokers": 1}), 201)
    live = runtime.get("nap")
    assert live is not None
    live.ready.result(30)
    assert wait_until(lambda: live.asleep, 10)
    nap = live.nap
    assert nap is not None
    # Listing labs does not wake them: it says which sleep.
    (listed,) = ok(ada.get("/labs"))
    assert listed["asleep"] is True
    assert listed["slept"].startswith("Asleep: nobody watched; the clock is stopped")
    # Reading one is using it: it wakes (its clock going on from where it stopped: tests/runtime/test_sleep.py).
    detail = ok(ada.get("/labs/nap"))
    assert detail["asleep"] is False
    assert detail["snapshot"]["time_ms"] >= nap.time_ms
    assert "Slept: nobody watched; the clock was stopped for" in detail["slept"]
