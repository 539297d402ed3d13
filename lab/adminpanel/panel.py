"""The plumbing every panel view shares: who is asking, which lab, and calls to its driver thread.

``panel_view`` resolves the lab as ``lab.access`` says (anonymous: the login page, or 401 for
htmx; a lab they may not see: 404; a change to a lab they may only watch: 403) and hands the
view a ``Panel``. ``Panel.call`` asks the lab for a named command with JSON arguments (the same
commands the API asks for, ``lab.runtime.commands``) and awaits its answer without holding a worker
thread, as the dashboard's controls do.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse
from django.template.loader import render_to_string
from django.utils.html import escape

from lab import access
from lab.engine.errors import IllegalState, KafkaError
from lab.labs import asave_live_spec, live_of
from lab.models import Lab
from lab.runtime.live import LiveLab

CALL_TIMEOUT_S = 30.0
START_TIMEOUT_S = 60.0
READ_ONLY = "Read-only: only this lab's owner can change it."
LOGGED_OUT = "You are logged out: reload the page and log in."


@dataclass(slots=True)
class Panel:
    request: HttpRequest
    lab: Lab
    live: LiveLab
    can_act: bool

    async def call(self, name: str, args: Mapping[str, Any] | None = None) -> Any:
        """Command ``name`` with ``args`` on the lab; its answer, or its Kafka error raised here."""
        if not self.live.ready.done():
            await asyncio.wait_for(asyncio.wrap_future(self.live.ready), START_TIMEOUT_S)
        if self.live.state != "running":
            why = f": {self.live.error}" if self.live.error else ""
            raise IllegalState(f"the lab is {self.live.state}{why}")
        future = self.live.act(name, dict(args or {}), by=self.request.user.get_username())
        return await asyncio.wait_for(asyncio.wrap_future(future), CALL_TIMEOUT_S)

    async def save_spec(self) -> None:
        """Keep what the change did to the lab's topics, so the lab comes back with it."""
        await asave_live_spec(self.lab, self.live)

    def render(
        self,
        template: str,
        context: Mapping[str, Any],
        *,
        status: int = 200,
        headers: Mapping[str, str] | None = None,
    ) -> HttpResponse:
        ctx = {
            "lab": self.lab,
            "can_act": self.can_act,
            "read_only": READ_ONLY,
            "kafka_version": settings.LAB_KAFKA_VERSION,
            "section": next(
                (s for s in ("groups", "users") if template.startswith(f"adminpanel/{s}")), "topics"
            ),
            "zookeeper_outage": self.live.zookeeper_outage,
            **context,
        }
        html = render_to_string(template, ctx, request=self.request)
        response = HttpResponse(html, status=status)
        for name, value in (headers or {}).items():
            response[name] = value
        return response


View = Callable[..., Awaitable[HttpResponse]]


def _unavailable(panel: Panel, text: str, status: int) -> HttpResponse:
    if panel.request.headers.get("HX-Request"):
        return HttpResponse(f'<p class="banner bad" role="alert">{escape(text)}</p>', status=status)
    return panel.render("adminpanel/unavailable.html", {"error": text}, status=status)


def panel_view(*, act: bool = False) -> Callable[[View], View]:
    """Resolve ``slug`` to a lab the user may see (``act``: may change) and pass the view a ``Panel``."""

    def wrap(view: View) -> View:
        @functools.wraps(view)
        async def inner(request: HttpRequest, slug: str, **kwargs: Any) -> HttpResponse:
            user = await request.auser()  # type: ignore[attr-defined]
            if not user.is_authenticated:
                if request.headers.get("HX-Request"):
                    return HttpResponse(f'<p class="banner bad" role="alert">{LOGGED_OUT}</p>', status=401)
                return redirect_to_login(request.get_full_path())
            # Templates read request.user: hand them the user already loaded (no query in async code).
            request._cached_user = user  # type: ignore[attr-defined]
            lab: Lab = await sync_to_async(access.lab_for)(user, slug, act=act)
            can = access.can_act(user, lab)
            live: LiveLab = await asyncio.to_thread(live_of, lab)
            panel = Panel(request=request, lab=lab, live=live, can_act=can)
            try:
                return await view(panel, **kwargs)
            except KafkaError as error:  # the lab cannot answer: starting over, failed, stopping
                return _unavailable(panel, str(error), 503)
            except TimeoutError:
                return _unavailable(panel, f"The lab did not answer within {CALL_TIMEOUT_S:g} s.", 504)

        return inner

    return wrap
