"""Controls by name: bad input is refused where it arrives, with a named error, before any engine work."""

from __future__ import annotations

import pytest

from lab.engine.errors import IllegalArgument, InvalidConfig
from lab.runtime import actions
from lab.runtime.actions import CONTROLS, plan, register


@pytest.mark.parametrize(
    ("name", "params", "match"),
    [
        ("kill", {}, "broker is required"),
        ("kill", {"broker": "0"}, "broker must be between 1 and 12, not 0"),
        (
            "isolate",
            {"broker": "1", "from": "moon"},
            "from must be one of zookeeper, brokers, clients, not 'moon'",
        ),
        ("slow", {"broker": "1", "ms": "-5"}, "ms must be between 1 and 60000, not -5"),
        ("produce", {"topic": "", "count": "1"}, "topic is required"),
        ("produce", {"topic": "t", "acks": "2"}, "acks must be one of 0, 1, all, not '2'"),
        ("produce", {"topic": "t", "key": "k" * 1001}, "key is longer than 1000 characters"),
        ("topic-create", {"name": "t", "partitions": "0"}, "partitions must be between 1 and 32, not 0"),
        ("topic-create", {"name": "t", "partitions": "33"}, "partitions must be between 1 and 32, not 33"),
        ("client-producer", {"topic": "t", "rate": "fast"}, "rate must be a number, not 'fast'"),
        ("client-consumer", {"group": "g", "topics": "t", "name": "a b"}, "a client name uses letters"),
        ("clock-step", {}, "step either some events or some ms"),
        ("clock-step", {"events": "1", "ms": "5"}, "step either some events or some ms"),
        ("clock-speed", {"rate": "0"}, "the clock runs at 0.1x to 10x, not 0x"),
        ("launch", {}, "there is no control named 'launch'"),
    ],
)
def test_bad_parameters_are_refused_by_name(name: str, params: dict, match: str) -> None:
    with pytest.raises(IllegalArgument, match=match):
        plan(name, params)


def test_a_topic_config_is_checked_as_the_forms_and_the_api_check_it() -> None:
    with pytest.raises(InvalidConfig, match=r"configuration min\.insync\.replicas: must be at least 1"):
        plan("topic-create", {"name": "t", "min_insync_replicas": "0"})
    assert callable(plan("topic-create", {"name": "t", "min_insync_replicas": "13"}))  # Kafka has no maximum


def test_every_control_the_pages_offer_is_known() -> None:
    offered = {
        "kill",
        "restart",
        "pause",
        "resume",
        "slow",
        "isolate",
        "heal",
        "shutdown",
        "produce",
        "topic-create",
        "client-producer",
        "client-consumer",
        "client-stop",
        "client-crash",
        "client-remove",
        "clock-pause",
        "clock-resume",
        "clock-step",
        "clock-speed",
        "clock-reset",
        # The Transactions panel's transactional producer.
        "txn-init",
        "txn-begin",
        "txn-send",
        "txn-commit",
        "txn-abort",
        "txn-close",
    }
    assert offered == CONTROLS
    assert callable(plan("kill", {"broker": "3"}))


def test_an_app_registers_a_command_once_and_the_lab_knows_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(actions, "_COMMANDS", dict(actions._COMMANDS))
    seen: list[dict] = []

    def parse(args):  # type: ignore[no-untyped-def]
        seen.append(dict(args))
        return lambda lab: "hello"

    register("classroom.hello", parse)
    assert plan("classroom.hello", {"who": "ada"})(None) == "hello"  # type: ignore[arg-type]
    assert seen == [{"who": "ada"}]
    with pytest.raises(ValueError, match=r"there is a command named 'classroom\.hello' already"):
        register("classroom.hello", parse)
    with pytest.raises(ValueError, match="there is a command named 'kill' already"):
        register("kill", parse)
    with pytest.raises(ValueError, match="lowercase words"):
        register("Hello World", parse)
    assert "classroom.hello" not in CONTROLS  # a lab page's control route offers only the dashboard's
