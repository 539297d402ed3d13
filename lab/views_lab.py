"""A lab's page and its controls.

The page is drawn from the lab's last published frame, then kept live by the websocket
(``lab.consumers``). Every control is an htmx POST to ``act``: it submits the named
action to the lab's driver thread and answers with a short sentence, "done" or Kafka's
error, once the driver has run it; the change itself arrives with the next frame.
"""

from __future__ import annotations

import asyncio
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import redirect_to_login
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from django.views.decorators.http import require_GET, require_POST

from lab import access
from lab.engine.config import CONSUMER_KEYS, TOPIC_KEYS
from lab.engine.errors import IllegalArgument, KafkaError, ZooKeeperNotAvailable
from lab.labs import asave_live_spec, live_of, page_parts
from lab.models import Lab
from lab.request_size import reads_too_large, too_large, too_large_message
from lab.runtime.actions import CONTROLS
from lab.runtime.live import LiveLab
from lab.runtime.tls import LabTls
from lab.visuals.glossary import governed_by

ACT_TIMEOUT_S = 60.0


@require_GET
@login_required
def lab_page(request: HttpRequest, slug: str) -> HttpResponse:
    try:
        lab = access.lab_for(request.user, slug)
    except Http404:
        from lab.classroom.views import ended_demo_page

        ended = ended_demo_page(request, slug)
        if ended is None:
            raise
        return ended
    try:
        live = live_of(lab)
        parts = page_parts(live)  # drawn here, or by the lab's worker
    except (KafkaError, TimeoutError) as error:  # on lab workers: every one full, or the owner not answering
        reason = error.message if isinstance(error, KafkaError) else f"{str(error).capitalize()}."
        status = 504 if isinstance(error, TimeoutError) else 503
        context = {"lab": lab, "reason": reason, "status": status}
        return render(request, "lab/unavailable.html", context, status=status)
    html = parts["html"]
    topics = parts["topics"]
    config = dict(live.spec.config)
    return render(
        request,
        "lab/lab.html",
        {
            "lab": lab,
            "html": html,
            "can_act": access.can_act(request.user, lab),
            "kafka_version": settings.LAB_KAFKA_VERSION,
            "simulated": parts["simulated"],
            "listeners_panel": parts.get("listeners_panel", ""),  # drawn by the lab's worker, if on one
            "first_topic": topics[0] if topics else "",
            "default_rf": min(3, lab.brokers),
            "min_isr_default": config.get("min.insync.replicas", TOPIC_KEYS["min.insync.replicas"].default),
            "min_isr_tip": TOPIC_KEYS["min.insync.replicas"].doc
            + f" ({governed_by('min.insync.replicas', config)})",
            "session": CONSUMER_KEYS["session.timeout.ms"],
            "session_tip": CONSUMER_KEYS["session.timeout.ms"].doc
            + f" ({governed_by('session.timeout.ms', config)}; heartbeats every third of it)",
        },
    )


def _toast(ok: bool, text: str, status: int = 200) -> HttpResponse:
    return HttpResponse(render_to_string("lab/_toast.html", {"ok": ok, "text": text}), status=status)


async def _lab_for(request: HttpRequest, slug: str) -> Lab:
    user = await request.auser()  # type: ignore[attr-defined]
    lab: Lab = await sync_to_async(access.lab_for)(user, slug, act=True)
    return lab


@reads_too_large
@require_POST
async def act(request: HttpRequest, slug: str, action: str) -> HttpResponse:
    """Run control ``action`` on the lab; answer with what happened or Kafka's error, named."""
    user = await request.auser()  # type: ignore[attr-defined]
    if not user.is_authenticated:
        if request.headers.get("HX-Request"):
            return _toast(False, "You are logged out: reload the page and log in.", status=401)
        return redirect_to_login(request.get_full_path())
    lab = await _lab_for(request, slug)
    if action not in CONTROLS:
        raise Http404(f"no control named {action}")
    if too_large(request):
        return _toast(False, f"INVALID_REQUEST: {too_large_message(too_large(request))}", status=413)
    params: dict[str, Any] = {k: request.POST.get(k, "") for k in request.POST}
    try:
        # On a lab worker (make run WORKERS=N) the lab's owner may not answer: that is a 504 too.
        live: LiveLab = await asyncio.to_thread(live_of, lab)
        future = live.act(action, params, by=user.get_username())
        result = await asyncio.wait_for(asyncio.wrap_future(future), ACT_TIMEOUT_S)
    except IllegalArgument as error:
        return _toast(False, f"{error.name}: {error.message}", status=400)
    except ZooKeeperNotAvailable as error:
        return _toast(False, f"{error.name}: {error.message}", status=503)
    except KafkaError as error:
        return _toast(False, f"{error.name}: {error.message}", status=409)
    except TimeoutError as error:  # the driver, or the lab's worker (its own words), did not answer
        said = str(error)
        text = (
            f"{said[0].upper()}{said[1:]}." if said else f"The lab did not answer within {ACT_TIMEOUT_S:g} s."
        )
        return _toast(False, text, status=504)
    await asave_live_spec(lab, live)
    return _toast(True, str(result["message"] if isinstance(result, dict) else result))


@require_GET
@login_required
def lab_ca(request: HttpRequest, slug: str) -> HttpResponse:
    """The lab's CA certificate (PEM): what a client of its SSL and SASL_SSL listeners verifies the
    brokers with (``ssl.ca.location``, ``ssl_cafile``). Whoever may see the lab's page may take it; a
    lab without TLS listeners has none (404)."""
    lab = access.lab_for(request.user, slug)
    if not any(p.endswith("SSL") for p in (lab.settings.get("listeners") or {})):
        raise Http404("This lab has no SSL listener, so no CA.")
    pem = LabTls(lab.data_dir, lab=lab.slug, hosts=[str(settings.LAB_ADVERTISED_HOST)]).ca_pem()
    response = HttpResponse(pem, content_type="application/x-pem-file")
    response["Content-Disposition"] = f'attachment; filename="{lab.slug}-ca.pem"'
    return response
