"""Simulated clients: what each producer and consumer is doing, and the controls that apply."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lab.visuals.cluster_map import Action

STATES: Mapping[str, tuple[str, str]] = {
    "running": ("running", "▶"),
    "stopped": ("stopped", "■"),
    "crashed": ("crashed", "✕"),
    "closed": ("closed", "■"),
}


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientRow:
    name: str
    kind: str  # producer | consumer
    state: str
    state_label: str
    glyph: str
    target: str  # the topic(s), and the group for a consumer
    simulated: bool  # a simulated client (controls apply); else one the dashboard or a script opened
    actions: tuple[Action, ...]
    principal: str = ""  # who its requests come from (User:alice), for the authorizer


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientsView:
    """The list and its controls: it changes only when a client comes, goes or changes state."""

    clients: tuple[ClientRow, ...]
    topics: tuple[str, ...]  # for the forms' topic suggestions
    groups: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientStats:
    """The counters, which change every frame, apart from the controls (so a click is never lost)."""

    rows: tuple[tuple[str, tuple[tuple[str, str], ...]], ...]  # name, ((label, value), ...)

    def of(self, name: str) -> tuple[tuple[str, str], ...]:
        return next((stats for n, stats in self.rows if n == name), ())


def _stats(client: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    out = []
    for key, label in (
        ("sent", "sent"),
        ("acked", "acked"),
        ("failed", "failed"),
        ("consumed", "consumed"),
        ("committed", "committed"),
    ):
        if key in client and client[key] is not None:
            out.append((label, str(client[key])))
    rate = client.get("rate") if client.get("rate") is not None else client.get("rate_per_s")
    if rate is not None:
        out.append(("rate", f"{float(rate):g}/s"))
    if client.get("processing_ms") is not None:
        out.append(("per record", f"{client['processing_ms']} ms"))
    return tuple(out)


def is_simulated(client: Mapping[str, Any]) -> bool:
    """Simulated clients describe their pace (a rate, or processing time per record)."""
    return client.get("rate") is not None or client.get("processing_ms") is not None


def _target(client: Mapping[str, Any]) -> str:
    topics = client.get("topics") or ([client["topic"]] if client.get("topic") else [])
    text = ", ".join(str(t) for t in topics)
    if client.get("kind") == "producer":
        text = text or "nothing written yet"
        return f"{text} · acks={client['acks']}" if client.get("acks") else text
    if client.get("group"):
        text = f"{text} · group {client['group']}" if text else f"group {client['group']}"
    if client.get("kind") == "consumer" and client.get("assignment") is not None:
        owned = ", ".join(f"{t}-{p}" for t, p in client["assignment"]) or "nothing"
        text += f" · owns {owned}"
    return text


# What Stop and Crash do, by kind: a producer has no group and no session to time out.
_STOP = {
    "producer": "Stop {name}: it sends no new records; those already sent still get their answers",
    "consumer": "Stop {name} cleanly: it commits what it processed and leaves its group, which rebalances at once",
}
_CRASH = {
    "producer": "Crash {name}: records it had not sent yet are lost and answers on their way go nowhere; "
    "the brokers notice nothing, as a producer holds no session",
    "consumer": "Crash {name}: no goodbye; its group notices only when session.timeout.ms passes, then rebalances",
}


def _actions(name: str, kind: str, state: str) -> tuple[Action, ...]:
    p = (("name", name),)
    running = state == "running"
    kind = kind if kind in _STOP else "consumer"
    return (
        Action(
            name="client-stop",
            label="Stop",
            enabled=running,
            title=_STOP[kind].format(name=name) if running else f"{name} is {state}",
            params=p,
        ),
        Action(
            name="client-crash",
            label="Crash",
            enabled=running,
            title=_CRASH[kind].format(name=name) if running else f"{name} is {state}",
            params=p,
        ),
        Action(
            name="client-remove",
            label="Remove",
            enabled=True,
            title=f"Remove {name} from the lab (a running one is stopped cleanly first)",
            params=p,
        ),
    )


def clients_view(snapshot: Mapping[str, Any]) -> ClientsView:
    rows = []
    for client in sorted(snapshot.get("clients") or (), key=lambda c: (c.get("kind", ""), c.get("name", ""))):
        name = str(client.get("name"))
        state = str(client.get("state", "running"))
        label, glyph = STATES.get(state, (state, "?"))
        rows.append(
            ClientRow(
                name=name,
                kind=str(client.get("kind", "")),
                state=state,
                state_label=label,
                glyph=glyph,
                target=_target(client),
                simulated=is_simulated(client),
                actions=_actions(name, str(client.get("kind", "")), state) if is_simulated(client) else (),
                principal=str(client.get("principal") or ""),
            )
        )
    return ClientsView(
        clients=tuple(rows),
        topics=tuple(t for t in sorted(snapshot.get("topics") or {}) if not t.startswith("__")),
        groups=tuple(sorted(snapshot.get("groups") or {})),
    )


def client_stats(snapshot: Mapping[str, Any]) -> ClientStats:
    return ClientStats(
        rows=tuple(
            (str(c.get("name")), _stats(c))
            for c in sorted(
                snapshot.get("clients") or (), key=lambda c: (c.get("kind", ""), c.get("name", ""))
            )
        )
    )
