"""Scenario runs the API started: each on a fresh memory-store cluster, in a background worker.

A run never touches a live lab: ``run_to_end`` builds its own cluster from the scenario's settings and
drives it in virtual time, so it is as fast as the engine and the same on every machine. Runs are kept
in memory (they are cheap to run again): the newest ``KEEP`` per process, finished or not; a server
restart forgets them. At most ``WORKERS`` run at once and a person may have ``PER_USER`` waiting or
running, so a script cannot queue the machine to a standstill.
"""

from __future__ import annotations

import json
import logging
import secrets
import threading
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from lab.api.errors import NotFound, PolicyViolation
from lab.scenarios.format import Scenario
from lab.scenarios.runner import ScenarioRun, run_to_end

log = logging.getLogger(__name__)

KEEP = 100
WORKERS = 2
PER_USER = 4
MAX_VIRTUAL_MS = 3_600_000


def _json_safe(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


@dataclass(slots=True)
class Run:
    id: str
    owner_id: int
    scenario: Scenario
    status: str = "queued"  # queued | running | passed | failed | error
    results: list[dict[str, Any]] = field(default_factory=list)
    time_ms: int = 0
    error: str = ""

    def summary(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "scenario": self.scenario.slug,
            "name": self.scenario.name,
            "status": self.status,
            "step": len(self.results),
            "steps": len(self.scenario.steps),
            "error": self.error,
        }

    def result(self) -> dict[str, Any]:
        return {**self.summary(), "time_ms": self.time_ms, "results": list(self.results)}


class Runs:
    def __init__(self, *, keep: int = KEEP, workers: int = WORKERS, per_user: int = PER_USER) -> None:
        self.keep = keep
        self.per_user = per_user
        self._runs: OrderedDict[str, Run] = OrderedDict()
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="scenario-run")

    def start(self, owner_id: int, scenario: Scenario) -> dict[str, Any]:
        with self._lock:
            busy = sum(
                1 for r in self._runs.values() if r.owner_id == owner_id and r.status in ("queued", "running")
            )
            if busy >= self.per_user:
                raise PolicyViolation(
                    f"you have {busy} scenario runs waiting or running, the most one person may have; "
                    "wait for one to finish"
                )
            run = Run(id=secrets.token_hex(8), owner_id=owner_id, scenario=scenario)
            self._runs[run.id] = run
            while len(self._runs) > self.keep:
                self._runs.popitem(last=False)
            summary = run.summary()
        self._pool.submit(self._execute, run)
        return summary

    def get(self, owner_id: int, run_id: str) -> dict[str, Any]:
        with self._lock:
            run = self._runs.get(run_id)
            if run is None or run.owner_id != owner_id:
                raise NotFound(
                    f"there is no scenario run {run_id!r} of yours (runs are kept in memory: the newest {self.keep})"
                )
            return run.result()

    def _progress(self, run: Run, scenario_run: ScenarioRun) -> None:
        results = [_json_safe(r.to_dict()) for r in scenario_run.results]
        with self._lock:
            run.results = results
            run.time_ms = scenario_run.cluster.now_ms

    def _execute(self, run: Run) -> None:
        with self._lock:
            run.status = "running"
        try:
            report = run_to_end(
                run.scenario, progress=lambda r: self._progress(run, r), max_virtual_ms=MAX_VIRTUAL_MS
            )
        except Exception as error:  # the engine failed: the run says so instead of vanishing
            log.exception("scenario run %s (%s) failed", run.id, run.scenario.slug)
            with self._lock:
                run.status = "error"
                run.error = str(error)
            return
        results = [_json_safe(r.to_dict()) for r in report.run.results]
        with self._lock:
            run.results = results
            run.time_ms = report.time_ms
            run.status = "passed" if report.passed else "failed"

    def wait(self, run_id: str, timeout_s: float = 60.0) -> None:
        """For tests and scripts in this process: block until the run has finished."""
        import time

        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            with self._lock:
                run = self._runs.get(run_id)
                if run is None or run.status not in ("queued", "running"):
                    return
            time.sleep(0.02)
        raise TimeoutError(f"scenario run {run_id} did not finish in {timeout_s} s")


runs = Runs()
