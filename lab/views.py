"""Pages."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from lab.runtime.registry import running_labs
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


@require_GET
def home(request: HttpRequest) -> HttpResponse:
    """The lab is up: ZooKeeper's state, the running clusters, the Kafka modelled."""
    context = _zookeeper_context()
    context.update(labs=running_labs(), kafka_version=settings.LAB_KAFKA_VERSION)
    return render(request, "lab/home.html", context)


@require_GET
def zookeeper_status_card(request: HttpRequest) -> HttpResponse:
    """The ZooKeeper card alone; the home page refreshes it with htmx."""
    return render(request, "lab/home.html#zookeeper-status", _zookeeper_context())
