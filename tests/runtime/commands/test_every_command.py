"""Every command a lab knows travels as JSON: its arguments and its answer survive ``json.dumps`` and
``json.loads`` unchanged, on a real run of each (so a command can go to another process, and the
lab's journal can keep it)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lab.runtime import actions
from lab.runtime.commands.users import credentials, upsert_args
from lab.runtime.live import LiveLab
from lab.runtime.spec import TopicSpec
from tests.walltime import FakeWall, advance, still_lab, until_done


def _same_as_json(value: Any) -> bool:
    return json.loads(json.dumps(value, allow_nan=False)) == value


def _replicas(lab: LiveLab, topic: str) -> list[int]:
    return list(lab.act("topic-describe", {"topic": topic}).result(10)["partitions"][0]["replicas"])


def _reassigned(lab: LiveLab, wall: FakeWall, topic: str, replicas: list[int]) -> None:
    for _ in range(120):
        if _replicas(lab, topic) == replicas:
            return
        advance(lab, wall, 0.5)
    raise AssertionError(f"{topic}-0 never had replicas {replicas}")


def test_every_command_takes_and_answers_json_on_a_real_run(tmp_path: Path) -> None:
    lab, wall = still_lab(
        tmp_path, "every", topics=(TopicSpec(name="orders", partitions=3, replication_factor=3),)
    )
    ran: list[str] = []

    def run(command: str, /, **args: Any) -> Any:
        assert _same_as_json(args), (command, args)
        answer = until_done(lab, wall, lab.act(command, args))
        assert _same_as_json(answer), (command, answer)
        ran.append(command)
        return answer

    try:
        for read in ("snapshot", "topics", "clock", "groups"):
            run(read)
        for read in ("topic-describe", "topic-configs", "topic-state"):
            run(read, topic="orders")
        run("events", since=0, limit=5)
        run("produce", topic="orders", count=2, acks="all")
        run("records-send", topic="orders", key="k{i}", value="v{i}", partition=0, acks="all", count=2)
        records = [
            {"key": "k", "value": None, "partition": None},
            {"key": None, "value": "v", "partition": 1},
        ]
        run(
            "records-produce",
            topic="orders",
            records=records,
            acks="all",
            retries=None,
            request_id="r1",
            poll="/p",
        )
        run("records-produce-outcome", request_id="r1", poll="/p")
        run("records-read", topic="orders", partition=0, offset=None, timestamp=None, limit=5, search=None)
        run("messages", topic="orders", partition=0, start="newest", search="", limit=5)
        run(
            "records-consume",
            topic="orders",
            group="g",
            partition=None,
            limit=10,
            auto_offset_reset="earliest",
        )
        run("group", group="g")
        run(
            "group-reset",
            group="g",
            topic="orders",
            to="earliest",
            offset=None,
            timestamp=None,
            partitions=None,
        )
        run("topic-create", name="t2", partitions=1, replication_factor=3, config={"retention.ms": "60000"})
        run("topic-configs-alter", topic="t2", set={"cleanup.policy": "compact"}, remove=["retention.ms"])
        run("topic-partitions", topic="t2", total=2)
        backwards = list(reversed(_replicas(lab, "t2")))
        run("topic-reassign", topic="t2", plan={"0": backwards})
        _reassigned(lab, wall, "t2", backwards)
        run("topic-elect-preferred", topic="t2", partitions=[0])
        run("topic-delete", topic="t2")
        acl = {"resource_type": "Topic", "name": "orders", "principal": "User:alice", "operation": "Write"}
        run("acl-create", **acl, pattern="literal", host="*", permission="allow")
        run("acls", topic="orders")
        run("acl-delete", **acl)
        for credential in credentials("alice-secret"):
            run("user-upsert", **upsert_args("alice", credential))
        run("users")
        run("user-delete", user="alice", mechanism="SCRAM-SHA-512")
        run("user-delete", user="alice")
        run("txn-init", producer="tp", transactional_id="tx", transaction_timeout_ms=60000)
        run("txn-begin", producer="tp")
        run("txn-send", producer="tp", topic="orders", count=2, key="k", partition=0)
        run("txn-commit", producer="tp")
        run("transactions")
        run("txn-begin", producer="tp")
        run("txn-send", producer="tp", topic="orders", count=1, key=None, partition=None)
        run("txn-abort", producer="tp")
        run("txn-close", producer="tp")
        run("client-producer", topic="orders", rate=5, acks="all", name="p1")
        run("client-consumer", group="cg", topics="orders", name="c1")
        run("client-stop", name="p1")
        run("client-crash", name="c1")
        run("client-remove", name="p1")
        run("slow", broker=2, ms=100)
        run("heal", broker=2)
        run("isolate", broker=2, **{"from": "brokers"})
        run("heal", broker=2)
        run("pause", broker=3)
        run("resume", broker=3)
        run("kill", broker=3, lose_unflushed=False)
        run("restart", broker=3)
        run("shutdown", broker=2)
        run("clock-speed", rate=2)
        run("clock-pause")
        run("clock-step", ms=10)
        run("clock-resume")
        run("clock-reset")
    finally:
        lab.stop()
    ours = {name for name, parse in actions.COMMANDS.items() if parse.__module__.startswith("lab.runtime")}
    assert ours - set(ran) == set()  # a new command joins this run


def test_arguments_that_are_not_json_are_refused_where_they_arrive(tmp_path: Path) -> None:
    lab, _ = still_lab(tmp_path, "not-json")
    try:
        for args in ({"topic": ("orders",)}, {"topic": object()}, {1: "orders"}):
            future = lab.act("topic-describe", args)  # type: ignore[arg-type]
            assert future.done()
            error = future.exception()
            assert error is not None
            assert "a command's arguments are JSON values" in str(error)
    finally:
        lab.stop()
