"""Faults, the clock and the journal through the API."""

from __future__ import annotations

import pytest

from lab.models import Lab
from tests.api.helpers import Api, error, ok
from tests.api.test_topics import eventually

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("stop_labs")]


def _brokers(ada: Api, lab: Lab) -> dict[int, dict[str, object]]:
    return {b["id"]: b for b in ok(ada.get(f"/labs/{lab.slug}"))["snapshot"]["brokers"]}


def test_kill_and_restart_a_broker(ada: Api, lab: Lab) -> None:
    broker = f"/labs/{lab.slug}/brokers/2"
    assert ok(ada.post(f"{broker}/kill", {}))["message"] == "Broker 2 killed."
    assert _brokers(ada, lab)[2]["state"] == "killed"
    refused = error(ada.post(f"{broker}/kill", {}), 409, "ILLEGAL_STATE")
    assert "not running" in refused["message"]
    assert "restarting" in ok(ada.post(f"{broker}/restart"))["message"]
    back = eventually(lambda: _brokers(ada, lab)[2], lambda b: b["state"] == "alive")
    assert back["state"] == "alive"
    killed = ok(ada.post(f"/labs/{lab.slug}/brokers/3/kill", {"lose_unflushed": True}))
    assert "unflushed" in killed["message"]


def test_pause_slow_isolate_heal_and_shut_down(ada: Api, lab: Lab) -> None:
    b1, b2, b3 = (f"/labs/{lab.slug}/brokers/{n}" for n in (1, 2, 3))
    ok(ada.post(f"{b1}/pause"))
    assert _brokers(ada, lab)[1]["state"] == "paused"
    error(ada.post(f"{b1}/pause"), 409, "ILLEGAL_STATE")
    ok(ada.post(f"{b1}/resume"))
    error(ada.post(f"{b1}/resume"), 409, "ILLEGAL_STATE")

    assert "+750 ms" in ok(ada.post(f"{b2}/slow", {"delay_ms": 750}))["message"]
    assert _brokers(ada, lab)[2]["slow_ms"] == 750
    error(ada.post(f"{b2}/slow", {"delay_ms": 0}), 400, "INVALID_REQUEST")
    ok(ada.post(f"{b2}/heal"))
    assert _brokers(ada, lab)[2]["slow_ms"] == 0
    error(ada.post(f"{b2}/heal"), 409, "ILLEGAL_STATE")

    ok(ada.post(f"{b3}/isolate", {"from": "zookeeper"}))
    assert _brokers(ada, lab)[3]["isolated_from"] == ["zookeeper"]
    error(ada.post(f"{b3}/isolate", {"from": "zookeeper"}), 409, "ILLEGAL_STATE")
    error(ada.post(f"{b3}/isolate", {"from": "mars"}), 400, "INVALID_REQUEST")
    error(ada.post(f"{b3}/isolate", {}), 400, "INVALID_REQUEST")
    ok(ada.post(f"{b3}/heal"))
    assert _brokers(ada, lab)[3]["isolated_from"] == []

    assert "hands its leaderships over" in ok(ada.post(f"{b1}/shutdown"))["message"]
    down = eventually(lambda: _brokers(ada, lab)[1], lambda b: b["state"] != "alive")
    assert down["state"] != "alive"


def test_unknown_brokers(ada: Api, lab: Lab) -> None:
    error(ada.post(f"/labs/{lab.slug}/brokers/9/kill", {}), 404, "NOT_FOUND")
    error(ada.post(f"/labs/{lab.slug}/brokers/0/pause"), 400, "INVALID_REQUEST")
    error(ada.post(f"/labs/{lab.slug}/brokers/one/pause"), 400, "INVALID_REQUEST")
    assert {b["state"] for b in _brokers(ada, lab).values()} == {"alive"}


def test_the_clock_pauses_steps_and_changes_speed(ada: Api, lab: Lab) -> None:
    clock = f"/labs/{lab.slug}/clock"
    assert ok(ada.get(clock))["paused"] is False
    error(ada.post(f"{clock}/step", {"ms": 10}), 409, "ILLEGAL_STATE")
    paused = ok(ada.post(f"{clock}/pause"))
    assert paused["paused"] is True
    assert ok(ada.get(clock))["time_ms"] == paused["time_ms"]  # a paused clock stands still
    stepped = ok(ada.post(f"{clock}/step", {"ms": 250}))
    assert stepped["time_ms"] == paused["time_ms"] + 250
    assert "Stepped" in ok(ada.post(f"{clock}/step", {"events": 1}))["message"]
    error(ada.post(f"{clock}/step", {"ms": 10, "events": 1}), 400, "INVALID_REQUEST")
    error(ada.post(f"{clock}/step", {}), 400, "INVALID_REQUEST")
    error(ada.post(f"{clock}/pause"), 409, "ILLEGAL_STATE")
    assert ok(ada.post(f"{clock}/speed", {"rate": 2}))["rate"] == 2.0
    error(ada.post(f"{clock}/speed", {"rate": 20}), 400, "INVALID_REQUEST")
    assert ok(ada.post(f"{clock}/resume"))["paused"] is False
    lab.refresh_from_db()
    assert lab.settings["rate"] == 2.0  # remembered for the next start


def test_the_journal_pages_through_events_since_a_cursor(ada: Api, lab: Lab) -> None:
    ok(ada.post(f"/labs/{lab.slug}/brokers/2/kill", {}))
    events = f"/labs/{lab.slug}/events"
    first = ok(ada.get(events, limit=2))
    assert [e["seq"] for e in first["events"]] == [1, 2]
    assert first["next"] == 2
    assert first["more"] is True
    everything, cursor = [], 0
    while True:
        page = ok(ada.get(events, since=cursor, limit=50))
        everything += page["events"]
        cursor = page["next"]
        if not page["more"]:
            break
    seqs = [e["seq"] for e in everything]
    assert seqs == list(range(1, len(seqs) + 1))
    killed = [e for e in everything if e["kind"] == "broker_killed"]
    assert killed
    assert killed[0]["broker"] == 2
    assert "killed" in killed[0]["text"]
    assert ok(ada.get(events, since=cursor))["events"] == []
    error(ada.get(events, since=-1), 400, "INVALID_REQUEST")
    error(ada.get(events, limit=0), 400, "INVALID_REQUEST")


def test_a_kill_needs_no_body(ada: Api, lab: Lab) -> None:
    response = ada.client.generic(
        "POST", f"/api/labs/{lab.slug}/brokers/3/kill", b"", headers={"Authorization": f"Bearer {ada.secret}"}
    )
    assert ok(response)["message"] == "Broker 3 killed."
    assert _brokers(ada, lab)[3]["state"] == "killed"
