"""What the classroom teaches from: the shipped exercises and scenarios, and Markdown made safe.

Exercises and scenarios are YAML files (``fixtures/exercises``, ``fixtures/scenarios``; the settings
``LAB_EXERCISES_DIR`` and ``LAB_SCENARIOS_DIR`` point elsewhere). They are read again only when a
file changes. Instructions are Markdown: rendered with raw HTML off, so a file can never put a
script, a style or a form on a student's page (markdown-it also refuses javascript: links).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt

from lab.classroom.models import ExerciseDefinition
from lab.exercises.format import Exercise, ExerciseError
from lab.exercises.format import load_all as load_exercises
from lab.exercises.format import parse as parse_exercise
from lab.scenarios.format import Scenario, ScenarioError
from lab.scenarios.format import load as load_scenario

FIXTURES = Path(settings.BASE_DIR) / "fixtures"

_markdown = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).enable("table")


def markdown_html(text: str) -> SafeString:
    """Markdown to HTML; raw HTML in the text comes out escaped, as text."""
    # Safe: with html off, markdown-it escapes every tag in the text and drops unsafe link schemes.
    return mark_safe(_markdown.render(text))


def exercises_dir() -> Path:
    return Path(getattr(settings, "LAB_EXERCISES_DIR", FIXTURES / "exercises"))


def scenarios_dir() -> Path:
    return Path(getattr(settings, "LAB_SCENARIOS_DIR", FIXTURES / "scenarios"))


def _stamp(directory: Path) -> tuple[tuple[str, int], ...]:
    return tuple(sorted((p.name, p.stat().st_mtime_ns) for p in directory.glob("*.yaml")))


_lock = threading.Lock()
_exercises: dict[Path, tuple[tuple[tuple[str, int], ...], tuple[Exercise, ...]]] = {}
_scenarios: dict[Path, tuple[tuple[tuple[str, int], ...], tuple[ScenarioEntry, ...]]] = {}


@dataclass(frozen=True, slots=True, kw_only=True)
class ScenarioEntry:
    """A scenario file, or why it cannot be read (a broken file is listed with its error, not hidden)."""

    slug: str
    scenario: Scenario | None
    error: str = ""

    @property
    def name(self) -> str:
        return self.scenario.name if self.scenario is not None else self.slug


def exercises() -> tuple[Exercise, ...]:
    """Every exercise, in teaching order: the shipped files, overridden by the admin's definitions."""
    directory = exercises_dir()
    stamp = _stamp(directory)
    with _lock:
        cached = _exercises.get(directory)
        if cached is not None and cached[0] == stamp and not _stale_definitions():
            return cached[1]
    shipped = {e.slug: e for e in load_exercises(directory)}
    for definition in _definitions():
        if not definition.enabled:
            shipped.pop(definition.slug, None)
            continue
        try:
            shipped[definition.slug] = parse_exercise(
                definition.source, source=f"exercise {definition.slug}", slug=definition.slug
            )
        except (ExerciseError, ValueError):
            continue  # the admin refuses to save a broken one; an old broken row is skipped
    loaded = tuple(sorted(shipped.values(), key=lambda e: (e.order, e.title)))
    with _lock:
        _exercises[directory] = (stamp, loaded)
        _definitions_seen[0] = _definitions_version[0]
    return loaded


# The admin's exercise rows: read in sync code only (an async view reuses what is cached), and
# read again after a save or a delete (see the signal handlers in apps.py).
_definitions_version = [0]
_definitions_seen = [-1]


def definitions_changed() -> None:
    _definitions_version[0] += 1


def _stale_definitions() -> bool:
    return _definitions_seen[0] != _definitions_version[0] and not _in_event_loop()


def _in_event_loop() -> bool:
    import asyncio

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _definitions() -> list[ExerciseDefinition]:
    if _in_event_loop():
        return []
    from django.db.utils import DatabaseError

    try:
        return list(ExerciseDefinition.objects.all())
    except DatabaseError:  # before migrations
        return []


def exercise(slug: str) -> Exercise | None:
    return next((e for e in exercises() if e.slug == slug), None)


def scenarios() -> tuple[ScenarioEntry, ...]:
    """Every scenario file, by name; a malformed one carries its error (file and line)."""
    directory = scenarios_dir()
    stamp = _stamp(directory)
    with _lock:
        cached = _scenarios.get(directory)
        if cached is not None and cached[0] == stamp:
            return cached[1]
    entries = []
    for path in sorted(directory.glob("*.yaml")):
        try:
            entries.append(ScenarioEntry(slug=path.stem, scenario=load_scenario(path)))
        except ScenarioError as error:
            entries.append(ScenarioEntry(slug=path.stem, scenario=None, error=str(error)))
    loaded = tuple(sorted(entries, key=lambda e: e.name.lower()))
    with _lock:
        _scenarios[directory] = (stamp, loaded)
    return loaded


def scenario(slug: str) -> Scenario | None:
    entry = next((e for e in scenarios() if e.slug == slug), None)
    return entry.scenario if entry is not None else None
