"""The classroom's parts of a lab page: ``{% classroom_banner lab can_act %}`` above the board (demo,
read-only and presenter mode) and ``{% classroom_side lab can_act %}`` at the top of its side column
(the exercise and the scenario player). Both are empty for a lab that is none of these."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django import template
from django.conf import settings
from django.template.loader import render_to_string
from django.utils.safestring import SafeString, mark_safe

from lab import access
from lab.classroom import attach, content
from lab.classroom.copying import COPIED, NOT_COPIED
from lab.classroom.grading import ExerciseSession
from lab.classroom.models import Demo, DemoCopy, DemoViewer, ExerciseProgress, ScenarioLab
from lab.classroom.player import ScenarioPlayer
from lab.hosts import student_urls
from lab.models import Lab

register = template.Library()


@register.filter
def markdown(text: str) -> SafeString:
    return content.markdown_html(str(text))


def _fragment(key: str, view: object) -> str:
    return render_to_string(attach.FRAGMENTS[key], {"v": view, "key": key})


def _shown(live: Any, key: str, first: Callable[[], object]) -> object:
    """The view the lab last published under ``key``; before its first frame with it (the command
    that hooks it in may not have run yet), ``first()``: what it starts as. The websocket's full
    state follows either way."""
    view = live.frame.views.get(key)
    return view if view is not None else first()


def _join_addresses(request: Any) -> dict[str, Any]:
    """Where students open the lab (lab.hosts.student_urls), and whether it listens on loopback only."""
    listen = settings.LAB_LISTEN
    return {
        "join_urls": student_urls(request.scheme, request.get_host(), listen),
        "listening_here": listen is not None and listen.loopback,
    }


@register.simple_tag(takes_context=True)
def classroom_banner(context: template.Context, lab: Lab, can_act: bool) -> SafeString:
    request = context.get("request")
    user = getattr(request, "user", None)
    if request is None or user is None:
        return mark_safe("")
    demo = Demo.objects.filter(lab=lab).first()
    is_owner = lab.owner_id == user.pk
    ctx: dict[str, Any] = {
        "lab": lab,
        "can_act": can_act,
        "is_owner": is_owner,
        "is_instructor": access.is_instructor(user),
        "present": request.GET.get("present") == "1",
        "demo": demo,
        "copied": COPIED,
        "not_copied": NOT_COPIED,
    }
    if demo is not None and demo.active:
        ctx.update(_join_addresses(request))
        live = attach.ensure_demo(demo)
        first = attach.DemoView(
            lab=lab.slug, code=demo.join_code, active=True, copies=0, copies_ready=0, copied_at=""
        )
        ctx["demo_live"] = _fragment(attach.DEMO_VIEW, _shown(live, attach.DEMO_VIEW, lambda: first))
        ctx["watching"] = DemoViewer.objects.filter(demo=demo, user=user).exists()
        ctx["viewers"] = list(demo.viewers.select_related("user").order_by("joined"))
        ctx["my_copy"] = DemoCopy.objects.filter(demo=demo, user=user).select_related("lab").first()
    return mark_safe(render_to_string("classroom/_banner.html", ctx, request=request))


@register.simple_tag(takes_context=True)
def classroom_side(context: template.Context, lab: Lab, can_act: bool) -> SafeString:
    request = context.get("request")
    user = getattr(request, "user", None)
    if request is None or user is None:
        return mark_safe("")
    parts: list[str] = []
    progress = ExerciseProgress.objects.filter(lab=lab).first()
    exercise = content.exercise(progress.exercise) if progress is not None else None
    if progress is not None and exercise is not None:
        from lab.classroom.views import questions_of

        live = attach.ensure_exercise(progress)
        passed = {int(k): str(v) for k, v in (progress.checks or {}).items()}

        def starting() -> object:
            return ExerciseSession(exercise, lab=lab.slug, passed=passed, start=progress.start or None).view

        parts.append(
            render_to_string(
                "classroom/_exercise_panel.html",
                {
                    "lab": lab,
                    "exercise": exercise,
                    "progress": progress,
                    "can_act": can_act,
                    "is_instructor": access.is_instructor(user),
                    "questions": questions_of(exercise, progress, editable=can_act),
                    "live": _fragment(
                        attach.EXERCISE_VIEW, _shown(live, attach.EXERCISE_VIEW, starting) if live else None
                    ),
                },
                request=request,
            )
        )
    scenario_lab = ScenarioLab.objects.filter(lab=lab).first()
    if scenario_lab is not None:
        scenario = content.scenario(scenario_lab.scenario)
        view: object = None
        if scenario is not None:
            live = attach.ensure_player(scenario_lab)
            view = _shown(live, attach.PLAYER_VIEW, lambda: ScenarioPlayer(scenario, lab=lab.slug).view)
        parts.append(
            render_to_string(
                "classroom/_player_panel.html",
                {
                    "lab": lab,
                    "scenario_lab": scenario_lab,
                    "scenario": scenario,
                    "can_act": can_act,
                    "live": _fragment(attach.PLAYER_VIEW, view),
                },
                request=request,
            )
        )
    return mark_safe("".join(parts))
