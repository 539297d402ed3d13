"""Hooking the classroom into live labs: exercise grading, the scenario player and the demo banner.

Two sides. The web side's ``ensure_*`` (a page, a view, the server's boot) asks the lab, with a
named command (``lab.classroom.commands``: JSON arguments, no closure), to have the hook and the
view on it; it does not wait for the answer. The lab side (``hook_*``, ``demo_*``) runs those
commands on the lab's driver thread: it keeps the sessions, players and banners of the labs that
run in this process, once per running lab (a lab restarted gets them again the next time someone
opens its page), so they live where the lab lives, whichever process that is. What the hooks learn
that must outlive the process (a passed check, the start snapshot, the spec the setup built) is
saved by one background thread of the lab's process, never by the driver thread itself, which must
not wait on the database.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Collection, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, replace
from typing import Any

from django.utils import timezone

from lab.classroom.grading import ExerciseSession
from lab.classroom.models import Demo, ExerciseProgress, ScenarioLab
from lab.classroom.player import ScenarioPlayer
from lab.db_writer import write_later
from lab.engine.errors import IllegalState
from lab.exercises.format import Exercise
from lab.labs import live_of, register_fragment, save_spec
from lab.models import Lab
from lab.runtime.live import LiveLab
from lab.scenarios.format import Scenario

log = logging.getLogger(__name__)

EXERCISE_HOOK = "classroom.exercise"
PLAYER_HOOK = "classroom.player"
EXERCISE_VIEW = "exercise"
PLAYER_VIEW = "scenario"
DEMO_VIEW = "demo"

FRAGMENTS = {
    EXERCISE_VIEW: "classroom/_exercise_live.html",
    PLAYER_VIEW: "classroom/_player_live.html",
    DEMO_VIEW: "classroom/_demo_live.html",
}


def register_fragments() -> None:
    for key, template in FRAGMENTS.items():
        register_fragment(key, template)


# ---------------------------------------------------------------------------- saving off the driver thread


def save_later(job: Callable[[], None]) -> Future[None]:
    """Run a database write on the writer thread (in order), and log a failure."""
    return write_later(job, "classroom: saving")


# ---------------------------------------------------------------------------- the lab side (driver thread)

_lock = threading.Lock()
_exercises: dict[str, tuple[LiveLab, ExerciseSession]] = {}
_players: dict[str, tuple[LiveLab, ScenarioPlayer]] = {}
_demos: dict[str, DemoView] = {}


def exercise_session(slug: str) -> ExerciseSession | None:
    """The exercise session hooked into lab ``slug`` in this process, if any."""
    with _lock:
        found = _exercises.get(slug)
    return found[1] if found is not None else None


def player(slug: str) -> ScenarioPlayer | None:
    with _lock:
        found = _players.get(slug)
    return found[1] if found is not None else None


def exercise_on(lab: LiveLab) -> ExerciseSession | None:
    """The exercise session hooked into this very lab (not an earlier run of its slug)."""
    with _lock:
        found = _exercises.get(lab.slug)
    return found[1] if found is not None and found[0] is lab else None


def player_on(lab: LiveLab) -> ScenarioPlayer | None:
    with _lock:
        found = _players.get(lab.slug)
    return found[1] if found is not None and found[0] is lab else None


def hook_exercise(
    lab: LiveLab,
    exercise: Exercise,
    *,
    progress_id: int,
    lab_id: int,
    passed: Mapping[int, str],
    start: Mapping[str, Any],
    fresh: bool,
) -> ExerciseSession:
    """The grading session on ``lab`` (hooked in now if it is not, or if ``fresh``: the lab was just
    made, so the setup plays from its first step). Driver thread: the command ``classroom.exercise``."""
    found = exercise_on(lab)
    if found is not None and found.exercise.slug == exercise.slug and not fresh:
        return found

    slug = lab.slug

    def on_pass(index: int, when: str, complete: bool) -> None:
        save_later(lambda: _save_pass(progress_id, slug, index, when, complete))

    def on_start(snapshot: dict[str, Any], running: LiveLab) -> None:
        spec, version = running.versioned_spec
        save_later(lambda: _save_start(progress_id, lab_id, slug, snapshot, spec, version))

    session = ExerciseSession(
        exercise,
        lab=lab.slug,
        passed=None if fresh else passed,
        start=None if fresh else (start or None),
        on_pass=on_pass,
        on_start=on_start,
    )
    with _lock:
        _exercises[lab.slug] = (lab, session)
    lab.add_tick_hook(EXERCISE_HOOK, session.tick, busy=lambda: session.busy)
    lab.add_view(EXERCISE_VIEW, lambda _lab: session.view)
    return session


# The rows are named by the command's arguments: only those of this very lab are written.


def _save_pass(progress_id: int, slug: str, index: int, when: str, complete: bool) -> None:
    progress = ExerciseProgress.objects.filter(pk=progress_id, lab__slug=slug).first()
    if progress is None:
        return
    checks = dict(progress.checks or {})
    checks.setdefault(str(index), when)
    progress.checks = checks
    fields = ["checks"]
    if complete and progress.completed is None:
        progress.completed = timezone.now()
        fields.append("completed")
    progress.save(update_fields=fields)


def _save_start(
    progress_id: int, lab_id: int, slug: str, snapshot: dict[str, Any], spec: Any, version: int
) -> None:
    ExerciseProgress.objects.filter(pk=progress_id, lab__slug=slug).update(start=snapshot)
    lab = Lab.objects.filter(pk=lab_id, slug=slug).first()
    if lab is not None:
        save_spec(lab, spec, version)


def hook_player(lab: LiveLab, scenario: Scenario) -> ScenarioPlayer:
    """The scenario player on ``lab`` (a new one, at the first step, if it has none). Driver thread:
    the command ``classroom.scenario``."""
    found = player_on(lab)
    if found is not None and found.scenario.slug == scenario.slug:
        return found
    made = ScenarioPlayer(scenario, lab=lab.slug)
    with _lock:
        _players[lab.slug] = (lab, made)
    lab.add_tick_hook(PLAYER_HOOK, made.tick, busy=lambda: made.busy)
    lab.add_view(PLAYER_VIEW, lambda _lab: made.view)
    return made


@dataclass(frozen=True, slots=True, kw_only=True)
class DemoView:
    """What every page watching a demo shows: the code, and whether copies were handed out."""

    lab: str
    code: str
    active: bool
    copies: int  # copies handed out so far
    copies_ready: int
    copied_at: str  # when the last hand-out started ("" if never)


def demo_view(slug: str) -> DemoView | None:
    with _lock:
        return _demos.get(slug)


def demo_hook(lab: LiveLab, *, code: str, active: bool) -> DemoView:
    """The banner on a demo's lab, with its code and whether it runs (the copies counted so far are
    kept). Driver thread: the command ``classroom.demo``."""
    slug = lab.slug
    with _lock:
        current = _demos.get(slug)
        view = (
            replace(current, code=code, active=active)
            if current is not None
            else DemoView(lab=slug, code=code, active=active, copies=0, copies_ready=0, copied_at="")
        )
        _demos[slug] = view
    lab.add_view(DEMO_VIEW, lambda _lab: demo_view(slug))
    return view


def demo_copies(lab: LiveLab, *, copies: int, copied_at: str) -> DemoView:
    """Copies were handed out: none of them ready yet. Driver thread: ``classroom.demo-copies``."""
    return _change_demo(lab, lambda view: replace(view, copies=copies, copies_ready=0, copied_at=copied_at))


def demo_copy_ready(lab: LiveLab) -> DemoView:
    """One more copy is filled. Driver thread (``classroom.demo-copy-ready``): one at a time, so no
    count is lost when two copies finish together."""
    return _change_demo(lab, lambda view: replace(view, copies_ready=view.copies_ready + 1))


def _change_demo(lab: LiveLab, change: Callable[[DemoView], DemoView]) -> DemoView:
    with _lock:
        view = _demos.get(lab.slug)
        if view is None:
            raise IllegalState(f"lab {lab.slug} shows no demo banner")
        _demos[lab.slug] = view = change(view)
    return view


# ---------------------------------------------------------------------------- the web side (commands)


def ask(live: LiveLab, name: str, args: dict[str, Any]) -> Future[Any]:
    """Ask the lab for ``name`` without waiting; a refusal is logged (the page shows what the lab has)."""
    future = live.act(name, args)

    def done(f: Future[Any]) -> None:
        error = f.exception()
        if error is not None:
            log.warning("classroom: %s on lab %s failed: %s", name, live.slug, error)

    future.add_done_callback(done)
    return future


def ensure_exercise(progress: ExerciseProgress, *, fresh: bool = False) -> LiveLab | None:
    """Ask the progress's lab to grade the exercise (``classroom.exercise``); None if the lab is gone.
    ``fresh``: the lab was just made, so the setup plays from its first step."""
    lab = progress.lab
    if lab is None:
        return None
    live = live_of(lab)
    args: dict[str, Any] = {
        "exercise": progress.exercise,
        "progress": progress.pk,
        "lab": lab.pk,
        "passed": {str(k): str(v) for k, v in (progress.checks or {}).items()},
        "start": dict(progress.start or {}),
        "fresh": fresh,
    }
    ask(live, "classroom.exercise", args)
    return live


def ensure_player(scenario_lab: ScenarioLab) -> LiveLab:
    """Ask the lab to have the scenario's player (``classroom.scenario``)."""
    live = live_of(scenario_lab.lab)
    ask(live, "classroom.scenario", {"scenario": scenario_lab.scenario})
    return live


def ensure_demo(demo: Demo) -> LiveLab:
    """The demo's lab, live, asked to show the banner with the demo's code (``classroom.demo``)."""
    live = live_of(demo.lab)
    ask(live, "classroom.demo", {"code": demo.join_code, "active": demo.active})
    return live


def reattach_all(slugs: Collection[str] | None = None) -> None:
    """Hook the classroom back into every lab that had it (make run's boot), or into the labs
    ``slugs`` only: a process that starts a lab again (another worker taking it over) calls this, since
    the pages already watching it send nothing until they are opened again."""
    progresses = ExerciseProgress.objects.filter(lab__isnull=False, completed__isnull=True)
    scenario_labs = ScenarioLab.objects.all()
    demos = Demo.objects.filter(active=True)
    if slugs is not None:
        progresses = progresses.filter(lab__slug__in=slugs)
        scenario_labs = scenario_labs.filter(lab__slug__in=slugs)
        demos = demos.filter(lab__slug__in=slugs)
    for progress in progresses.select_related("lab"):
        ensure_exercise(progress)
    for scenario_lab in scenario_labs.select_related("lab"):
        ensure_player(scenario_lab)
    for demo in demos.select_related("lab"):
        ensure_demo(demo)
