"""A topic's ACLs: those that apply to it (literal, the literal wildcard, prefixed), add, delete, and
who may do what to it, computed through the authorizer for every principal an ACL names.

The same commands as the API's (``acls``, ``acl-create``, ``acl-delete``); each change is an htmx
POST that swaps the section with the answer, or with each error beside its field and nothing written.
"""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpResponse
from django.views.decorators.http import require_GET, require_POST

from lab.adminpanel.forms import AclForm
from lab.adminpanel.panel import Panel, panel_view
from lab.engine import limits
from lab.engine.errors import IllegalArgument, KafkaError

TEMPLATE = "adminpanel/acls.html"
BINDING = ("resource_type", "name", "pattern", "principal", "host", "operation", "permission")


def _topic(topic: str) -> str:
    try:
        return limits.TOPIC_NAME.check(topic)
    except IllegalArgument:
        raise Http404(f"{topic!r} is not a topic name") from None


async def _context(panel: Panel, topic: str, form: AclForm | None = None, **extra: Any) -> dict[str, Any]:
    listed = await panel.call("acls", {"topic": topic})
    ops = listed["operations"]
    who = [
        {
            "principal": w["principal"],
            "cells": [{"operation": o, "allowed": w["may"][o], "why": w["why"][o]} for o in ops],
        }
        for w in listed["who_may"]
    ]
    return {
        "topic_name": topic,
        "listed": listed,
        "who": who,
        "operations": ops,
        "form": form or AclForm(topic=topic),
        **extra,
    }


@require_GET
@panel_view()
async def acls(panel: Panel, topic: str) -> HttpResponse:
    topic = _topic(topic)
    return panel.render(TEMPLATE, await _context(panel, topic))


@require_POST
@panel_view(act=True)
async def add(panel: Panel, topic: str) -> HttpResponse:
    topic = _topic(topic)
    form = AclForm(panel.request.POST, topic=topic)
    if not form.is_valid():
        return panel.render(f"{TEMPLATE}#acl-body", await _context(panel, topic, form), status=400)
    try:
        said = (await panel.call("acl-create", form.command_args()))["message"]
    except KafkaError as error:
        form.attach(error)
        return panel.render(f"{TEMPLATE}#acl-body", await _context(panel, topic, form), status=400)
    await panel.save_spec()
    return panel.render(f"{TEMPLATE}#acl-body", await _context(panel, topic, done=said))


@require_POST
@panel_view(act=True)
async def delete(panel: Panel, topic: str) -> HttpResponse:
    topic = _topic(topic)
    args = {key: str(panel.request.POST.get(key, "")) for key in BINDING}
    try:
        said = (await panel.call("acl-delete", args))["message"]
    except KafkaError as error:
        return panel.render(
            f"{TEMPLATE}#acl-body", await _context(panel, topic, failed=str(error)), status=400
        )
    return panel.render(f"{TEMPLATE}#acl-body", await _context(panel, topic, done=said))
