"""The Clients view from the wire's snapshot of real connections."""

from __future__ import annotations

from lab.visuals.wire_clients import UNKNOWN, wire_clients_view

BOOTSTRAP = "127.0.0.1:9092,127.0.0.1:9093"


def conn(conn_id: int, **kw: object) -> dict[str, object]:
    row: dict[str, object] = {
        "id": conn_id,
        "peer": f"127.0.0.1:{50000 + conn_id}",
        "client_id": "billing",
        "software_name": "kafka-python",
        "software_version": "2.3.3",
        "broker": 1,
        "connected_ms": 61_250,
        "requests": 40,
        "requests_per_s": 12.345,
        "in_flight": 2,
        "errors": 0,
        "last_error": "",
        "last_error_api": "",
        "last_error_ms": None,
        "records_produced": 0,
        "records_fetched": 0,
    }
    row.update(kw)
    return row


def test_each_connection_shows_who_where_and_how_busy() -> None:
    view = wire_clients_view([conn(1)], bootstrap=BOOTSTRAP)
    [row] = view.rows
    assert (row.address, row.client_id, row.software, row.broker) == (
        "127.0.0.1:50001",
        "billing",
        "kafka-python 2.3.3",
        1,
    )
    assert (row.requests_per_s, row.in_flight, row.connected_at) == ("12.3", 2, "1:01.250")
    assert row.last_error == ""
    assert view.clients == 1


def test_an_older_client_is_unknown_software_and_errors_name_their_api() -> None:
    [row] = wire_clients_view(
        [
            conn(
                1,
                software_name="",
                software_version="",
                last_error="NOT_LEADER_OR_FOLLOWER",
                last_error_api="Produce",
                last_error_ms=2_000,
            )
        ],
        bootstrap=BOOTSTRAP,
    ).rows
    assert row.software == UNKNOWN
    assert (row.last_error, row.last_error_api, row.last_error_at) == (
        "NOT_LEADER_OR_FOLLOWER",
        "Produce",
        "0:02.000",
    )


def test_a_clients_connections_sit_together() -> None:
    view = wire_clients_view(
        [
            conn(1, client_id="b", broker=2),
            conn(2, client_id="a", broker=3),
            conn(3, client_id="b", broker=1),
            conn(4, client_id="a", broker=1),
        ],
        bootstrap=BOOTSTRAP,
    )
    assert [(r.client_id, r.broker) for r in view.rows] == [("a", 1), ("a", 3), ("b", 1), ("b", 2)]
    assert view.clients == 2


def test_the_clock_note_says_clients_keep_wall_time_when_the_lab_does_not() -> None:
    assert wire_clients_view([conn(1)], bootstrap=BOOTSTRAP).clock_note == ""
    assert "paused" in wire_clients_view([conn(1)], bootstrap=BOOTSTRAP, paused=True).clock_note
    assert "0.1\u00d7 wall time" in wire_clients_view([conn(1)], bootstrap=BOOTSTRAP, rate=0.1).clock_note
    assert wire_clients_view([], bootstrap=BOOTSTRAP, paused=True).clock_note == ""  # nobody to warn


def test_a_connection_says_its_listener_and_who_logged_in() -> None:
    view = wire_clients_view(
        [conn(1), conn(2, listener="SASL_SSL", principal="User:alice")], bootstrap=BOOTSTRAP
    )
    plain, secured = sorted(view.rows, key=lambda r: r.conn_id)
    assert (plain.listener, plain.principal) == ("PLAINTEXT", "User:ANONYMOUS")
    assert (secured.listener, secured.principal) == ("SASL_SSL", "User:alice")
