"""Scenarios: the shipped ones, and runs of them (or of an uploaded file) on a fresh in-memory cluster."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja import Router, Status

from lab.api import driver
from lab.api.errors import ERRORS, NotFound
from lab.api.runs import runs
from lab.api.schemas import ResultOut, RunIn, RunOut, ScenarioOut
from lab.classroom import content
from lab.engine.errors import IllegalArgument
from lab.scenarios.format import Scenario, ScenarioError, parse

router = Router(tags=["scenarios"])


@router.get("/scenarios", response={200: list[ScenarioOut], **ERRORS}, summary="Shipped scenarios")
def list_scenarios(request: HttpRequest) -> Any:
    """Every scenario file; one that does not parse is listed with its ``error`` (and cannot run)."""
    return [
        {
            "slug": entry.slug,
            "name": entry.name,
            "description": entry.scenario.description if entry.scenario else "",
            "brokers": entry.scenario.cluster.brokers if entry.scenario else 0,
            "steps": len(entry.scenario.steps) if entry.scenario else 0,
            "error": entry.error,
        }
        for entry in content.scenarios()
    ]


def _scenario(body: RunIn) -> Scenario:
    if (body.scenario is None) == (body.yaml is None):
        raise IllegalArgument(
            "send either scenario (a shipped scenario's slug) or yaml (a scenario file's text)"
        )
    if body.scenario is not None:
        entry = next((e for e in content.scenarios() if e.slug == body.scenario), None)
        if entry is None:
            raise NotFound(f"there is no shipped scenario {body.scenario!r} (GET /api/scenarios lists them)")
        if entry.scenario is None:
            raise IllegalArgument(f"scenario {body.scenario!r} cannot run: {entry.error}")
        return entry.scenario
    try:
        return parse(body.yaml or "", source="the uploaded scenario", slug="uploaded")
    except ScenarioError as error:
        raise IllegalArgument(str(error)) from None


@router.post("/scenarios/runs", response={202: RunOut, **ERRORS}, summary="Run a scenario")
def start_run(request: HttpRequest, body: RunIn) -> Any:
    """Run a shipped scenario (``scenario``: its slug) or your own (``yaml``: the file's text; a malformed
    one, or one beyond the bounds, is a 400 naming the line) on a fresh in-memory cluster, in the
    background. Poll its status. Two runs go at once, taking turns fairly between people; a person may
    have four waiting or running (a fifth is a 409 ``POLICY_VIOLATION``). A run may take an hour of
    virtual time and a minute of the server's time; beyond, the step under way fails and says why."""
    scenario = _scenario(body)
    return Status(202, runs.start(driver.user_of(request).pk, scenario))


@router.get("/scenarios/runs/{run_id}", response={200: RunOut, **ERRORS}, summary="A run's status")
def run_status(request: HttpRequest, run_id: str) -> Any:
    return runs.get(driver.user_of(request).pk, run_id)


@router.get("/scenarios/runs/{run_id}/result", response={200: ResultOut, **ERRORS}, summary="A run's result")
def run_result(request: HttpRequest, run_id: str) -> Any:
    """Each step so far: its line in the file, what it did, pass or fail, and each expectation's value."""
    return runs.get(driver.user_of(request).pk, run_id)


@router.post("/scenarios/runs/{run_id}/cancel", response={200: RunOut, **ERRORS}, summary="Cancel a run")
def cancel_run(request: HttpRequest, run_id: str) -> Any:
    """Stop a run of yours, queued or running: its status is ``cancelled`` at once, and the step under way
    fails with "cancelled by its owner" (the result keeps the steps done so far). A run that has
    finished is a 409 ``ILLEGAL_STATE``."""
    return runs.cancel(driver.user_of(request).pk, run_id)
