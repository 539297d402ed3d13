"""An exercise file: read with the scenarios' bounded YAML loader, errors naming the exercise file's line."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest

from lab.exercises.format import ExerciseError, load, parse
from tests.scenarios.helpers import alias_bomb

CHECKS = "checks:\n  - description: a topic\n    all: [{topic_exists: t}]\n"


def _exercise(setup_steps: str, extra: str = "") -> str:
    return f"title: T\ninstructions: x\nsetup:\n  steps:\n{setup_steps}{CHECKS}{extra}"


def test_a_setup_error_names_the_line_of_the_exercise_file() -> None:
    text = _exercise("    - create_topic: t\n    - kill: one\n")
    with pytest.raises(ExerciseError) as raised:
        parse(text, source="ex.yaml")
    assert str(raised.value).startswith("ex.yaml line 6: step 'kill': 'broker' must be an integer")


def test_a_solution_error_names_its_line_too() -> None:
    text = _exercise("    - create_topic: t\n", "solution:\n  - wait: -1\n")
    with pytest.raises(ExerciseError, match=r"^ex.yaml line 10: step 'wait'"):
        parse(text, source="ex.yaml")


def test_an_alias_bomb_in_the_setup_is_refused_with_a_short_error() -> None:
    bomb = alias_bomb(6).split("steps:\n", 1)[1]  # the bomb's step, under this exercise's setup
    text = _exercise("".join("  " + line + "\n" for line in bomb.splitlines()))
    tracemalloc.start()
    try:
        with pytest.raises(ExerciseError) as raised:
            parse(text, source="ex.yaml")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 5_000_000
    assert len(str(raised.value)) < 300
    assert "alias" in str(raised.value)


def test_an_alias_bomb_anywhere_is_refused() -> None:
    levels = ", ".join(
        [f"&l0 [{', '.join(['x'] * 9)}]"] + [f"&l{n} [{', '.join([f'*l{n - 1}'] * 9)}]" for n in range(1, 6)]
    )
    text = f"title: T\ninstructions: [{levels}]\nsetup:\n  steps: [{{create_topic: t}}]\n{CHECKS}"
    with pytest.raises(ExerciseError) as raised:
        parse(text, source="ex.yaml")
    assert str(raised.value).startswith("ex.yaml line 2:")
    assert len(str(raised.value)) < 300


def test_deep_nesting_is_an_exercise_error_naming_the_line() -> None:
    text = "title: T\ninstructions: " + "[" * 5000 + "]" * 5000 + "\n"
    with pytest.raises(ExerciseError, match=r"^ex\.yaml line 2: the YAML is nested more than"):
        parse(text, source="ex.yaml")


def test_an_oversized_exercise_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    path.write_text(_exercise("    - create_topic: t\n") + "summary: " + "x" * 300_000 + "\n")
    with pytest.raises(ExerciseError, match="larger than 200000 characters"):
        load(path)


def test_setup_steps_are_bounded_like_a_scenario() -> None:
    with pytest.raises(ExerciseError, match="'ms' must be at most 3600000 ms"):
        parse(_exercise("    - wait: 1000000000000\n"), source="ex.yaml")


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("covers: 5\n", "'covers' is a list of subjects"),
        ("order: [1]\n", "'order' is a whole number"),
        ("questions: 5\n", "'questions' is a list"),
    ],
)
def test_fields_of_the_wrong_shape_are_exercise_errors(extra: str, message: str) -> None:
    with pytest.raises(ExerciseError, match=message):
        parse(_exercise("    - create_topic: t\n", extra), source="ex.yaml")


def test_checks_of_the_wrong_shape_are_exercise_errors() -> None:
    text = "title: T\ninstructions: x\nsetup:\n  steps: [{create_topic: t}]\nchecks: 5\n"
    with pytest.raises(ExerciseError, match="'checks' is a list"):
        parse(text, source="ex.yaml")
