"""Consumer groups: state, members and lag per partition (live), and an offset reset.

The reset is kafka-consumer-groups.sh --reset-offsets: to the earliest or latest offset, an
offset, or a time, for an inactive group only (NON_EMPTY_GROUP otherwise, as Kafka answers).
"""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from django.views.decorators.http import require_GET, require_POST

from lab.adminpanel import rows
from lab.adminpanel.forms import ResetForm
from lab.adminpanel.panel import Panel, panel_view
from lab.engine.errors import IllegalArgument, KafkaError

TEMPLATE = "adminpanel/groups.html"
CHANGED = {"HX-Trigger": "lab-changed"}


def _context(snap: dict[str, Any]) -> dict[str, Any]:
    groups = rows.group_rows(snap)
    return {
        "groups": groups,
        "group_ids": [g.group_id for g in groups],
        "topic_names": [t.name for t in rows.topic_rows(snap)],
        "time_label": rows.time_label(snap.get("time_ms", 0)),
    }


@require_GET
@panel_view()
async def groups(panel: Panel) -> HttpResponse:
    context = _context(await panel.call("snapshot"))
    chosen = panel.request.GET.get("group", "")
    first = context["groups"][0] if context["groups"] else None
    group = next((g for g in context["groups"] if g.group_id == chosen), first)
    initial = {
        "to": "earliest",
        "group": group.group_id if group else "",
        "topic": group.topics[0] if group and group.topics else "",
    }
    context["form"] = ResetForm(topics=context["topic_names"], initial=initial)
    return panel.render(TEMPLATE, context)


@require_GET
@panel_view()
async def groups_list(panel: Panel) -> HttpResponse:
    """The groups alone (polled every second: states, members, lag)."""
    return panel.render(f"{TEMPLATE}#groups-list", _context(await panel.call("snapshot")))


@require_POST
@panel_view(act=True)
async def reset(panel: Panel) -> HttpResponse:
    context = _context(await panel.call("snapshot"))
    form = ResetForm(panel.request.POST, topics=context["topic_names"])
    context["form"] = form
    if not form.is_valid():
        return panel.render(f"{TEMPLATE}#reset-form", context, status=400)
    data = form.cleaned_data
    try:
        target = data["target"]
        args = {
            "group": data["group"],
            "topic": data["topic"],
            "to": target
            if isinstance(target, str)
            else ("offset" if isinstance(target, int) else "timestamp"),
            "offset": target if isinstance(target, int) else None,
            "timestamp": target["timestamp"] if isinstance(target, dict) else None,
            "partitions": None if data["partitions"] is None else list(data["partitions"]),
        }
        said = (await panel.call("group-reset", args))["message"]
    except KafkaError as error:
        form.attach(error)
        return panel.render(
            f"{TEMPLATE}#reset-form", context, status=400 if isinstance(error, IllegalArgument) else 409
        )
    context["done"] = said
    return panel.render(f"{TEMPLATE}#reset-form", context, headers=CHANGED)
