"""Pages: home (your labs, ZooKeeper, running clusters), login, and making a lab."""

from __future__ import annotations

import asyncio
from pathlib import Path

from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseClientRedirect

from lab import access, limits
from lab.accounts.forms import LoginForm
from lab.accounts.throttle import refused
from lab.engine.config import BROKER_KEYS
from lab.engine.errors import KafkaError, ZooKeeperNotAvailable
from lab.labs import DEMO_PASSWORD_FILE, create_lab, delete_lab_data, live_of, on_workers
from lab.limits import LabLimitReached
from lab.models import Lab
from lab.runtime.registry import running_labs
from lab.runtime.spec import SECURED
from lab.visuals.glossary import tip
from lab.zookeeper_server import INSTALL_HINT, ZooKeeperStatus, zookeeper_status


def _zookeeper_context() -> dict[str, object]:
    hosts: str = settings.LAB_ZOOKEEPER
    status = zookeeper_status(hosts) if hosts else None
    return {
        "zookeeper_hosts": hosts,
        "zookeeper": status,
        "zookeeper_facts": _facts(status) if status and status.answered else [],
        "zookeeper_managed_dir": settings.LAB_ZOOKEEPER_MANAGED_DIR,
        "install_hint": INSTALL_HINT,
        "kafka_version": settings.LAB_KAFKA_VERSION,
    }


def _facts(status: ZooKeeperStatus) -> list[tuple[str, str]]:
    facts = [("Version", status.version or "unknown (the server does not allow srvr)")]
    if status.mode:
        facts.append(("Mode", status.mode))
    facts.append(("Round trip", f"{status.latency_ms} ms"))
    for key, label in (("Connections", "Connections"), ("Node count", "Znodes")):
        if key in status.stats:
            facts.append((label, status.stats[key]))
    return facts


def _home_context(request: HttpRequest) -> dict[str, object]:
    context = _zookeeper_context()
    running = running_labs()
    if on_workers():  # the labs run in lab workers: their lines are on their leases in ZooKeeper
        from lab import remote

        running = remote.running_labs()
    summaries = {s.name: s for s in running}
    mine = Lab.objects.filter(owner=request.user)
    context.update(
        labs=[{"lab": lab, "summary": summaries.get(lab.slug)} for lab in mine],
        standing=limits.standing(request.user),
        running=[s for s in running if s.name in {lab.slug for lab in mine}],
        session_tip=tip("session", {}),
        session_default=BROKER_KEYS["zookeeper.session.timeout.ms"].default,
        session_min=int(BROKER_KEYS["zookeeper.session.timeout.ms"].minimum or 0),
        session_max=int(BROKER_KEYS["zookeeper.session.timeout.ms"].maximum or 0),
        secured_listeners=SECURED,
    )
    return context


@require_GET
@login_required
def home(request: HttpRequest) -> HttpResponse:
    """Your labs, whether ZooKeeper answers, and the clusters running in this server."""
    return render(request, "lab/home.html", _home_context(request))


@require_GET
@login_required
def zookeeper_status_card(request: HttpRequest) -> HttpResponse:
    """The ZooKeeper card alone; the home page refreshes it with htmx."""
    return render(
        request, "lab/_zookeeper_card.html#zookeeper-status", {**_zookeeper_context(), "refresh": True}
    )


def _home_with_error(request: HttpRequest, text: str, *, status: int) -> HttpResponse:
    context = _home_context(request)
    context["new_lab_error"] = text
    context["new_lab_values"] = request.POST
    context["new_lab_listeners"] = request.POST.getlist("listeners")
    return render(request, "lab/home.html", context, status=status)


@require_POST
@login_required
def new_lab(request: HttpRequest) -> HttpResponse:
    """Create a lab from the home page's short form, start it, and open it."""
    config: dict[str, object] = {}
    raw_timeout = request.POST.get("session_timeout_ms", "").strip()
    if raw_timeout:
        config["zookeeper.session.timeout.ms"] = raw_timeout
    try:
        brokers = int(request.POST.get("brokers", "3") or 3)
    except ValueError:
        brokers = 0
    try:
        lab = create_lab(
            request.user,
            request.POST.get("name", ""),
            brokers=brokers,
            config=config,
            listeners=request.POST.getlist("listeners"),
        )
    except LabLimitReached as refused:
        return _home_with_error(request, refused.tell(request.user), status=409)
    except KafkaError as error:
        return _home_with_error(request, f"{error.name}: {error.message}", status=400)
    live_of(lab)
    return redirect(lab.get_absolute_url())


@require_POST
@login_required
async def delete_lab(request: HttpRequest, slug: str) -> HttpResponse:
    """Delete one of your labs with its cluster, logs and ZooKeeper chroot (the home page's Delete):
    the way back under the lab limit. Async: stopping the lab waits for its driver thread."""
    user = await request.auser()  # type: ignore[attr-defined]
    lab = await sync_to_async(access.lab_for)(user, slug, act=True)
    try:
        await asyncio.to_thread(delete_lab_data, lab)
    except ZooKeeperNotAvailable as error:
        return await sync_to_async(_home_with_error)(request, error.message, status=503)
    await lab.adelete()
    home = reverse("home")
    return HttpResponseClientRedirect(home) if request.headers.get("HX-Request") else redirect(home)


class LoginView(auth_views.LoginView):
    """Django's login, throttled (lab.accounts.throttle), with how a newcomer gets in and whether
    ZooKeeper answers."""

    template_name = "registration/login.html"
    redirect_authenticated_user = True
    form_class = LoginForm

    def form_invalid(self, form: LoginForm) -> HttpResponse:  # type: ignore[override]
        response = super().form_invalid(form)
        return response if form.throttled is None else refused(response, form.throttled)

    def get_context_data(self, **kwargs: object) -> dict[str, object]:
        context = super().get_context_data(**kwargs)
        context.update(_zookeeper_context())
        context["password_file"] = str(Path(settings.LAB_DATA_DIR) / DEMO_PASSWORD_FILE)
        return context
