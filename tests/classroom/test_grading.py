"""An exercise in a live lab: the setup plays on the lab's clock, then the checks are graded live."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from lab.classroom.content import FIXTURES
from lab.classroom.grading import ExerciseSession
from lab.exercises.format import load
from lab.runtime.live import LiveLab
from lab.scenarios.runner import ScenarioRun
from tests.classroom.helpers import live_lab, on_driver
from tests.processes import wait_until

EXERCISES = FIXTURES / "exercises"


@pytest.fixture
def labs() -> Iterator[list[LiveLab]]:
    made: list[LiveLab] = []
    yield made
    for live in made:
        live.stop()


def _hooked(live: LiveLab, session: ExerciseSession) -> None:
    live.add_tick_hook("exercise", session.tick)
    live.add_view("exercise", lambda _lab: session.view)


def test_the_setup_plays_then_a_check_passes_after_the_solutions_actions(
    tmp_path: Path, labs: list[LiveLab]
) -> None:
    exercise = load(EXERCISES / "1-partitions-and-offsets.yaml")
    live = live_lab(tmp_path, "ex1", seed=exercise.setup.cluster.seed)
    labs.append(live)
    passes: list[tuple[int, bool]] = []
    starts: list[dict[str, object]] = []
    session = ExerciseSession(
        exercise,
        lab="ex1",
        on_pass=lambda index, when, complete: passes.append((index, complete)),
        on_start=lambda snapshot, _lab: starts.append(snapshot),
    )
    _hooked(live, session)
    assert wait_until(lambda: session.view.phase == "grading", 20), session.view
    assert session.view.step == session.view.steps == 1
    assert starts
    assert "clicks" in starts[0]["topics"]
    # The setup's topic is in the lab's spec now, so a restart or a reset brings it back.
    assert [t.name for t in live.spec.topics] == ["clicks"]
    # Graded, and not passed: nothing was produced yet.
    assert wait_until(lambda: session.view.checks[0].detail != "", 10)
    assert not session.view.checks[0].passed
    assert "clicks-3: HW 0, LEO 0" in session.view.checks[0].detail

    # The solution's action, as the page's Produce form sends it.
    assert "5 of 5" in str(live.act("produce", {"topic": "clicks", "count": "5", "key": "abc"}).result(30))
    assert wait_until(lambda: session.view.complete, 10), session.view
    assert passes == [(0, True)]
    frame = live.wait_for_frame(lambda f: getattr(f.views.get("exercise"), "complete", False))
    assert frame.views["exercise"].checks[0].passed  # type: ignore[attr-defined]


def test_a_passed_check_stays_passed_and_is_reported_once(tmp_path: Path, labs: list[LiveLab]) -> None:
    exercise = load(EXERCISES / "4-failover.yaml")
    live = live_lab(
        tmp_path,
        "ex4",
        seed=exercise.setup.cluster.seed,
        rate=10.0,
        config={"zookeeper.session.timeout.ms": "1500"},
    )
    labs.append(live)
    passes: list[int] = []
    session = ExerciseSession(exercise, lab="ex4", on_pass=lambda index, when, complete: passes.append(index))
    _hooked(live, session)
    assert wait_until(lambda: session.view.phase == "grading", 30), session.view
    solution = exercise.solution
    assert solution is not None

    def solve(lab: LiveLab) -> ScenarioRun:
        run = ScenarioRun(solution, lab.cluster)
        run.advance()  # kill broker 1; its wait_until runs on, but the grading hook is what looks
        return run

    run = on_driver(live, solve)
    assert run.results[0].ok
    assert wait_until(lambda: session.view.complete, 30), session.view
    # Now broker 2 dies too: broker 3 leads, the check no longer holds, and it stays passed.
    on_driver(live, lambda lab: lab.cluster.kill_broker(2))
    assert wait_until(lambda: "leader 3" in session.view.checks[0].detail, 30), session.view
    assert not session.view.checks[0].holds
    assert session.view.checks[0].passed
    assert session.view.complete
    assert passes == [0]


def test_a_paused_clock_holds_the_setups_waits(tmp_path: Path, labs: list[LiveLab]) -> None:
    exercise = load(EXERCISES / "5-consumer-groups.yaml")
    live = live_lab(tmp_path, "ex5", seed=exercise.setup.cluster.seed, rate=10.0)
    labs.append(live)
    live.act("clock-pause", {}).result(10)
    session = ExerciseSession(exercise, lab="ex5")
    _hooked(live, session)
    # Every step that needs the cluster to act waits for the clock, the first one too: the topic's
    # leaders come from the controller, in the lab's time (a step never moves a paused clock).
    assert wait_until(lambda: session.view.step_label.startswith("create topic"), 20), session.view
    before = on_driver(live, lambda lab: lab.cluster.now_ms)
    for _ in range(20):
        on_driver(live, lambda lab: None)
    assert session.view.phase == "setup"
    assert session.view.step == 0
    assert on_driver(live, lambda lab: lab.cluster.now_ms) == before
    live.act("clock-resume", {}).result(10)
    assert wait_until(lambda: session.view.phase == "grading", 30), session.view
    assert not session.view.checks[0].passed
