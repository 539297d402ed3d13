"""The listeners' view (lab/visuals/listeners.py): states in words, the clock's note, the snippets."""

from __future__ import annotations

import ast

from lab.runtime.listeners import ListenerState
from lab.visuals.clock import speed_label
from lab.visuals.listeners import clock_note, listeners_view, snippets


def _states(*open_: bool, error: str = "") -> list[ListenerState]:
    return [
        ListenerState(broker_id=b, host="10.0.0.5", port=19091 + b, open=o, error=error if b == 2 else "")
        for b, o in enumerate(open_, start=1)
    ]


def test_bootstrap_servers_name_every_broker_open_or_not_in_broker_order() -> None:
    view = listeners_view(list(reversed(_states(True, False, True))), rate=1.0, paused=False)
    assert view.bootstrap_servers == "10.0.0.5:19092,10.0.0.5:19093,10.0.0.5:19094"
    assert [b.state for b in view.brokers] == ["open", "closed", "open"]
    assert view.missing == ""


def test_a_listener_that_could_not_open_says_why_and_that_the_broker_runs() -> None:
    view = listeners_view(
        _states(True, False, True, error="port 19093 could not be opened: Address already in use"),
        rate=1.0,
        paused=False,
    )
    failed = view.brokers[1]
    assert failed.state == "failed"
    assert "Address already in use" in failed.why
    assert "The broker runs" in failed.why


def test_ipv6_hosts_are_bracketed_as_clients_write_them() -> None:
    view = listeners_view(
        [ListenerState(broker_id=1, host="fd00::5", port=19092, open=True)], rate=1.0, paused=False
    )
    assert view.bootstrap_servers == "[fd00::5]:19092"


def test_no_listeners_say_why() -> None:
    assert (
        listeners_view([], rate=1.0, paused=False, missing="no port was free").missing == "no port was free"
    )
    assert listeners_view([], rate=1.0, paused=False).missing


def test_the_clock_note_tells_what_each_speed_means_for_a_real_client() -> None:
    assert clock_note(1.0, paused=False) == ""
    paused = clock_note(1.0, paused=True)
    assert "answer nothing" in paused
    assert "wall time" in paused
    assert "request.timeout.ms" in paused
    slow = clock_note(0.1, paused=False)
    assert speed_label(0.1) in slow
    assert "10 s of yours" in slow
    assert "time out on the client" in slow
    fast = clock_note(10.0, paused=False)
    assert speed_label(10.0) in fast
    assert "session.timeout.ms" in fast
    assert "rebalance" in fast


def test_the_python_snippets_are_python_and_name_the_lab() -> None:
    made = {s.name: s for s in snippets("127.0.0.1:19092,127.0.0.1:19093", "orders")}
    assert list(made) == ["kcat", "kafka-python", "confluent-kafka"]
    for name in ("kafka-python", "confluent-kafka"):
        ast.parse(made[name].text)  # copy-paste runs: no syntax error
        assert "127.0.0.1:19092,127.0.0.1:19093" in made[name].text
        assert '"orders"' in made[name].text
    assert made["kcat"].text.splitlines()[0] == "kcat -b 127.0.0.1:19092,127.0.0.1:19093 -L"
