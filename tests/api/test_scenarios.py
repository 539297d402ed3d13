"""Scenarios through the API: the shipped list, a run by slug or from an uploaded file, its status and result."""

from __future__ import annotations

import pytest

from lab.api.runs import runs
from tests.api.helpers import Api, error, ok

pytestmark = pytest.mark.django_db

SMALL = """\
name: Two brokers, one topic
cluster: {brokers: 2, seed: 3}
steps:
  - create_topic: {name: t, partitions: 1, replication_factor: 2}
  - produce: {topic: t, count: 3, acks: all}
  - expect: {partition: t-0, hw: 3}
  - expect: {partition: t-0, hw: 4}
"""


def test_the_shipped_scenarios_are_listed(ada: Api) -> None:
    listed = {s["slug"]: s for s in ok(ada.get("/scenarios"))}
    assert "leader-failover" in listed
    assert listed["leader-failover"]["steps"] > 3
    assert listed["leader-failover"]["name"]


def test_run_a_shipped_scenario_and_read_its_table(ada: Api) -> None:
    started = ok(ada.post("/scenarios/runs", {"scenario": "leader-failover"}), 202)
    assert started["status"] in ("queued", "running")
    assert started["scenario"] == "leader-failover"
    runs.wait(started["id"])
    status = ok(ada.get(f"/scenarios/runs/{started['id']}"))
    assert status["status"] == "passed"
    assert status["step"] == status["steps"]
    result = ok(ada.get(f"/scenarios/runs/{started['id']}/result"))
    assert len(result["results"]) == result["steps"]
    assert all(step["ok"] for step in result["results"])
    assert result["time_ms"] > 0
    assert {"index", "line", "label", "ok", "detail", "time_ms", "checks"} <= set(result["results"][0])


def test_an_uploaded_scenario_runs_and_a_failed_expectation_shows(ada: Api) -> None:
    started = ok(ada.post("/scenarios/runs", {"yaml": SMALL}), 202)
    runs.wait(started["id"])
    result = ok(ada.get(f"/scenarios/runs/{started['id']}/result"))
    assert result["status"] == "failed"
    last = result["results"][-1]
    assert last["ok"] is False
    assert last["line"] == 7
    assert [c["ok"] for c in last["checks"]] == [False]
    assert result["results"][-2]["ok"] is True


def test_bad_runs_are_refused(ada: Api, grace: Api) -> None:
    bad = error(
        ada.post("/scenarios/runs", {"yaml": "name: x\nsteps:\n  - explode: 1\n"}), 400, "ILLEGAL_ARGUMENT"
    )
    assert "line 3" in bad["message"]
    assert "explode" in bad["message"]
    error(ada.post("/scenarios/runs", {"scenario": "no-such"}), 404, "NOT_FOUND")
    error(ada.post("/scenarios/runs", {}), 400, "INVALID_REQUEST")
    error(ada.post("/scenarios/runs", {"scenario": "leader-failover", "yaml": SMALL}), 400, "INVALID_REQUEST")
    error(ada.get("/scenarios/runs/nope"), 404, "NOT_FOUND")
    mine = ok(ada.post("/scenarios/runs", {"yaml": SMALL}), 202)
    error(grace.get(f"/scenarios/runs/{mine['id']}"), 404, "NOT_FOUND")
    runs.wait(mine["id"])


def test_a_person_cannot_queue_runs_without_end(ada: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runs, "per_user", 0)
    error(ada.post("/scenarios/runs", {"yaml": SMALL}), 409, "POLICY_VIOLATION")


def test_a_file_with_control_characters_is_bad_input_not_a_crash(ada: Api) -> None:
    bad = error(ada.post("/scenarios/runs", {"yaml": "name: x\x81\nsteps: []\n"}), 400, "ILLEGAL_ARGUMENT")
    assert "not valid YAML" in bad["message"]
