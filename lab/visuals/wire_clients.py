"""Real Kafka clients connected to the lab's listeners: one row per connection, from the wire's snapshot.

A client opens one connection per broker it talks to (and often one to a bootstrap server), so
rows are ordered by client, then broker: a client's connections sit together.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lab.visuals.clock import clock_label, speed_label

UNKNOWN = "unknown"  # ApiVersions before v3 carries no software name

TIPS = {
    "software": "The client's library and version, as it said in ApiVersions v3 on this connection or another "
    "from the same host with the same client.id (older clients do not say: unknown)",
    "rate": "Requests per second over the last few seconds of wall time (clients send in wall time)",
    "in_flight": "Requests the broker has not answered yet (a paused broker holds them)",
    "last_error": "The last error the lab answered this connection with (Kafka's name) and the API that got it",
    "since": "When the connection opened, in the lab's virtual time",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class WireClientRow:
    conn_id: int
    address: str
    client_id: str
    software: str
    broker: int
    requests_per_s: str
    requests: int
    in_flight: int
    last_error: str
    last_error_api: str
    last_error_at: str
    connected_at: str
    produced: int
    fetched: int
    listener: str = "PLAINTEXT"  # the security protocol of the listener it came in by
    principal: str = "User:ANONYMOUS"  # who it is: User:<name> once it logged in over SASL


@dataclass(frozen=True, slots=True, kw_only=True)
class WireClientsView:
    rows: tuple[WireClientRow, ...]
    bootstrap: str  # "host:port,..." clients connect to; "" when the lab has no listeners
    clients: int  # distinct clients (software and client.id)
    clock_note: str  # when the lab's clock is not wall time, what that means for clients
    tips: tuple[tuple[str, str], ...] = tuple(TIPS.items())

    @property
    def tip(self) -> dict[str, str]:
        return dict(self.tips)


def _software(row: Mapping[str, Any]) -> str:
    name = str(row.get("software_name") or "")
    return f"{name} {row.get('software_version') or ''}".strip() if name else UNKNOWN


def _clock_note(rate: float, paused: bool) -> str:
    if paused:
        return (
            "The lab's clock is paused: brokers answer nothing until it runs, but the clients' own "
            "timeouts (request.timeout.ms, session.timeout.ms) still run in wall time."
        )
    if rate != 1.0:
        return (
            f"The lab runs at {speed_label(rate)} wall time: the clients' own timeouts still run in wall time, "
            "so they may give up on answers the lab is still working on."
        )
    return ""


def wire_clients_view(
    clients: Sequence[Mapping[str, Any]], *, bootstrap: str, rate: float = 1.0, paused: bool = False
) -> WireClientsView:
    rows = [
        WireClientRow(
            conn_id=int(c["id"]),
            address=str(c.get("peer") or ""),
            client_id=str(c.get("client_id") or ""),
            software=_software(c),
            broker=int(c["broker"]),
            requests_per_s=f"{float(c.get('requests_per_s') or 0):.1f}",
            requests=int(c.get("requests") or 0),
            in_flight=int(c.get("in_flight") or 0),
            last_error=str(c.get("last_error") or ""),
            last_error_api=str(c.get("last_error_api") or ""),
            last_error_at=clock_label(int(c["last_error_ms"])) if c.get("last_error_ms") is not None else "",
            connected_at=clock_label(int(c.get("connected_ms") or 0)),
            produced=int(c.get("records_produced") or 0),
            fetched=int(c.get("records_fetched") or 0),
            listener=str(c.get("listener") or "PLAINTEXT"),
            principal=str(c.get("principal") or "User:ANONYMOUS"),
        )
        for c in clients
    ]
    rows.sort(key=lambda r: (r.software, r.client_id, r.broker, r.conn_id))
    return WireClientsView(
        rows=tuple(rows),
        bootstrap=bootstrap,
        clients=len({(r.software, r.client_id) for r in rows}),
        clock_note=_clock_note(rate, paused) if rows else "",
    )
