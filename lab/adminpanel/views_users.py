"""SASL users: who may log in on the lab's SASL listeners (SCRAM-SHA-256/512, and PLAIN with the same
password), as ``kafka-configs.sh --entity-type users --alter --add-config 'SCRAM-SHA-256=[password=...]'``.

The password is salted and hashed here; only the SCRAM credential Kafka stores goes to the lab (and
its journal of commands) and on to ZooKeeper, under ``/config/users/<name>``.
"""

from __future__ import annotations

import asyncio
from typing import Any

from django import forms
from django.http import HttpResponse
from django.views.decorators.http import require_GET, require_POST

from lab.adminpanel.forms import PanelForm
from lab.adminpanel.panel import Panel, panel_view
from lab.engine import limits
from lab.engine.errors import IllegalArgument, KafkaError, ResourceNotFound, UnacceptableCredential
from lab.runtime.commands.users import CHOICES, credentials, upsert_args

TEMPLATE = "adminpanel/users.html"
CHANGED = {"HX-Trigger": "lab-changed"}


class UserForm(PanelForm):
    error_fields = {UnacceptableCredential: "name", IllegalArgument: "name"}

    name = forms.CharField(required=False, max_length=limits.USER_NAME.max_length)
    password = forms.CharField(required=False, max_length=limits.PASSWORD.max_length, strip=False)
    mechanisms = forms.MultipleChoiceField(choices=[(m, m) for m in CHOICES], required=False)

    def clean_name(self) -> str:
        name = str(self.cleaned_data.get("name") or "").strip()
        try:
            return limits.USER_NAME.check(name)
        except IllegalArgument as error:
            raise forms.ValidationError(f"UNACCEPTABLE_CREDENTIAL: {error.message}.") from None

    def clean_password(self) -> str:
        password = str(self.cleaned_data.get("password") or "")
        if not password:
            raise forms.ValidationError("A password is required: the user logs in with it.")
        return password

    def clean_mechanisms(self) -> list[str]:
        chosen = list(self.cleaned_data.get("mechanisms") or [])
        if not chosen:
            raise forms.ValidationError("Choose at least one SCRAM mechanism.")
        return chosen


async def _context(panel: Panel) -> dict[str, Any]:
    found = await panel.call("users")
    return {"users": found["users"], "complete": found["complete"], "mechanisms": CHOICES}


@require_GET
@panel_view()
async def users(panel: Panel) -> HttpResponse:
    context = await _context(panel)
    context["form"] = UserForm(initial={"mechanisms": list(CHOICES)})
    return panel.render(TEMPLATE, context)


@require_GET
@panel_view()
async def users_list(panel: Panel) -> HttpResponse:
    return panel.render(f"{TEMPLATE}#users-list", await _context(panel))


@require_POST
@panel_view(act=True)
async def create(panel: Panel) -> HttpResponse:
    form = UserForm(panel.request.POST)
    context: dict[str, Any] = {"form": form, "mechanisms": CHOICES}
    if not form.is_valid():
        return panel.render(f"{TEMPLATE}#user-form", context, status=400)
    data = form.cleaned_data
    made = await asyncio.to_thread(credentials, data["password"], data["mechanisms"])
    try:
        said = [(await panel.call("user-upsert", upsert_args(data["name"], c)))["message"] for c in made]
    except KafkaError as error:
        form.attach(error)
        return panel.render(
            f"{TEMPLATE}#user-form", context, status=400 if isinstance(error, IllegalArgument) else 409
        )
    await panel.save_spec()  # the lab's users come back after a reset
    context["form"] = UserForm(initial={"mechanisms": list(CHOICES)})
    context["done"] = " ".join(f"{s}." for s in said)
    return panel.render(f"{TEMPLATE}#user-form", context, headers=CHANGED)


@require_POST
@panel_view(act=True)
async def delete(panel: Panel) -> HttpResponse:
    user = str(panel.request.POST.get("user") or "").strip()
    try:
        said = (await panel.call("user-delete", {"user": user}))["message"]
    except (IllegalArgument, ResourceNotFound) as error:
        context = await _context(panel)
        context["problem"] = f"{error.name}: {error.message}"
        return panel.render(
            f"{TEMPLATE}#users-list", context, status=400 if isinstance(error, IllegalArgument) else 404
        )
    await panel.save_spec()
    context = await _context(panel)
    context["done"] = f"{said}."
    return panel.render(f"{TEMPLATE}#users-list", context, headers=CHANGED)
