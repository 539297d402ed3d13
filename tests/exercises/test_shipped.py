"""Every shipped exercise starts unsolved, and its solution turns every check green."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.exercises.checks import evaluate
from lab.exercises.format import CONDITIONS, load, load_all
from lab.scenarios.runner import ScenarioRun, cluster_for, drive

DIRECTORY = Path(__file__).resolve().parents[2] / "fixtures" / "exercises"
EXERCISES = sorted(DIRECTORY.glob("*.yaml"))


def test_at_least_six_exercises_cover_what_the_issue_asks() -> None:
    exercises = load_all(DIRECTORY)
    assert len(exercises) >= 6
    covered = {c for e in exercises for c in e.covers}
    for subject in (
        "partitions",
        "offsets",
        "replication",
        "isr",
        "hw",
        "leo",
        "failover",
        "consumer groups",
        "rebalance",
        "retention",
    ):
        assert subject in covered, subject
    assert [e.order for e in exercises] == sorted(e.order for e in exercises)


@pytest.mark.parametrize("path", EXERCISES, ids=[p.stem for p in EXERCISES])
def test_exercise_starts_unsolved_and_its_solution_solves_it(path: Path, tmp_path: Path) -> None:
    exercise = load(path)
    assert exercise.solution is not None, "every exercise ships a solution (for instructors and this test)"
    assert exercise.questions, "predict-then-observe questions"
    cluster = cluster_for(exercise.setup, tmp_path)
    try:
        setup = ScenarioRun(exercise.setup, cluster)
        drive(setup)
        assert setup.passed, [r.to_dict() for r in setup.results if not r.ok]
        start = cluster.snapshot()
        cluster.run_for(2000)
        seq = cluster.journal.last_seq
        for check in exercise.checks:
            outcome = evaluate(check, cluster.snapshot(), [e.to_dict() for e in cluster.events(seq)], start)
            assert not outcome.ok, (
                f"{check.description} holds before the student did anything: {outcome.detail}"
            )
        solution = ScenarioRun(exercise.solution, cluster)
        drive(solution)
        assert solution.passed, [r.to_dict() for r in solution.results if not r.ok]
        events = [e.to_dict() for e in cluster.events(seq)]
        for check in exercise.checks:
            outcome = evaluate(check, cluster.snapshot(), events, start)
            assert outcome.ok, f"{check.description}: {outcome.detail}"
    finally:
        cluster.close()


def test_conditions_are_documented() -> None:
    assert all(CONDITIONS.values())
