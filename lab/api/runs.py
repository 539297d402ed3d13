"""Scenario runs the API started: each on a fresh memory-store cluster, on a few shared workers.

A run never touches a live lab: it builds its own cluster from the scenario's settings and drives it
in virtual time, so it is as fast as the engine and the same on every machine. Runs are kept in memory
(they are cheap to run again): the newest ``KEEP`` per process, finished or not; a server restart
forgets them.

The machine is shared, so every run is bounded and the workers are shared fairly:

- ``WORKERS`` threads run scenarios; a person may have ``PER_USER`` runs waiting or running, and at
  most ``WORKERS`` of them started (each started run holds a cluster);
- a worker drives a run in slices of ``SLICE_S`` of wall time: when a slice ends and someone is
  waiting, the run goes back in the queue, and the next run is the one whose owner has the fewest
  on the workers (then the one served longest ago), so one person's runs cannot hold every worker
  while someone else's wait;
- a run may take ``BUDGET_S`` of the server's time in all and ``MAX_VIRTUAL_MS`` of virtual time,
  checked between engine steps, inside waits too; then the step under way fails and says why;
- its owner may cancel it (queued or running), and ``stop`` (the server stopping) cancels every run
  and ends the workers within moments, whatever they were running.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import logging
import secrets
import tempfile
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from lab.api.errors import NotFound, PolicyViolation
from lab.engine.errors import IllegalState
from lab.scenarios.format import Scenario
from lab.scenarios.runner import ScenarioRun, cluster_for, drive

log = logging.getLogger(__name__)

KEEP = 100
WORKERS = 2
PER_USER = 4
MAX_VIRTUAL_MS = 3_600_000
BUDGET_S = 60.0
SLICE_S = 0.5

WAITING = ("queued", "running")
CANCELLED = "cancelled by its owner"
STOPPED = "the server stopped"
_SLICE_OVER = "the slice is over"  # not a reason a person sees: the run goes back in the queue


def _json_safe(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


@dataclass(slots=True, eq=False)  # a run is itself: the queue finds and removes it by identity
class Run:
    id: str
    owner_id: int
    scenario: Scenario
    arrived: int  # order of arrival, for fairness between equals
    status: str = "queued"  # queued | running | passed | failed | error | cancelled
    results: list[dict[str, Any]] = field(default_factory=list)
    time_ms: int = 0
    error: str = ""
    cancel: str = ""  # why it must stop ("" while it may go on)
    spent_s: float = 0.0  # wall time on a worker so far
    busy: bool = False  # on a worker now
    job: ScenarioRun | None = None  # once started: its run and cluster
    cleanup: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)

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
    def __init__(
        self,
        *,
        keep: int = KEEP,
        workers: int = WORKERS,
        per_user: int = PER_USER,
        budget_s: float = BUDGET_S,
        slice_s: float = SLICE_S,
        max_virtual_ms: int = MAX_VIRTUAL_MS,
    ) -> None:
        self.keep = keep
        self.workers = workers
        self.per_user = per_user
        self.budget_s = budget_s
        self.slice_s = slice_s
        self.max_virtual_ms = max_virtual_ms
        self._runs: OrderedDict[str, Run] = OrderedDict()
        self._ready: list[Run] = []  # queued, or started and back from a slice
        self._on_worker: dict[int, int] = {}  # owner -> their runs on a worker now
        self._served: dict[int, int] = {}  # owner -> when a worker last took one of theirs
        self._ticks = itertools.count()
        self._cond = threading.Condition()
        self._threads: list[threading.Thread] = []
        self._stopping = False

    # ------------------------------------------------------------------ what the API calls

    def start(self, owner_id: int, scenario: Scenario) -> dict[str, Any]:
        with self._cond:
            if self._stopping:
                raise PolicyViolation("the lab is stopping: it takes no more scenario runs")
            busy = sum(1 for r in self._runs.values() if r.owner_id == owner_id and r.status in WAITING)
            if busy >= self.per_user:
                raise PolicyViolation(
                    f"you have {busy} scenario runs waiting or running, the most one person may have; "
                    "wait for one to finish, or cancel one"
                )
            run = Run(
                id=secrets.token_hex(8), owner_id=owner_id, scenario=scenario, arrived=next(self._ticks)
            )
            self._runs[run.id] = run
            self._forget_old()
            self._ready.append(run)
            self._spawn()
            self._cond.notify()
            return run.summary()

    def get(self, owner_id: int, run_id: str) -> dict[str, Any]:
        with self._cond:
            return self._mine(owner_id, run_id).result()

    def cancel(self, owner_id: int, run_id: str) -> dict[str, Any]:
        """Stop a run of ``owner_id``'s: at once if it waits for a worker, at its next engine step if it runs."""
        with self._cond:
            run = self._mine(owner_id, run_id)
            if run.status not in WAITING:
                raise IllegalState(
                    "the run was already cancelled"
                    if run.status == "cancelled"
                    else f"the run has already finished: {run.status}"
                )
            run.cancel = CANCELLED
            parked = run in self._ready
            if parked:
                self._ready.remove(run)
            self._end(run, "cancelled", CANCELLED, abort=parked)
            summary = run.summary()
        if parked:
            run.cleanup.close()  # no worker holds it: its cluster goes now
        return summary

    def stop(self, timeout_s: float = 5.0) -> None:
        """The server is stopping: cancel every run, and end the workers (within moments)."""
        with self._cond:
            self._stopping = True
            parked = list(self._ready)
            self._ready.clear()
            for run in self._runs.values():
                if run.status in WAITING:
                    run.cancel = STOPPED
                    self._end(run, "cancelled", STOPPED, abort=run in parked)
            self._cond.notify_all()
            threads = list(self._threads)
        for run in parked:
            run.cleanup.close()
        deadline = time.monotonic() + timeout_s
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))

    def wait(self, run_id: str, timeout_s: float = 60.0) -> None:
        """For tests and scripts in this process: block until the run has finished."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while True:
                run = self._runs.get(run_id)
                if run is None or (run.status not in WAITING and not run.busy):
                    return
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"scenario run {run_id} did not finish in {timeout_s} s")
                self._cond.wait(left)

    # ------------------------------------------------------------------ bookkeeping (under the lock)

    def _mine(self, owner_id: int, run_id: str) -> Run:
        run = self._runs.get(run_id)
        if run is None or run.owner_id != owner_id:
            raise NotFound(
                f"there is no scenario run {run_id!r} of yours (runs are kept in memory: the newest {self.keep})"
            )
        return run

    def _forget_old(self) -> None:
        for run_id in list(self._runs):
            if len(self._runs) <= self.keep:
                return
            if self._runs[run_id].status not in WAITING:  # a run in progress is never forgotten
                del self._runs[run_id]

    def _end(self, run: Run, status: str, error: str = "", *, abort: bool = False) -> None:
        if abort and run.job is not None:
            run.job.abort(error)
            self._copy(run, run.job)
        run.status = status
        run.error = error
        self._cond.notify_all()

    def _copy(self, run: Run, job: ScenarioRun) -> None:
        # A step's result is final once it is in the list: copy only the new ones.
        run.results.extend(_json_safe(r.to_dict()) for r in job.results[len(run.results) :])
        run.time_ms = job.cluster.now_ms

    def _spawn(self) -> None:
        while len(self._threads) < self.workers:
            thread = threading.Thread(
                target=self._work, name=f"scenario-run-{len(self._threads) + 1}", daemon=True
            )
            self._threads.append(thread)
            thread.start()

    def _started(self, owner_id: int) -> int:
        return sum(
            1
            for r in self._runs.values()
            if r.owner_id == owner_id and r.status in WAITING and (r.busy or r.job is not None)
        )

    def _pick(self) -> Run | None:
        """The next run for a free worker: its owner has the fewest on the workers, then was served
        longest ago; a person's runs that have not started wait while they have ``workers`` started."""
        ready = [r for r in self._ready if r.job is not None or self._started(r.owner_id) < self.workers]
        if not ready:
            return None
        run = min(
            ready,
            key=lambda r: (self._on_worker.get(r.owner_id, 0), self._served.get(r.owner_id, -1), r.arrived),
        )
        self._ready.remove(run)
        self._on_worker[run.owner_id] = self._on_worker.get(run.owner_id, 0) + 1
        self._served[run.owner_id] = next(self._ticks)
        run.status = "running"
        run.busy = True
        return run

    # ------------------------------------------------------------------ the workers

    def _work(self) -> None:
        while True:
            with self._cond:
                run = None
                while not self._stopping and (run := self._pick()) is None:
                    self._cond.wait()
                if run is None:
                    return
            try:
                over = self._slice(run)
            except Exception as error:  # the engine failed: the run says so instead of vanishing
                log.exception("scenario run %s (%s) failed", run.id, run.scenario.slug)
                over = True
                with self._cond:
                    if run.status in WAITING:
                        self._end(run, "error", str(error))
            with self._cond:
                self._on_worker[run.owner_id] -= 1
                run.busy = False
                if not over and run.status in WAITING:
                    self._ready.append(run)  # its turn is over: the next run is picked fairly
                elif not over:  # cancelled as its slice ended
                    self._end(run, run.status, run.error, abort=True)
                    over = True
                self._cond.notify_all()
            if over:
                run.cleanup.close()

    def _slice(self, run: Run) -> bool:
        """Drive ``run`` for a slice; True once it is over (passed, failed, out of time or cancelled)."""
        job = run.job
        if job is None:
            data_dir = run.cleanup.enter_context(tempfile.TemporaryDirectory(prefix="kafka-lab-run-"))
            cluster = cluster_for(run.scenario, data_dir)
            run.cleanup.callback(cluster.close)
            job = run.job = ScenarioRun(run.scenario, cluster)
        began = time.monotonic()
        slice_end = began + self.slice_s

        def interrupt() -> str | None:
            if run.cancel:
                return run.cancel
            now = time.monotonic()
            if run.spent_s + now - began > self.budget_s:
                return f"stopped: the run took more than {self.budget_s:g} s of the server's time"
            if now >= slice_end and self._ready:  # someone waits for a worker: take turns
                return _SLICE_OVER
            return None

        def progress(scenario_run: ScenarioRun) -> None:
            with self._cond:
                self._copy(run, scenario_run)

        try:
            reason = drive(job, progress=progress, max_virtual_ms=self.max_virtual_ms, interrupt=interrupt)
        finally:
            run.spent_s += time.monotonic() - began
        with self._cond:
            if reason == _SLICE_OVER and not run.cancel:
                return False
            if run.status not in WAITING:  # cancelled (or stopped) while it ran
                job.abort(run.error)
                self._copy(run, job)
                return True
            if reason is not None:  # over its budget of wall time
                job.abort(reason)
                self._end(run, "failed", reason)
            else:
                self._end(run, "passed" if job.passed else "failed")
            self._copy(run, job)
            return True


runs = Runs()
