"""Topics: the table, create, delete, partitions, configs, reassignment and preferred-leader elections.

Pages read the cluster's snapshot through the driver thread. Every change is an htmx POST of a
form that swaps itself: with the answer on success (and an ``HX-Trigger`` that refreshes the live
tables), or with each error beside its field and nothing changed.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from django.http import Http404, HttpResponse
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from lab.adminpanel import rows
from lab.adminpanel.forms import (
    ConfigForm,
    CreateTopicForm,
    DeleteForm,
    ElectForm,
    PanelForm,
    PartitionsForm,
    ReassignForm,
)
from lab.adminpanel.panel import Panel, panel_view
from lab.engine.errors import IllegalArgument, KafkaError

CHANGED = {"HX-Trigger": "lab-changed"}
TEMPLATE = "adminpanel/topics.html"
TOPIC = "adminpanel/topic.html"


def _failed(error: KafkaError) -> int:
    return 400 if isinstance(error, IllegalArgument) else 409


async def _snapshot(panel: Panel) -> dict[str, Any]:
    snap: dict[str, Any] = await panel.call("snapshot")
    return snap


async def _detail(panel: Panel, topic: str) -> rows.TopicDetail:
    state = await panel.call("topic-state", {"topic": topic})
    snap, overrides = state["snapshot"], state["overrides"]
    detail = rows.topic_detail(snap, topic, overrides, panel.live.spec.config)
    if detail is None:
        raise Http404(f"There is no topic {topic} in this lab.")
    return detail


def _config_fields(form: PanelForm, overrides: dict[str, str], broker_config: Any) -> list[tuple[Any, Any]]:
    return [(row, form[row.name]) for row in rows.config_rows(overrides, broker_config)]


# ---------------------------------------------------------------------------- the topics page


def _topics_context(panel: Panel, snap: dict[str, Any], internal: bool) -> dict[str, Any]:
    return {
        "topics": rows.topic_rows(snap, internal=internal, broker_config=panel.live.spec.config),
        "internal": internal,
        "hidden": rows.hidden_internal(snap),
        "brokers": snap.get("brokers", []),
        "time_ms": snap.get("time_ms", 0),
        "time_label": rows.time_label(snap.get("time_ms", 0)),
    }


def _create_context(panel: Panel, form: CreateTopicForm, **extra: Any) -> dict[str, Any]:
    return {
        "form": form,
        "config_fields": _config_fields(form, {}, panel.live.spec.config),
        "brokers_total": panel.lab.brokers,
        **extra,
    }


@require_GET
@panel_view()
async def topics(panel: Panel) -> HttpResponse:
    internal = panel.request.GET.get("internal") == "1"
    snap = await _snapshot(panel)
    form = CreateTopicForm(initial={"replication_factor": min(3, panel.lab.brokers)})
    return panel.render(
        TEMPLATE,
        {
            **_topics_context(panel, snap, internal),
            **_create_context(panel, form),
            "deleted": panel.request.GET.get("deleted", ""),
        },
    )


@require_GET
@panel_view()
async def topics_table(panel: Panel) -> HttpResponse:
    internal = panel.request.GET.get("internal") == "1"
    snap = await _snapshot(panel)
    return panel.render(f"{TEMPLATE}#topics-table", _topics_context(panel, snap, internal))


@require_POST
@panel_view(act=True)
async def create(panel: Panel) -> HttpResponse:
    form = CreateTopicForm(panel.request.POST)
    if not form.is_valid():
        return panel.render(f"{TEMPLATE}#create-form", _create_context(panel, form), status=400)
    data = form.cleaned_data
    try:
        args = {
            "name": data["name"],
            "partitions": data["partitions"],
            "replication_factor": data["replication_factor"],
            "config": dict(data["config"]),
        }
        said = (await panel.call("topic-create", args))["message"]
    except KafkaError as error:
        form.attach(error)
        return panel.render(f"{TEMPLATE}#create-form", _create_context(panel, form), status=_failed(error))
    await panel.save_spec()
    fresh = CreateTopicForm(initial={"replication_factor": min(3, panel.lab.brokers)})
    link = reverse("adminpanel:topic", kwargs={"slug": panel.lab.slug, "topic": data["name"]})
    return panel.render(
        f"{TEMPLATE}#create-form", _create_context(panel, fresh, done=said, done_link=link), headers=CHANGED
    )


@require_POST
@panel_view(act=True)
async def elect_all(panel: Panel) -> HttpResponse:
    """A preferred-leader election over every partition of every topic."""
    try:
        said = (await panel.call("topic-elect-preferred"))["message"]
    except KafkaError as error:
        return _toast(panel, False, str(error), _failed(error))
    return _toast(panel, True, said)


# ---------------------------------------------------------------------------- one topic


def _topic_context(panel: Panel, detail: rows.TopicDetail, **given: Any) -> dict[str, Any]:
    """The topic page's context; ``given`` forms (bound, with errors) replace the fresh ones."""
    config = given.pop("config_form", None) or ConfigForm(current=dict(detail.overrides))
    return {
        "topic": detail,
        "config_form": config,
        "config_fields": _config_fields(config, dict(detail.overrides), panel.live.spec.config),
        "grow_form": given.pop("grow_form", None)
        or PartitionsForm(initial={"total": len(detail.partitions) + 1}),
        "reassign_form": given.pop("reassign_form", None) or ReassignForm(detail=detail),
        "delete_form": given.pop("delete_form", None) or DeleteForm(topic=detail.name),
        **given,
    }


async def _answer(panel: Panel, topic: str, partial: str, *, status: int = 200, **given: Any) -> HttpResponse:
    """One form of the topic page, read afresh: with its errors, or with ``done`` (and the tables refresh)."""
    detail = await _detail(panel, topic)
    headers = CHANGED if "done" in given else None
    return panel.render(
        f"{TOPIC}#{partial}", _topic_context(panel, detail, **given), status=status, headers=headers
    )


@require_GET
@panel_view()
async def topic(panel: Panel, topic: str) -> HttpResponse:
    detail = await _detail(panel, topic)
    return panel.render(TOPIC, _topic_context(panel, detail))


@require_GET
@panel_view()
async def topic_partitions(panel: Panel, topic: str) -> HttpResponse:
    """The live partitions table (polled): leaders, ISR, offsets, and a reassignment's progress."""
    detail = rows.topic_detail(await _snapshot(panel), topic, broker_config=panel.live.spec.config)
    if detail is None:
        # htmx stops polling on 286: the topic is gone.
        return panel.render(f"{TOPIC}#gone", {"name": topic}, status=286)
    return panel.render(f"{TOPIC}#partitions", {"topic": detail})


@require_POST
@panel_view(act=True)
async def config(panel: Panel, topic: str) -> HttpResponse:
    detail = await _detail(panel, topic)
    form = ConfigForm(panel.request.POST, current=dict(detail.overrides))
    if not form.is_valid():
        return await _answer(panel, topic, "config-form", status=400, config_form=form)
    try:
        args = {
            "topic": topic,
            "set": dict(form.cleaned_data["updates"]),
            "remove": list(form.cleaned_data["remove"]),
        }
        said = (await panel.call("topic-configs-alter", args))["message"]
    except KafkaError as error:
        form.attach(error)
        return await _answer(panel, topic, "config-form", status=_failed(error), config_form=form)
    await panel.save_spec()
    return await _answer(panel, topic, "config-form", done=said)


@require_POST
@panel_view(act=True)
async def grow(panel: Panel, topic: str) -> HttpResponse:
    await _detail(panel, topic)
    form = PartitionsForm(panel.request.POST)
    if not form.is_valid():
        return await _answer(panel, topic, "grow-form", status=400, grow_form=form)
    try:
        said = (await panel.call("topic-partitions", {"topic": topic, "total": form.cleaned_data["total"]}))[
            "message"
        ]
    except KafkaError as error:
        form.attach(error)
        return await _answer(panel, topic, "grow-form", status=_failed(error), grow_form=form)
    await panel.save_spec()
    return await _answer(panel, topic, "grow-form", done=said)


@require_POST
@panel_view(act=True)
async def reassign(panel: Panel, topic: str) -> HttpResponse:
    """Step one shows the plan (nothing changes); step two applies it and the table shows its progress."""
    detail = await _detail(panel, topic)
    form = ReassignForm(panel.request.POST, detail=detail)
    if not form.is_valid():
        return await _answer(panel, topic, "reassign-form", status=400, reassign_form=form)
    data = form.cleaned_data
    if data["step"] != "apply":
        return await _answer(
            panel, topic, "reassign-form", reassign_form=form, moves=data["moves"], encoded=data["encoded"]
        )
    try:
        plan = {str(p): list(r) for p, r in data["targets"].items()}
        said = (await panel.call("topic-reassign", {"topic": topic, "plan": plan}))["message"]
    except KafkaError as error:
        form.attach(error)
        return await _answer(panel, topic, "reassign-form", status=_failed(error), reassign_form=form)
    await panel.save_spec()
    return await _answer(panel, topic, "reassign-form", done=said)


def _toast(panel: Panel, ok: bool, text: str, status: int = 200) -> HttpResponse:
    return panel.render(
        "lab/_toast.html", {"ok": ok, "text": text}, status=status, headers=CHANGED if ok else None
    )


@require_POST
@panel_view(act=True)
async def elect(panel: Panel, topic: str) -> HttpResponse:
    """A preferred-leader election for one partition (``partition``) or all of the topic's."""
    detail = await _detail(panel, topic)
    form = ElectForm(panel.request.POST, partitions=len(detail.partitions))
    if not form.is_valid():
        return _toast(panel, False, " ".join(e for errs in form.errors.values() for e in errs), 400)
    try:
        args = {"topic": topic, "partition": form.cleaned_data["partition"]}
        said = (await panel.call("topic-elect-preferred", args))["message"]
    except KafkaError as error:
        return _toast(panel, False, str(error), _failed(error))
    return _toast(panel, True, said)


@require_POST
@panel_view(act=True)
async def delete(panel: Panel, topic: str) -> HttpResponse:
    await _detail(panel, topic)
    form = DeleteForm(panel.request.POST, topic=topic)
    if not form.is_valid():
        return await _answer(panel, topic, "delete-form", status=400, delete_form=form)
    try:
        said = (await panel.call("topic-delete", {"topic": topic}))["message"]
    except KafkaError as error:
        form.attach(error)
        return await _answer(panel, topic, "delete-form", status=_failed(error), delete_form=form)
    await panel.save_spec()
    back = reverse("adminpanel:topics", kwargs={"slug": panel.lab.slug}) + "?deleted=" + quote(topic)
    response = HttpResponse(said)
    response["HX-Redirect"] = back
    return response
