"""Hooking the classroom into live labs: exercise grading, the scenario player and the demo banner.

Each ``ensure_*`` finds the lab's running ``LiveLab`` (starting it if need be) and makes sure the
hook and the view are on it, once per running lab: a lab restarted in this process gets them again
the next time someone opens its page. What the hooks learn that must outlive the process (a passed
check, the start snapshot, the spec the setup built) is saved by one background thread, never by
the driver thread itself, which must not wait on the database.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from django.db import close_old_connections
from django.utils import timezone

from lab.classroom import content
from lab.classroom.grading import ExerciseSession
from lab.classroom.models import Demo, ExerciseProgress, ScenarioLab
from lab.classroom.player import ScenarioPlayer
from lab.labs import live_of, register_fragment, save_spec
from lab.models import Lab
from lab.runtime.live import LiveLab

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

_writer: ThreadPoolExecutor | None = None
_writer_lock = threading.Lock()


def save_later(job: Callable[[], None]) -> Future[None]:
    """Run a database write on the classroom's writer thread (in order), and log a failure."""
    global _writer
    with _writer_lock:
        if _writer is None:
            _writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="classroom-db")
        executor = _writer

    def run() -> None:
        try:
            job()
        except Exception:
            log.exception("classroom: saving failed")
            raise
        finally:
            close_old_connections()

    return executor.submit(run)


# ---------------------------------------------------------------------------- which hooks run where

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


def ensure_exercise(progress: ExerciseProgress, *, fresh: bool = False) -> ExerciseSession | None:
    """The grading session on the progress's lab (hooked in now if it is not); None if the lab or
    the exercise is gone. ``fresh``: the lab was just made, so the setup plays from its first step."""
    lab = progress.lab
    exercise = content.exercise(progress.exercise)
    if lab is None or exercise is None:
        return None
    live = live_of(lab)
    with _lock:
        found = _exercises.get(lab.slug)
        if found is not None and found[0] is live and not fresh:
            return found[1]
        progress_id, lab_id = progress.pk, lab.pk

        def on_pass(index: int, when: str, complete: bool) -> None:
            save_later(lambda: _save_pass(progress_id, index, when, complete))

        def on_start(snapshot: dict[str, Any], running: LiveLab) -> None:
            spec = running.spec
            save_later(lambda: _save_start(progress_id, lab_id, snapshot, spec))

        session = ExerciseSession(
            exercise,
            lab=lab.slug,
            passed=None if fresh else {int(k): str(v) for k, v in (progress.checks or {}).items()},
            start=None if fresh else (progress.start or None),
            on_pass=on_pass,
            on_start=on_start,
        )
        _exercises[lab.slug] = (live, session)
    live.add_tick_hook(EXERCISE_HOOK, session.tick, busy=lambda: session.busy)
    live.add_view(EXERCISE_VIEW, lambda _lab: session.view)
    return session


def _save_pass(progress_id: int, index: int, when: str, complete: bool) -> None:
    progress = ExerciseProgress.objects.filter(pk=progress_id).first()
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


def _save_start(progress_id: int, lab_id: int, snapshot: dict[str, Any], spec: Any) -> None:
    ExerciseProgress.objects.filter(pk=progress_id).update(start=snapshot)
    lab = Lab.objects.filter(pk=lab_id).first()
    if lab is not None:
        save_spec(lab, spec)


def ensure_player(scenario_lab: ScenarioLab) -> ScenarioPlayer | None:
    """The scenario player on the lab (a new one, at the first step, if this process has none)."""
    scenario = content.scenario(scenario_lab.scenario)
    if scenario is None:
        return None
    lab = scenario_lab.lab
    live = live_of(lab)
    with _lock:
        found = _players.get(lab.slug)
        if found is not None and found[0] is live:
            return found[1]
        made = ScenarioPlayer(scenario, lab=lab.slug)
        _players[lab.slug] = (live, made)
    live.add_tick_hook(PLAYER_HOOK, made.tick, busy=lambda: made.busy)
    live.add_view(PLAYER_VIEW, lambda _lab: made.view)
    return made


# ---------------------------------------------------------------------------- the demo banner


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


def set_demo_view(view: DemoView) -> None:
    with _lock:
        _demos[view.lab] = view


def ensure_demo(demo: Demo) -> LiveLab:
    """The demo's lab, live, with the banner view on it."""
    lab = demo.lab
    live = live_of(lab)
    with _lock:
        current = _demos.get(lab.slug)
        if current is None or current.code != demo.join_code or current.active != demo.active:
            _demos[lab.slug] = DemoView(
                lab=lab.slug,
                code=demo.join_code,
                active=demo.active,
                copies=current.copies if current else 0,
                copies_ready=current.copies_ready if current else 0,
                copied_at=current.copied_at if current else "",
            )
    slug = lab.slug
    live.add_view(DEMO_VIEW, lambda _lab: demo_view(slug))
    return live


def bump_copies_ready(slug: str) -> None:
    with _lock:
        view = _demos.get(slug)
        if view is not None:
            _demos[slug] = DemoView(
                lab=view.lab,
                code=view.code,
                active=view.active,
                copies=view.copies,
                copies_ready=view.copies_ready + 1,
                copied_at=view.copied_at,
            )


def reattach_all() -> None:
    """After a server start: hook the classroom back into every lab that had it (make run's boot)."""
    for progress in ExerciseProgress.objects.filter(lab__isnull=False, completed__isnull=True).select_related(
        "lab"
    ):
        ensure_exercise(progress)
    for scenario_lab in ScenarioLab.objects.select_related("lab"):
        ensure_player(scenario_lab)
    for demo in Demo.objects.filter(active=True).select_related("lab"):
        ensure_demo(demo)
