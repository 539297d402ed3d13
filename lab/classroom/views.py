"""The classroom's pages: exercises, the class's progress, demos, and scenarios opened as labs.

Who may do what is decided by ``lab.access``: a page needs a login; a lab someone may not see is a
404; an instructor-only page or action is a 403 for a student; a demo is read-only for its viewers.
Controls that wait for a lab's driver thread are async views (the ``act`` pattern), so a slow lab
never holds the server's one thread for sync views.
"""

from __future__ import annotations

import asyncio
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import redirect_to_login
from django.db import IntegrityError, transaction
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from lab import access
from lab.accounts import throttle
from lab.accounts.models import Role
from lab.classroom import attach, commands, content, copying, handout
from lab.classroom.models import CODE_ALPHABET, Demo, DemoCopy, DemoViewer, ExerciseProgress, ScenarioLab
from lab.engine.errors import IllegalArgument, KafkaError
from lab.exercises.format import Exercise
from lab.labs import create_lab, live_of, zookeeper_outage
from lab.limits import LabLimitReached
from lab.models import Lab
from lab.runtime.live import LiveLab
from lab.scenarios.format import Scenario

WAIT_S = 60.0


def _exercise_or_404(slug: str) -> Exercise:
    exercise = content.exercise(slug)
    if exercise is None:
        raise Http404("No such exercise.")
    return exercise


def _toast(ok: bool, text: str, status: int = 200) -> HttpResponse:
    return HttpResponse(render_to_string("lab/_toast.html", {"ok": ok, "text": text}), status=status)


# ---------------------------------------------------------------------------- exercises


def _status(progress: ExerciseProgress | None, exercise: Exercise) -> dict[str, Any]:
    """not started / in progress (n of m checks) / complete, for lists and the class table."""
    total = len(exercise.checks)
    if progress is None or (progress.lab_id is None and not progress.checks):
        return {"state": "not-started", "label": "not started", "passed": 0, "total": total}
    passed = len(progress.checks or {})
    if progress.completed is not None:
        return {"state": "complete", "label": "complete", "passed": total, "total": total}
    return {
        "state": "in-progress",
        "label": f"in progress: {passed} of {total} check{'s' if total != 1 else ''} passed",
        "passed": passed,
        "total": total,
    }


def _list_context(request: HttpRequest) -> dict[str, Any]:
    mine = {p.exercise: p for p in ExerciseProgress.objects.filter(user=request.user)}
    rows = [
        {"exercise": e, "progress": mine.get(e.slug), "status": _status(mine.get(e.slug), e)}
        for e in content.exercises()
    ]
    joined = (
        DemoViewer.objects.filter(user=request.user, demo__active=True)
        .select_related("demo__lab__owner")
        .order_by("-joined")
    )
    return {
        "rows": rows,
        "joined": joined,
        "is_instructor": access.is_instructor(request.user),
        "kafka_version": settings.LAB_KAFKA_VERSION,
        "code_alphabet": CODE_ALPHABET,
    }


@require_GET
@login_required
def exercise_list(request: HttpRequest) -> HttpResponse:
    return render(request, "classroom/exercises.html", _list_context(request))


@require_GET
@login_required
def exercise_page(request: HttpRequest, exercise: str) -> HttpResponse:
    return _exercise_page(request, _exercise_or_404(exercise))


def _exercise_page(
    request: HttpRequest, found: Exercise, *, start_error: str = "", status: int = 200
) -> HttpResponse:
    progress = ExerciseProgress.objects.filter(user=request.user, exercise=found.slug).first()
    return render(
        request,
        "classroom/exercise.html",
        {
            "start_error": start_error,
            "exercise": found,
            "progress": progress,
            "status": _status(progress, found),
            "instructions": content.markdown_html(found.instructions),
            "questions": questions_of(found, progress, editable=True),
            "check_rows": [
                {
                    "description": c.description,
                    "passed": str(i) in ((progress.checks if progress else {}) or {}),
                }
                for i, c in enumerate(found.checks)
            ],
            "is_instructor": access.is_instructor(request.user),
            "kafka_version": settings.LAB_KAFKA_VERSION,
            "zookeeper_outage": zookeeper_outage(progress.lab if progress else None),
        },
        status=status,
    )


def questions_of(
    exercise: Exercise, progress: ExerciseProgress | None, *, editable: bool
) -> list[dict[str, Any]]:
    answers = (progress.answers if progress is not None else {}) or {}
    out = []
    for index, question in enumerate(exercise.questions):
        chosen = answers.get(str(index))
        out.append(
            {
                "exercise": exercise.slug,
                "index": index,
                "q": question,
                "chosen": chosen,
                "right": chosen == question.answer,
                "explain": content.markdown_html(question.explain) if chosen is not None else "",
                "editable": editable,
            }
        )
    return out


@require_POST
@login_required
def exercise_start(request: HttpRequest, exercise: str) -> HttpResponse:
    """The student's own lab for the exercise (made now if they have none), with the setup playing."""
    found = _exercise_or_404(exercise)
    try:
        # One transaction, the progress row locked: a double click makes one lab, not two.
        with transaction.atomic():
            progress, _ = ExerciseProgress.objects.get_or_create(user=request.user, exercise=found.slug)
            progress = ExerciseProgress.objects.select_for_update().select_related("lab").get(pk=progress.pk)
            fresh = progress.lab is None
            if fresh:
                progress.lab = _exercise_lab(request.user, found)
                progress.checks, progress.start, progress.completed = {}, {}, None
                progress.save(update_fields=["lab", "checks", "start", "completed"])
    except LabLimitReached as refused:
        return _exercise_page(request, found, start_error=refused.tell(request.user), status=409)
    except KafkaError as error:
        return _exercise_page(request, found, start_error=f"{error.name}: {error.message}", status=400)
    assert progress.lab is not None
    attach.ensure_exercise(progress, fresh=fresh)
    return redirect(progress.lab.get_absolute_url())


def _exercise_lab(user: Any, found: Exercise) -> Lab:
    lab = create_lab(
        user, found.title, brokers=found.setup.cluster.brokers, config=dict(found.setup.cluster.config)
    )
    lab.settings = {**lab.settings, "seed": found.setup.cluster.seed}
    lab.save(update_fields=["settings"])
    return lab


@require_POST
async def exercise_restart(request: HttpRequest, exercise: str) -> HttpResponse:
    """Start over: a fresh cluster for the same lab, the setup played again, the checks not passed."""
    user = await request.auser()  # type: ignore[attr-defined]
    if not user.is_authenticated:
        return redirect_to_login(request.get_full_path())
    found = _exercise_or_404(exercise)
    progress = (
        await ExerciseProgress.objects.select_related("lab").filter(user=user, exercise=found.slug).afirst()
    )
    if progress is None or progress.lab is None:
        return redirect("classroom:exercise", exercise=found.slug)
    # The session is hooked first (commands run in order), so the start-over finds it on the lab.
    live = await asyncio.to_thread(attach.ensure_exercise, progress)
    if live is None:
        return redirect("classroom:exercise", exercise=found.slug)
    progress.checks, progress.start, progress.completed = {}, {}, None
    await progress.asave(update_fields=["checks", "start", "completed"])
    try:
        await asyncio.wait_for(asyncio.wrap_future(live.act("classroom.start-over", {})), WAIT_S)
    except KafkaError as error:
        return _toast(False, f"{error.name}: {error.message}", status=409)
    except TimeoutError:
        return _toast(False, f"The lab did not answer within {WAIT_S:g} s.", status=504)
    await sync_to_async(_save_lab_spec)(progress.lab, live)
    return redirect(progress.lab.get_absolute_url())


def _save_lab_spec(lab: Lab, live: LiveLab) -> None:
    from lab.labs import save_live_spec

    save_live_spec(lab, live)


@require_POST
@login_required
def exercise_answer(request: HttpRequest, exercise: str, question: int) -> HttpResponse:
    """Lock in a prediction: the first answer stays; then the explanation shows."""
    found = _exercise_or_404(exercise)
    if not 0 <= question < len(found.questions):
        raise Http404("No such question.")
    q = found.questions[question]
    progress, _ = ExerciseProgress.objects.get_or_create(user=request.user, exercise=found.slug)
    answers = dict(progress.answers or {})
    error = ""
    status = 200
    if str(question) not in answers:
        raw = request.POST.get("choice", "").strip()
        try:
            choice = int(raw)
        except ValueError:
            choice = -1
        if not 0 <= choice < len(q.choices):
            error = "Pick one of the answers first: your prediction is what the lab then shows you."
            status = 400
        else:
            answers[str(question)] = choice
            progress.answers = answers
            progress.save(update_fields=["answers"])
    row = questions_of(found, progress, editable=True)[question]
    row["error"] = error
    return render(request, "classroom/_question.html", {"row": row}, status=status)


# ---------------------------------------------------------------------------- the class (instructors)


@require_GET
@login_required
def class_progress(request: HttpRequest) -> HttpResponse:
    """Students by exercises (not started / in progress / complete), and every student's labs."""
    access.require_instructor(request.user)
    User = get_user_model()
    students = list(
        User.objects.filter(is_active=True, is_staff=False)
        .exclude(profile__role=Role.INSTRUCTOR)
        .order_by("username")
    )
    exercises = content.exercises()
    progress: dict[tuple[int, str], ExerciseProgress] = {
        (p.user_id, p.exercise): p
        for p in ExerciseProgress.objects.filter(user__in=students).select_related("lab")
    }
    labs: dict[int, list[Lab]] = {}
    for lab in Lab.objects.filter(owner__in=students).order_by("name"):
        labs.setdefault(lab.owner_id, []).append(lab)
    rows = []
    for student in students:
        cells = []
        for e in exercises:
            p = progress.get((student.pk, e.slug))
            cells.append({"exercise": e, "progress": p, "status": _status(p, e)})
        rows.append({"student": student, "cells": cells, "labs": labs.get(student.pk, [])})
    demos = Demo.objects.filter(lab__owner=request.user, active=True).select_related("lab")
    return render(
        request,
        "classroom/class.html",
        {"exercises": exercises, "rows": rows, "demos": demos, "kafka_version": settings.LAB_KAFKA_VERSION},
    )


# ---------------------------------------------------------------------------- demos


def _own_lab_as_instructor(user: Any, slug: str) -> Lab:
    lab = access.lab_for(user, slug, act=True)
    access.require_instructor(user)
    return lab


@require_POST
@login_required
def demo_start(request: HttpRequest, slug: str) -> HttpResponse:
    """Turn one of the instructor's labs into a demo with a join code (again active if it was one)."""
    lab = _own_lab_as_instructor(request.user, slug)
    demo = Demo.objects.filter(lab=lab).first()
    if demo is None:
        for _ in range(5):  # a clash of six random characters is rare; try again if it happens
            try:
                demo = Demo.objects.create(lab=lab)
                break
            except IntegrityError:
                continue
        if demo is None:
            raise IllegalArgument("no free join code; try again")
    elif not demo.active:
        demo.active = True
        demo.save(update_fields=["active"])
    attach.ensure_demo(demo)
    return redirect(reverse("lab", kwargs={"slug": lab.slug}) + "?present=1")


@require_POST
@login_required
def demo_end(request: HttpRequest, slug: str) -> HttpResponse:
    lab = _own_lab_as_instructor(request.user, slug)
    demo = Demo.objects.filter(lab=lab).first()
    if demo is not None and demo.active:
        demo.active = False
        demo.save(update_fields=["active"])
        attach.ensure_demo(demo)
    return redirect(lab.get_absolute_url())


@require_GET
@login_required
def demo_viewers(request: HttpRequest, slug: str) -> HttpResponse:
    """Who follows the demo (the instructor's panel refreshes it)."""
    lab = _own_lab_as_instructor(request.user, slug)
    demo = Demo.objects.filter(lab=lab).first()
    viewers = list(demo.viewers.select_related("user").order_by("joined")) if demo is not None else []
    return render(request, "classroom/_viewers.html", {"demo": demo, "viewers": viewers, "lab": lab})


@require_POST
async def demo_copy(request: HttpRequest, slug: str) -> HttpResponse:
    """Hand every student following the demo a copy of its current state, as a lab of their own."""
    user = await request.auser()  # type: ignore[attr-defined]
    if not user.is_authenticated:
        if request.headers.get("HX-Request"):
            return _toast(False, "You are logged out: reload the page and log in.", status=401)
        return redirect_to_login(request.get_full_path())
    lab: Lab = await sync_to_async(_own_lab_as_instructor)(user, slug)
    demo = await Demo.objects.select_related("lab").filter(lab=lab, active=True).afirst()
    if demo is None:
        return _toast(False, "This lab is not a running demo: start the demo first.", status=409)
    viewers = [v.user async for v in demo.viewers.select_related("user").order_by("joined")]
    if not viewers:
        return _toast(False, "Nobody has joined the demo yet: there is no one to hand a copy to.", status=409)
    live: LiveLab = await asyncio.to_thread(live_of, lab)
    try:
        answer = await asyncio.wait_for(asyncio.wrap_future(live.act("classroom.read-state", {})), WAIT_S)
    except KafkaError as error:
        return _toast(False, f"{error.name}: {error.message}", status=409)
    except TimeoutError:
        return _toast(False, f"The lab did not answer within {WAIT_S:g} s.", status=504)
    state = copying.state_from_json(answer)
    copies, refused = await sync_to_async(handout.make_copies)(demo, state, viewers)
    not_handed = handout.refusals_in_words(refused)
    if not copies:
        return _toast(False, f"No student got a copy. {not_handed}", status=409)
    await asyncio.to_thread(attach.ensure_demo, demo)  # the banner that counts the copies ready
    await asyncio.to_thread(handout.fill_later, demo, answer, copies)
    skipped = f" Not copied (no leader): {'; '.join(state.skipped)}." if state.skipped else ""
    return _toast(
        not refused,
        f"Copying the demo for {len(copies)} student{'s' if len(copies) != 1 else ''}: "
        f"{len(state.topics)} topic(s), {state.record_count} record(s).{skipped}"
        + (f" {not_handed}" if not_handed else ""),
    )


def _join_error(request: HttpRequest, code: str, message: str) -> HttpResponse:
    context = _list_context(request)
    context.update(join_error=message, join_code=code)
    return render(request, "classroom/exercises.html", context, status=400)


@require_POST
@login_required
def demo_join(request: HttpRequest) -> HttpResponse:
    """Follow a demo with its join code: the demo's page, read-only. Wrong codes are counted
    (lab.accounts.throttle): past the limit even the right one waits."""
    code = "".join(request.POST.get("code", "").split()).upper()
    if not code:
        return _join_error(
            request, code, "Type the join code your instructor shows (six letters and digits)."
        )
    account = str(request.user.pk)
    try:
        throttle.check(throttle.JOIN, request, account)
    except throttle.TooManyAttempts as error:
        return throttle.refused(_join_error(request, code[:12], error.message), error)

    def wrong(message: str) -> HttpResponse:
        throttle.failed(throttle.JOIN, request, account)
        return _join_error(request, code[:12], message)

    if len(code) > 12 or any(c not in CODE_ALPHABET for c in code):
        return wrong(
            f"{code[:12]} is not a join code: codes use only the letters and digits {CODE_ALPHABET} "
            "(no 0, O, 1 or I)."
        )
    demo = Demo.objects.filter(join_code=code).select_related("lab").first()
    if demo is None:
        return wrong(f"No demo has the code {code}. Check it with your instructor.")
    if not demo.active:
        return wrong(f"The demo {code} has ended.")
    if demo.lab.owner_id != request.user.pk:
        DemoViewer.objects.get_or_create(demo=demo, user=request.user)
    attach.ensure_demo(demo)
    return redirect(demo.lab.get_absolute_url())


def ended_demo_page(request: HttpRequest, slug: str) -> HttpResponse | None:
    """What a follower of a demo that ended gets at its page (410 Gone): not a bare 404. None for
    anyone who did not follow it (for them the lab does not exist)."""
    demo = (
        Demo.objects.filter(lab__slug=slug, active=False, viewers__user=request.user)
        .select_related("lab__owner")
        .first()
    )
    if demo is None:
        return None
    copy = DemoCopy.objects.filter(demo=demo, user=request.user).select_related("lab").first()
    return render(request, "classroom/demo_ended.html", {"demo": demo, "copy": copy}, status=410)


@require_POST
@login_required
def demo_leave(request: HttpRequest, code: str) -> HttpResponse:
    DemoViewer.objects.filter(demo__join_code=code, user=request.user).delete()
    return redirect("classroom:exercises")


@require_GET
@login_required
def demo_my_copy(request: HttpRequest, code: str) -> HttpResponse:
    """The newest copy of demo ``code`` handed to this user."""
    copy = DemoCopy.objects.filter(demo__join_code=code, user=request.user).select_related("lab").first()
    if copy is None:
        raise Http404("You have no copy of this demo.")
    return redirect(copy.lab.get_absolute_url())


# ---------------------------------------------------------------------------- scenarios


@require_GET
@login_required
def scenario_list(request: HttpRequest) -> HttpResponse:
    return _scenario_list(request)


def _scenario_list(
    request: HttpRequest, *, refused: Scenario | None = None, error: str = "", status: int = 200
) -> HttpResponse:
    """The scenarios; above them, with ``error``, why the scenario ``refused`` did not open."""
    return render(
        request,
        "classroom/scenarios.html",
        {
            "entries": content.scenarios(),
            "kafka_version": settings.LAB_KAFKA_VERSION,
            "refused": refused,
            "open_error": error,
        },
        status=status,
    )


@require_POST
@login_required
def scenario_open(request: HttpRequest, scenario: str) -> HttpResponse:
    """A new lab with the scenario's cluster, and the player on its page, paused at the first step."""
    found = content.scenario(scenario)
    if found is None:
        raise Http404("No such scenario (or the file does not parse: see the scenarios page).")
    try:
        with transaction.atomic():
            lab = create_lab(
                request.user,
                found.name[:100],
                brokers=found.cluster.brokers,
                config=dict(found.cluster.config),
            )
            lab.settings = {**lab.settings, "seed": found.cluster.seed}
            lab.save(update_fields=["settings"])
            scenario_lab = ScenarioLab.objects.create(lab=lab, scenario=found.slug)
    except LabLimitReached as refused:
        return _scenario_list(request, refused=found, error=refused.tell(request.user), status=409)
    except KafkaError as error:
        return _scenario_list(request, refused=found, error=f"{error.name}: {error.message}", status=400)
    attach.ensure_player(scenario_lab)
    return redirect(lab.get_absolute_url())


@require_POST
async def scenario_control(request: HttpRequest, slug: str, action: str) -> HttpResponse:
    """Play, pause, step, cancel or restart the scenario on a lab (its owner only)."""
    user = await request.auser()  # type: ignore[attr-defined]
    if not user.is_authenticated:
        if request.headers.get("HX-Request"):
            return _toast(False, "You are logged out: reload the page and log in.", status=401)
        return redirect_to_login(request.get_full_path())
    lab: Lab = await sync_to_async(access.lab_for)(user, slug, act=True)
    if action not in commands.PLAYER_ACTIONS:
        raise Http404(f"no scenario control named {action}")
    scenario_lab = await ScenarioLab.objects.select_related("lab").filter(lab=lab).afirst()
    if scenario_lab is None:
        raise Http404("This lab has no scenario.")
    if await asyncio.to_thread(content.scenario, scenario_lab.scenario) is None:
        return _toast(False, f"The scenario {scenario_lab.scenario} is gone or does not parse.", status=409)
    # The player is hooked first (commands run in order), so the control finds it on the lab.
    live: LiveLab = await asyncio.to_thread(attach.ensure_player, scenario_lab)
    try:
        text = await asyncio.wait_for(
            asyncio.wrap_future(live.act("classroom.player", {"action": action})), WAIT_S
        )
    except KafkaError as error:
        return _toast(False, f"{error.name}: {error.message}", status=409)
    except TimeoutError:
        return _toast(False, f"The lab did not answer within {WAIT_S:g} s.", status=504)
    if action == "restart":
        await sync_to_async(_save_lab_spec)(lab, live)
    return _toast(True, str(text))
