"""An exercise running in a student's live lab: play its setup, then grade its checks, on the driver thread.

``ExerciseSession.tick`` is a tick hook (``LiveLab.add_tick_hook``): it runs on the lab's driver
thread after every advance of the clock, so the setup's waits use the lab's clock (a paused clock
holds them) and grading sees the cluster as the pages do. ``view`` is the view model a frame
carries (``LiveLab.add_view``); the page redraws it when it changes.

A check that holds once is passed for good: ``on_pass`` is told (the Django side saves it), and the
exercise is complete when every check has passed. Nothing here touches the database or Django.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from lab.exercises.checks import evaluate
from lab.exercises.format import Exercise
from lab.runtime.spec import ClientSpec, TopicSpec
from lab.scenarios.runner import ScenarioRun

if TYPE_CHECKING:
    from lab.engine.cluster import Cluster
    from lab.runtime.live import LiveLab

GRADE_INTERVAL_S = 0.1  # at most ten gradings a second: a snapshot is not free
EVENTS_KEPT = 20_000


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckView:
    index: int
    description: str
    passed: bool  # held once: saved, and stays passed
    holds: bool  # holds right now
    detail: str  # where the lab stands on it, in words


@dataclass(frozen=True, slots=True, kw_only=True)
class ExerciseView:
    exercise: str
    title: str
    lab: str
    phase: str  # setup | grading | failed
    step: int  # setup steps done
    steps: int
    step_label: str  # the setup step running now
    error: str
    checks: tuple[CheckView, ...]

    @property
    def passed(self) -> int:
        return sum(1 for c in self.checks if c.passed)

    @property
    def complete(self) -> bool:
        return bool(self.checks) and all(c.passed for c in self.checks)


PassCallback = Callable[[int, str, bool], None]  # (check index, when (ISO time), exercise complete)
StartCallback = Callable[
    [dict[str, Any], "LiveLab"], None
]  # (start snapshot, the lab) once the setup is done


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class ExerciseSession:
    """One student's exercise in one live lab. Only the driver thread calls ``tick``."""

    def __init__(
        self,
        exercise: Exercise,
        *,
        lab: str,
        passed: Mapping[int, str] | None = None,
        start: Mapping[str, Any] | None = None,
        on_pass: PassCallback | None = None,
        on_start: StartCallback | None = None,
        grade_interval_s: float = GRADE_INTERVAL_S,
    ) -> None:
        self.exercise = exercise
        self.lab = lab
        self.passed: dict[int, str] = dict(passed or {})
        self.on_pass = on_pass
        self.on_start = on_start
        self.grade_interval_s = grade_interval_s
        # With a start snapshot the setup already ran (before a server restart): grade at once.
        self.start: dict[str, Any] | None = dict(start) if start else None
        self.phase = "grading" if self.start is not None else "setup"
        self.error = ""
        self._run: ScenarioRun | None = None
        self._due: int | None = None
        self._cluster: Cluster | None = None
        self._seq = 0
        self._events: list[dict[str, Any]] = []
        self._graded_at = -1.0
        self._outcomes: dict[int, tuple[bool, str]] = {}
        self.view = self._make_view()

    # ------------------------------------------------------------------ the hook

    @property
    def busy(self) -> bool:
        """Playing the setup keeps the lab awake; grading does not: it reads the lab's state, which
        stands still while the lab sleeps, so no check can pass or fail meanwhile."""
        return self.phase == "setup"

    def tick(self, lab: LiveLab) -> None:
        cluster = lab.cluster
        if self.phase == "setup":
            self._setup(lab, cluster)
        elif self.phase == "grading":
            self._grade(cluster)

    def restart(self) -> None:
        """Play the setup again (on the driver thread, after the lab was reset); passed checks are forgotten."""
        self.phase = "setup"
        self.error = ""
        self.start = None
        self.passed.clear()
        self._outcomes.clear()
        self._run = None
        self._cluster = None
        self.view = self._make_view()

    def _setup(self, lab: LiveLab, cluster: Cluster) -> None:
        if self._run is None or self._run.cluster is not cluster:
            # First tick, or the lab was reset mid-setup: play the setup from its first step.
            self._run = ScenarioRun(self.exercise.setup, cluster)
            self._due = cluster.now_ms
        run = self._run
        if self._due is not None and cluster.now_ms >= self._due:
            self._due = run.advance()
        if self._due is None:
            failed = [r for r in run.results if not r.ok]
            if failed:
                self.phase = "failed"
                first = failed[0]
                self.error = f"setup step {first.index + 1} ({first.label}) failed: {first.detail or 'expectation not met'}"
            else:
                self._begin_grading(lab, cluster)
        self.view = self._make_view()

    def _begin_grading(self, lab: LiveLab, cluster: Cluster) -> None:
        self.phase = "grading"
        self.start = cluster.snapshot()
        self._cluster = cluster
        self._seq = cluster.journal.last_seq
        self._events = []
        record_setup(lab, cluster)
        if self.on_start is not None:
            self.on_start(self.start, lab)

    def _grade(self, cluster: Cluster) -> None:
        if cluster is not self._cluster:
            # A new cluster (the first tick after a server restart, or a reset): its journal starts
            # afresh, so read it from now on.
            self._cluster = cluster
            self._seq = cluster.journal.last_seq
            self._events = []
        wall = time.monotonic()
        if wall - self._graded_at < self.grade_interval_s:
            return
        self._graded_at = wall
        fresh = cluster.events(self._seq)
        self._seq = cluster.journal.last_seq
        self._events.extend(e.to_dict() for e in fresh)
        if len(self._events) > EVENTS_KEPT:
            del self._events[: len(self._events) - EVENTS_KEPT]
        snapshot = cluster.snapshot()
        newly: list[int] = []
        for index, check in enumerate(self.exercise.checks):
            outcome = evaluate(check, snapshot, self._events, self.start)
            self._outcomes[index] = (outcome.ok, outcome.detail)
            if outcome.ok and index not in self.passed:
                self.passed[index] = now_iso()
                newly.append(index)
        self.view = self._make_view()
        if self.on_pass is not None:
            for index in newly:
                self.on_pass(index, self.passed[index], self.view.complete)

    # ------------------------------------------------------------------ the view

    def _make_view(self) -> ExerciseView:
        run = self._run
        steps = len(self.exercise.setup.steps)
        done = len(run.results) if run is not None else (steps if self.phase != "setup" else 0)
        label = ""
        if self.phase == "setup" and run is not None and run.index > 0:
            label = self.exercise.setup.steps[min(run.index, steps) - 1].label
        return ExerciseView(
            exercise=self.exercise.slug,
            title=self.exercise.title,
            lab=self.lab,
            phase=self.phase,
            step=done,
            steps=steps,
            step_label=label,
            error=self.error,
            checks=tuple(
                CheckView(
                    index=i,
                    description=check.description,
                    passed=i in self.passed,
                    holds=self._outcomes.get(i, (False, ""))[0],
                    detail=self._outcomes.get(i, (False, ""))[1],
                )
                for i, check in enumerate(self.exercise.checks)
            ),
        )


def record_setup(lab: LiveLab, cluster: Cluster) -> None:
    """Put what a setup made (topics, simulated clients) into the lab's spec, so a restart or a
    reset of the lab brings it back as the runtime does for what a person adds on the page."""
    spec = lab.spec
    snapshot = cluster.snapshot()
    for name, topic in snapshot.get("topics", {}).items():
        if name.startswith("__") or any(t.name == name for t in spec.topics):
            continue
        parts = topic.get("partitions", [])
        spec = spec.with_topic(
            TopicSpec(
                name=name,
                partitions=max(1, len(parts)),
                replication_factor=max(1, len(parts[0]["replicas"])) if parts else 1,
                config={str(k): str(v) for k, v in (topic.get("config") or {}).items()},
            )
        )
    for client in client_specs(cluster, spec.clients):
        if not any(c.name == client.name for c in spec.clients):
            spec = spec.with_client(client)
    lab.update_spec(spec)


def client_specs(cluster: Cluster, known: tuple[ClientSpec, ...] = ()) -> list[ClientSpec]:
    """The running simulated clients of a cluster, as specs (a known spec of the same name wins)."""
    by_name = {c.name: c for c in known}
    out: list[ClientSpec] = []
    for name, sim in getattr(cluster, "simulated", {}).items():
        if getattr(sim, "state", "") != "running":
            continue
        if name in by_name:
            out.append(by_name[name])
        elif sim.kind == "producer":
            acks = int(sim.producer.acks)
            out.append(
                ClientSpec(
                    kind="producer",
                    name=name,
                    topics=(sim.topic,),
                    rate_per_s=float(sim.rate_per_s),
                    acks="all" if acks == -1 else str(acks),
                )
            )
        else:
            out.append(
                ClientSpec(
                    kind="consumer",
                    name=name,
                    topics=tuple(sim.topics),
                    group=sim.group,
                    processing_ms=int(sim.processing_ms),
                )
            )
    return out
