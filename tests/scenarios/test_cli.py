"""``python manage.py runscenario``: progress, a pass/fail table, and the exit code."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

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
