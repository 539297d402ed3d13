"""``python manage.py runscenario``: progress, a pass/fail table, and the exit code."""

from __future__ import annotations

import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from tests.scenarios.helpers import alias_bomb

ROOT = Path(__file__).resolve().parents[2]


def test_a_passing_scenario_prints_a_table_and_exits_zero() -> None:
    out = StringIO()
    call_command("runscenario", str(ROOT / "fixtures/scenarios/consumer-rewind.yaml"), stdout=out)
    text = out.getvalue()
    assert "A consumer rewinds and reads again" in text
    assert "PASS  line" in text
    assert "PASSED: 9/9 steps" in text


def test_a_failing_scenario_exits_non_zero_and_says_what_differed(tmp_path: Path) -> None:
    scenario = tmp_path / "wrong.yaml"
    scenario.write_text(
        "name: wrong on purpose\nsteps:\n  - create_topic: {name: t, replication_factor: 3}\n"
        "  - expect: {partition: t-0, leader: 3}\n"
    )
    out = StringIO()
    with pytest.raises(SystemExit) as exited:
        call_command("runscenario", str(scenario), stdout=out)
    assert exited.value.code == 1
    assert "FAIL  line 4" in out.getvalue()
    assert "t-0 leader: expected 3, got 1" in out.getvalue()


def test_a_malformed_file_exits_two_naming_the_line(tmp_path: Path) -> None:
    scenario = tmp_path / "broken.yaml"
    scenario.write_text("name: broken\nsteps:\n  - kill: one\n")
    out = StringIO()
    with pytest.raises(SystemExit) as exited:
        call_command("runscenario", str(scenario), stdout=out)
    assert exited.value.code == 2
    assert "broken.yaml line 3: step 'kill': 'broker' must be an integer, not 'one'" in out.getvalue()


def _python_m(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lab.scenarios", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_deeply_nested_brackets_exit_two_naming_the_line_without_a_traceback(tmp_path: Path) -> None:
    scenario = tmp_path / "deep.yaml"
    scenario.write_text("name: deep\nsteps:\n  - wait: " + "[" * 5000 + "]" * 5000 + "\n")
    done = _python_m(str(scenario))
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    assert f"{scenario} line 3: the YAML is nested more than" in done.stdout


def test_an_alias_bomb_exits_two_with_a_short_message(tmp_path: Path) -> None:
    scenario = tmp_path / "bomb.yaml"
    scenario.write_text(alias_bomb(6))
    out = StringIO()
    with pytest.raises(SystemExit) as exited:
        call_command("runscenario", str(scenario), stdout=out)
    assert exited.value.code == 2
    assert len(out.getvalue()) < 400
    assert "bomb.yaml line 5" in out.getvalue()


def test_a_step_beyond_the_bounds_exits_two_before_running(tmp_path: Path) -> None:
    scenario = tmp_path / "forever.yaml"
    scenario.write_text("name: forever\nsteps:\n  - create_topic: t\n  - wait: 1000000000000\n")
    done = _python_m(str(scenario))
    assert done.returncode == 2
    assert "forever.yaml line 4: step 'wait': 'ms' must be at most 3600000 ms" in done.stdout
