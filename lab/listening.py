"""A live lab's Kafka listeners on its page: the view every frame carries, and the panel's context.

The lab's brokers listen where ``lab.labs.live_of`` tells them (``LAB_WIRE_BIND_HOST``, advertised
as ``LAB_ADVERTISED_HOST``) on the ports ``lab.ports`` gave the lab.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings

from lab.runtime.listeners import ListenerState
from lab.runtime.live import LiveLab
from lab.visuals.listeners import ListenersView, Snippet, listeners_view, secured_snippets, snippets

LISTENERS_VIEW = "listeners"
LISTENERS_FRAGMENT = "lab/_listeners_live.html"
NO_PORTS = (
    "This lab has no Kafka listeners: no port of LAB_WIRE_PORTS was free for it when it started "
    "(other labs have them, or programs on this machine). Delete labs nobody uses, or widen the "
    "range, and restart the server."
)


def view_of(live: LiveLab) -> ListenersView:
    """The lab's listeners now (any thread: it reads their states and the clock, not the engine).
    While the lab starts (or resets) they are not there yet, but their addresses are known."""
    listeners = live.listeners
    if listeners is not None:
        states = listeners.states()
    else:
        host = live.listen.advertised_host if live.listen is not None else str(settings.LAB_ADVERTISED_HOST)
        states = [
            ListenerState(broker_id=b, host=host, port=port, open=False)
            for b, port in sorted(live.spec.ports.items())
        ] + [
            ListenerState(broker_id=b, host=host, port=port, open=False, protocol=protocol)
            for protocol, ports in live.spec.listeners.items()
            for b, port in sorted(ports.items())
        ]
    return listeners_view(
        states,
        rate=live.clock.rate,
        paused=live.clock.paused,
        missing="" if live.spec.ports else NO_PORTS,
        opening=listeners is None and live.state in ("starting", "resetting"),
    )


def snippets_for(view: ListenersView, topics: Any, ca_file: str = "ca.pem") -> tuple[Snippet, ...]:
    """The copy-paste programs for this lab, on its first topic (or one a person creates)."""
    names = [str(t) for t in topics or () if not str(t).startswith("__")]
    topic = names[0] if names else "my-topic"
    plain = snippets(view.bootstrap_servers, topic) if view.bootstrap_servers else ()
    return plain + tuple(
        snip for listener in view.secured for snip in secured_snippets(listener, topic, ca_file)
    )


def listeners_json(live: LiveLab) -> dict[str, Any]:
    """``bootstrap_servers``, each broker's listener, the secured listeners and the CA's address, as the
    API's lab shows them (JSON; a lab worker sends it for the web process)."""
    from django.urls import reverse

    view = view_of(live)

    def brokers(found: Any) -> list[dict[str, Any]]:
        return [
            {"broker": b.broker_id, "host": b.host, "port": b.port, "open": b.open, "error": b.error or None}
            for b in found
        ]

    return {
        "bootstrap_servers": view.bootstrap_servers,
        "listeners": brokers(view.brokers),
        "secured": [
            {
                "protocol": s.protocol,
                "bootstrap_servers": s.bootstrap_servers,
                "listeners": brokers(s.brokers),
            }
            for s in view.secured
        ],
        "ca_url": reverse("lab-ca", kwargs={"slug": live.slug}) if view.tls else None,
    }
