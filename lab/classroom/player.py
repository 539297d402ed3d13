"""The scenario player: play, pause and step a scenario's steps live on a lab, on its driver thread.

``ScenarioPlayer.tick`` is a tick hook: while playing it calls ``ScenarioRun.advance`` whenever the
lab's clock reaches the time the run asked for, so waits follow the lab's clock (a paused clock
holds them; 0.1x slows them). ``step`` runs exactly the next step (or finishes the one under way),
then pauses; ``cancel`` ends the scenario where it is (a wait of an hour need not be sat out). The
scenario's steps carry the bounds of the file format, as they do on the command line and the API.
``view`` is the per-step pass/fail table a frame carries.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from lab.engine.errors import IllegalState
from lab.scenarios.format import Scenario
from lab.scenarios.runner import ScenarioRun, StepResult

if TYPE_CHECKING:
    from lab.engine.cluster import Cluster
    from lab.runtime.live import LiveLab


@dataclass(frozen=True, slots=True, kw_only=True)
class StepRow:
    index: int
    line: int
    label: str
    state: str  # pending | running | passed | failed | cancelled | skipped (not run: cancelled before it)
    detail: str
    checks: tuple[str, ...]  # "what: expected ..., got ..." for each expectation
    time_ms: int | None


@dataclass(frozen=True, slots=True, kw_only=True)
class PlayerView:
    lab: str
    scenario: str
    name: str
    description: str
    mode: str  # paused | playing | stepping
    status: str  # ready | playing | paused | passed | failed | cancelled
    rows: tuple[StepRow, ...]
    note: str

    @property
    def passed(self) -> int:
        return sum(1 for r in self.rows if r.state == "passed")

    @property
    def failed(self) -> int:
        return sum(1 for r in self.rows if r.state == "failed")

    @property
    def finished(self) -> bool:
        """Over: nothing more will run until the scenario starts again."""
        return self.status in ("passed", "failed", "cancelled")


def _check_text(check: Any) -> str:
    mark = "✓" if check.ok else "✕"
    return f"{mark} {check.what}: expected {check.expected}, got {check.actual}"


class ScenarioPlayer:
    """One scenario on one live lab. ``tick``, ``play``, ``pause``, ``step`` run on the driver thread."""

    def __init__(self, scenario: Scenario, *, lab: str) -> None:
        self.scenario = scenario
        self.lab = lab
        self.mode = "paused"
        self.note = ""
        self._run: ScenarioRun | None = None
        self._due: int | None = None
        self._target: int | None = None  # stepping: the number of results to stop at
        self.cancelled = False
        self._cancelled_at: int | None = None  # the step under way when it was cancelled
        self.view = self._make_view()

    # ------------------------------------------------------------------ controls

    @property
    def finished(self) -> bool:
        run = self._run
        return run is not None and run.index >= len(self.scenario.steps) and len(run.results) == run.index

    @property
    def busy(self) -> bool:
        """Playing or stepping: the lab must not sleep under it (``LiveLab.add_tick_hook``)."""
        return self.mode != "paused"

    def play(self, lab: LiveLab) -> str:
        self._ensure_run(lab.cluster)
        self._refuse_if_cancelled()
        if self.finished:
            raise IllegalState("the scenario is over; start it again to replay it")
        if self.mode == "playing":
            raise IllegalState("the scenario is already playing")
        self._release()
        self.mode = "playing"
        self.tick(lab)
        return f"Playing {self.scenario.name}."

    def pause(self, lab: LiveLab) -> str:
        if self.mode == "paused":
            raise IllegalState("the scenario is not playing")
        self._release()
        self.mode = "paused"
        self.view = self._make_view()
        return "Scenario paused: the step under way waits (the lab's clock goes on; pause it too to freeze time)."

    def step(self, lab: LiveLab) -> str:
        run = self._ensure_run(lab.cluster)
        self._refuse_if_cancelled()
        if self.finished:
            raise IllegalState("the scenario is over; start it again to replay it")
        if self.mode == "playing":
            raise IllegalState("pause the scenario first: a step is one step from a paused scenario")
        under_way = len(run.results) < run.index
        self._target = run.index if under_way else run.index + 1
        # advance() runs every step that is due; showing the run only the steps up to the target
        # makes it stop there.
        run.scenario = replace(self.scenario, steps=self.scenario.steps[: self._target])
        self.mode = "stepping"
        said = f"Step {self._target}: {self.scenario.steps[self._target - 1].label}."
        self.tick(lab)
        return said

    def cancel(self, lab: LiveLab) -> str:
        """End the scenario where it is: the step under way fails ("cancelled"), and no later step runs."""
        run = self._ensure_run(lab.cluster)
        self._refuse_if_cancelled()
        if self.finished:
            raise IllegalState("the scenario is over; start it again to replay it")
        if run.index == 0:
            raise IllegalState("nothing to cancel: the scenario has not started")
        under_way = len(run.results) < run.index
        if under_way:
            self._cancelled_at = run.index - 1
            said = f"Scenario cancelled at step {run.index} ({self.scenario.steps[run.index - 1].label})"
        else:
            said = f"Scenario cancelled before step {run.index + 1} ({self.scenario.steps[run.index].label})"
        self._release()
        run.abort("cancelled")
        self.cancelled = True
        self._due = None
        self.mode = "paused"
        self.view = self._make_view()
        return said + ": start it over to play it again."

    def _refuse_if_cancelled(self) -> None:
        if self.cancelled:
            raise IllegalState("the scenario was cancelled; start it over to play it again")

    def restart(self, lab: LiveLab) -> str:
        """Throw the lab's cluster away and play again from the first step (driver thread)."""
        spec = lab.spec
        lab.update_spec(replace(spec, topics=(), clients=(), acls=(), users={}))
        lab.reset_now()
        self._run = None
        self._due = None
        self._target = None
        self.mode = "paused"
        self.note = ""
        self.cancelled = False
        self._cancelled_at = None
        self.view = self._make_view()  # the run begins on the new cluster once it is up (``tick``)
        return "A fresh cluster: the scenario starts again from its first step."

    # ------------------------------------------------------------------ the hook

    def tick(self, lab: LiveLab) -> None:
        run = self._ensure_run(lab.cluster)
        cluster = run.cluster
        if self.mode != "paused" and self._due is not None and cluster.now_ms >= self._due:
            self._due = run.advance()
            if self.mode == "stepping" and self._target is not None and len(run.results) >= self._target:
                self._release()
                self.mode = "paused"
            elif self._due is None:
                # The end (or the end of what a step showed the run): resume from here next time.
                self._release()
                self.mode = "paused"
        self.view = self._make_view()

    def _ensure_run(self, cluster: Cluster) -> ScenarioRun:
        if self._run is not None and self._run.cluster is not cluster:
            # The lab was reset (or restarted) under the player: the old run's cluster is gone.
            self.note = "The lab's cluster was replaced: the scenario starts again from its first step."
            self._run = None
            self.mode = "paused"
            self.cancelled = False
            self._cancelled_at = None
        if self._run is None:
            self._run = ScenarioRun(self.scenario, cluster)
            self._due = cluster.now_ms
            self._target = None
        return self._run

    def _release(self) -> None:
        """Show the run every step again after a single step."""
        run = self._run
        self._target = None
        if run is None:
            return
        run.scenario = self.scenario
        if self._due is None and not self.finished:
            self._due = run.cluster.now_ms

    # ------------------------------------------------------------------ the view

    def _make_view(self) -> PlayerView:
        run = self._run
        results: list[StepResult] = list(run.results) if run is not None else []
        started = run.index if run is not None else 0
        rows = []
        for index, step in enumerate(self.scenario.steps):
            result = results[index] if index < len(results) else None
            if result is not None:
                state = "passed" if result.ok else "failed"
                if index == self._cancelled_at:
                    state = "cancelled"
                detail = result.detail
                checks = tuple(_check_text(c) for c in result.checks)
                at: int | None = result.time_ms
            else:
                state = "skipped" if self.cancelled else "running" if index < started else "pending"
                detail, checks, at = "", (), None
            rows.append(
                StepRow(
                    index=index,
                    line=step.line,
                    label=step.label,
                    state=state,
                    detail=detail,
                    checks=checks,
                    time_ms=at,
                )
            )
        if self.cancelled:
            status = "cancelled"
        elif self.finished:
            status = "failed" if any(r.state == "failed" for r in rows) else "passed"
        elif self.mode in ("playing", "stepping"):
            status = "playing"
        elif results or started:
            status = "paused"
        else:
            status = "ready"
        return PlayerView(
            lab=self.lab,
            scenario=self.scenario.slug,
            name=self.scenario.name,
            description=self.scenario.description,
            mode=self.mode,
            status=status,
            rows=tuple(rows),
            note=self.note,
        )
