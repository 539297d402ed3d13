"""Scenarios through the API: the shipped list, a run by slug or from an uploaded file, its status and result."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lab.api import scenarios as scenarios_api
from lab.api.runs import Runs
from tests.api.helpers import Api, error, ok
from tests.processes import wait_until
from tests.scenarios.helpers import RUNAWAY, alias_bomb

pytestmark = pytest.mark.django_db


@pytest.fixture
def runs(monkeypatch: pytest.MonkeyPatch) -> Iterator[Runs]:
    """The API's runs, fresh for the test, and stopped after it (a runaway must not outlive it)."""
    fresh = Runs()
    monkeypatch.setattr(scenarios_api, "runs", fresh)
    yield fresh
    fresh.stop()


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


def test_a_broken_scenario_file_is_listed_with_its_error_and_cannot_run(
    ada: Api, runs: Runs, settings: Any, tmp_path: Path
) -> None:
    (tmp_path / "good.yaml").write_text(SMALL)
    (tmp_path / "broken.yaml").write_text("name: broken\nsteps: [\n")
    settings.LAB_SCENARIOS_DIR = tmp_path
    listed = {s["slug"]: s for s in ok(ada.get("/scenarios"))}
    assert listed["good"]["error"] == ""
    assert listed["good"]["steps"] == 4
    assert "line" in listed["broken"]["error"]
    refused = error(ada.post("/scenarios/runs", {"scenario": "broken"}), 400, "ILLEGAL_ARGUMENT")
    assert "cannot run" in refused["message"]


def test_run_a_shipped_scenario_and_read_its_table(ada: Api, runs: Runs) -> None:
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


def test_an_uploaded_scenario_runs_and_a_failed_expectation_shows(ada: Api, runs: Runs) -> None:
    started = ok(ada.post("/scenarios/runs", {"yaml": SMALL}), 202)
    runs.wait(started["id"])
    result = ok(ada.get(f"/scenarios/runs/{started['id']}/result"))
    assert result["status"] == "failed"
    last = result["results"][-1]
    assert last["ok"] is False
    assert last["line"] == 7
    assert [c["ok"] for c in last["checks"]] == [False]
    assert result["results"][-2]["ok"] is True


def test_bad_runs_are_refused(ada: Api, grace: Api, runs: Runs) -> None:
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


def test_a_person_cannot_queue_runs_without_end(
    ada: Api, monkeypatch: pytest.MonkeyPatch, runs: Runs
) -> None:
    monkeypatch.setattr(runs, "per_user", 0)
    error(ada.post("/scenarios/runs", {"yaml": SMALL}), 409, "POLICY_VIOLATION")


def test_a_file_with_control_characters_is_bad_input_not_a_crash(ada: Api) -> None:
    bad = error(ada.post("/scenarios/runs", {"yaml": "name: x\x81\nsteps: []\n"}), 400, "ILLEGAL_ARGUMENT")
    assert "not valid YAML" in bad["message"]


# ----------------------------------------------------------------------------- hostile files and runaway runs


def _running(api: Api, run_id: str, step: int = 3) -> bool:
    status = ok(api.get(f"/scenarios/runs/{run_id}"))
    return bool(status["status"] == "running" and status["step"] >= step)


def test_an_alias_bomb_is_a_short_400_naming_the_line(ada: Api, runs: Runs) -> None:
    response = ada.post("/scenarios/runs", {"yaml": alias_bomb(6)})
    assert len(response.content) < 1000, len(response.content)
    bad = error(response, 400, "ILLEGAL_ARGUMENT")
    assert "line 5" in bad["message"]
    assert "alias" in bad["message"]


def test_deep_nesting_is_a_400_naming_the_line(ada: Api, runs: Runs) -> None:
    text = "name: x\nsteps:\n  - wait: " + "[" * 5000 + "]" * 5000 + "\n"
    bad = error(ada.post("/scenarios/runs", {"yaml": text}), 400, "ILLEGAL_ARGUMENT")
    assert "line 3" in bad["message"]
    assert "nested more than" in bad["message"]


@pytest.mark.parametrize(
    "step",
    [
        "wait: 1000000000000",
        "wait_until: {controller: 1, timeout_ms: 1000000000000}",
        "produce: {topic: t, count: 1000000000}",
    ],
)
def test_a_step_that_would_run_away_is_a_400(ada: Api, runs: Runs, step: str) -> None:
    bad = error(
        ada.post("/scenarios/runs", {"yaml": f"name: x\nsteps:\n  - {step}\n"}), 400, "ILLEGAL_ARGUMENT"
    )
    assert "line 3" in bad["message"]
    assert "at most" in bad["message"]


def test_a_running_run_is_cancelled_by_its_owner(ada: Api, grace: Api, runs: Runs) -> None:
    started = ok(ada.post("/scenarios/runs", {"yaml": RUNAWAY}), 202)
    assert wait_until(lambda: _running(ada, started["id"]), 30)
    error(grace.post(f"/scenarios/runs/{started['id']}/cancel"), 404, "NOT_FOUND")
    cancelled = ok(ada.post(f"/scenarios/runs/{started['id']}/cancel"))
    assert cancelled["status"] == "cancelled"
    assert cancelled["error"] == "cancelled by its owner"
    runs.wait(started["id"], 10)
    result = ok(ada.get(f"/scenarios/runs/{started['id']}/result"))
    assert result["status"] == "cancelled"
    last = result["results"][-1]
    assert (last["label"], last["ok"], last["detail"]) == ("wait 3600000 ms", False, "cancelled by its owner")
    again = error(ada.post(f"/scenarios/runs/{started['id']}/cancel"), 409, "ILLEGAL_STATE")
    assert "already cancelled" in again["message"]


def test_a_queued_run_is_cancelled_before_it_starts(ada: Api, runs: Runs) -> None:
    first, second = (ok(ada.post("/scenarios/runs", {"yaml": RUNAWAY}), 202) for _ in range(2))
    queued = ok(ada.post("/scenarios/runs", {"yaml": RUNAWAY}), 202)
    assert ok(ada.get(f"/scenarios/runs/{queued['id']}"))["status"] == "queued"
    assert ok(ada.post(f"/scenarios/runs/{queued['id']}/cancel"))["status"] == "cancelled"
    assert ok(ada.get(f"/scenarios/runs/{queued['id']}/result"))["results"] == []
    for run in (first, second):
        ok(ada.post(f"/scenarios/runs/{run['id']}/cancel"))


def test_one_person_cannot_hold_both_workers_while_others_wait(ada: Api, grace: Api, runs: Runs) -> None:
    mine = [ok(ada.post("/scenarios/runs", {"yaml": RUNAWAY}), 202) for _ in range(2)]
    assert wait_until(lambda: all(_running(ada, run["id"]) for run in mine), 30)
    theirs = ok(grace.post("/scenarios/runs", {"yaml": SMALL}), 202)
    runs.wait(theirs["id"], 30)
    assert ok(grace.get(f"/scenarios/runs/{theirs['id']}"))["status"] == "failed"  # SMALL fails on purpose
    assert all(ok(ada.get(f"/scenarios/runs/{run['id']}"))["status"] == "running" for run in mine)


def test_a_run_that_takes_too_long_is_stopped_by_its_budget(ada: Api, runs: Runs) -> None:
    runs.budget_s = 1.0
    started = ok(ada.post("/scenarios/runs", {"yaml": RUNAWAY}), 202)
    runs.wait(started["id"], 30)
    result = ok(ada.get(f"/scenarios/runs/{started['id']}/result"))
    assert result["status"] == "failed"
    assert "more than 1 s of the server's time" in result["error"]
    assert "more than 1 s of the server's time" in result["results"][-1]["detail"]


def test_stopping_ends_every_run_within_seconds(ada: Api, grace: Api, runs: Runs) -> None:
    before = set(threading.enumerate())  # another Runs of this process may have workers of its own
    started = [ok(who.post("/scenarios/runs", {"yaml": RUNAWAY}), 202) for who in (ada, ada, grace)]
    assert wait_until(lambda: _running(ada, started[0]["id"]), 30)
    began = time.monotonic()
    runs.stop()
    assert time.monotonic() - began < 5
    workers = [t for t in threading.enumerate() if t not in before and t.name.startswith("scenario-run")]
    assert not workers, workers
    for who, run in zip((ada, ada, grace), started, strict=True):
        status = ok(who.get(f"/scenarios/runs/{run['id']}"))
        assert status["status"] == "cancelled"
        assert status["error"] == "the server stopped"
    refused = error(ada.post("/scenarios/runs", {"yaml": SMALL}), 409, "POLICY_VIOLATION")
    assert "stopping" in refused["message"]


def test_a_scenario_whose_producer_kafka_would_refuse_is_bad_input(ada: Api) -> None:
    text = "name: x\nsteps:\n  - produce: {topic: t, delivery_timeout_ms: 100, linger_ms: 50, request_timeout_ms: 100}\n"
    bad = error(ada.post("/scenarios/runs", {"yaml": text}), 400, "ILLEGAL_ARGUMENT")
    assert "line 3" in bad["message"]
    assert (
        "delivery.timeout.ms should be equal to or larger than linger.ms + request.timeout.ms"
        in bad["message"]
    )
