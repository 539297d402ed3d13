"""The shipped exercises and scenarios as the classroom lists them, and Markdown made safe."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from pytest_django.fixtures import Settings

from lab.classroom import content


def test_markdown_renders_and_escapes_raw_html() -> None:
    html = content.markdown_html(
        "A **partition** is a `log`.\n\n<script>alert(1)</script>\n\n[x](javascript:alert(1)) <b onclick=x>hi</b>"
    )
    assert "<strong>partition</strong>" in html
    assert "<code>log</code>" in html
    assert "<script>" not in html
    assert "&lt;script&gt;" in html
    assert "<b onclick" not in html
    assert 'href="javascript' not in html


@pytest.mark.django_db  # the admin's exercise rows are read too
def test_every_shipped_exercise_and_scenario_is_listed_in_order() -> None:
    exercises = content.exercises()
    assert [e.order for e in exercises] == sorted(e.order for e in exercises)
    assert content.exercise("1-partitions-and-offsets") is exercises[0]
    assert content.exercise("nope") is None
    entries = content.scenarios()
    assert len(entries) >= 11
    assert all(e.scenario is not None and not e.error for e in entries)
    failover = content.scenario("leader-failover")
    assert failover is not None
    assert failover.name == "Leader failover"


def test_a_broken_scenario_is_listed_with_its_error_and_a_changed_file_is_read_again(
    settings: Settings, tmp_path: Path
) -> None:
    settings.LAB_SCENARIOS_DIR = tmp_path
    (tmp_path / "ok.yaml").write_text("name: Fine\nsteps:\n  - create_topic: orders\n")
    (tmp_path / "bad.yaml").write_text("name: Broken\nsteps:\n  - explode: 1\n")
    entries = {e.slug: e for e in content.scenarios()}
    assert entries["ok"].scenario is not None
    assert entries["bad"].scenario is None
    assert "bad.yaml line 3" in entries["bad"].error
    assert "unknown step 'explode'" in entries["bad"].error
    assert content.scenario("bad") is None
    (tmp_path / "ok.yaml").write_text("name: Renamed\nsteps:\n  - create_topic: orders\n")
    os.utime(tmp_path / "ok.yaml", ns=(1, 2_000_000_000_000_000_000))
    assert content.scenario("ok").name == "Renamed"  # type: ignore[union-attr]


def test_a_scenario_beyond_the_bounds_is_listed_as_broken_and_never_plays(
    settings: Settings, tmp_path: Path
) -> None:
    settings.LAB_SCENARIOS_DIR = tmp_path
    (tmp_path / "forever.yaml").write_text(
        "name: Forever\nsteps:\n  - produce: {topic: t, count: 1000000000}\n"
    )
    (entry,) = content.scenarios()
    assert entry.scenario is None
    assert "forever.yaml line 3" in entry.error
    assert "'count' must be at most 1000 records" in entry.error
    assert content.scenario("forever") is None
