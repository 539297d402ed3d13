"""Kafka's compound ZooKeeper operations, the same on the memory store and on a real ZooKeeper."""

from __future__ import annotations

import json

import pytest

from lab.engine.metadata.kafkazk import (
    ControllerMoved,
    get_or_create_cluster_id,
    register_controller_and_increment_controller_epoch,
)
from lab.engine.tasks import Task
from tests.engine.metadata.conftest import Harness


def test_the_first_broker_writes_the_cluster_id_and_the_others_read_it(harness: Harness) -> None:
    h = harness
    a, b = h.open("broker-1").session, h.open("broker-2").session
    assert h.run(get_or_create_cluster_id(a, "q1L9zJ3kTfWlY1HkV2m3bA")) == "q1L9zJ3kTfWlY1HkV2m3bA"
    assert h.run(get_or_create_cluster_id(b, "another-proposal-xxxxx")) == "q1L9zJ3kTfWlY1HkV2m3bA"
    raw, stat = h.wait(b.get("/cluster/id"))
    assert raw == b'{"version":"1","id":"q1L9zJ3kTfWlY1HkV2m3bA"}'  # Kafka's ClusterIdZNode, byte for byte
    assert stat.ephemeral_owner == 0


def test_two_brokers_racing_for_the_cluster_id_agree(harness: Harness) -> None:
    h = harness
    a, b = h.open("broker-1").session, h.open("broker-2").session
    first = Task.start(get_or_create_cluster_id(a, "AAAAAAAAAAAAAAAAAAAAAA"))
    second = Task.start(get_or_create_cluster_id(b, "BBBBBBBBBBBBBBBBBBBBBB"))
    ids = {h.wait(first.outcome), h.wait(second.outcome)}
    assert len(ids) == 1


def test_the_controller_registers_and_bumps_the_epoch_in_one_multi(harness: Harness) -> None:
    h = harness
    a, b = h.open("broker-1"), h.open("broker-2")
    assert h.run(register_controller_and_increment_controller_epoch(a.session, 1, 1_704_067_200_123)) == (
        1,
        1,
    )
    raw, stat = h.wait(b.session.get("/controller"))
    assert json.loads(raw) == {"version": 1, "brokerid": 1, "timestamp": "1704067200123"}
    assert stat.ephemeral_owner == a.session.session_id
    epoch_raw, epoch_stat = h.wait(b.session.get("/controller_epoch"))
    assert (epoch_raw, epoch_stat.version) == (b"1", 1)  # created at 0 (Kafka's initial epoch), set to 1
    assert epoch_stat.mzxid == stat.czxid  # one transaction

    with pytest.raises(ControllerMoved, match="Controller moved to another broker"):
        h.run(register_controller_and_increment_controller_epoch(b.session, 2, 0))
    epoch_raw, epoch_stat = h.wait(b.session.get("/controller_epoch"))
    assert (epoch_raw, epoch_stat.version) == (b"1", 1)  # the failed multi changed nothing

    a.session.close()  # the controller goes: its ephemeral /controller with it
    assert h.run(register_controller_and_increment_controller_epoch(b.session, 2, 0)) == (2, 2)
    assert json.loads(h.wait(b.session.get("/controller"))[0])["brokerid"] == 2


def test_two_brokers_racing_to_be_controller_leave_one_controller_and_one_epoch(harness: Harness) -> None:
    h = harness
    sessions = [h.open(f"broker-{i}").session for i in (1, 2, 3)]
    tasks = [
        Task.start(register_controller_and_increment_controller_epoch(s, i, 0))
        for i, s in enumerate(sessions, start=1)
    ]
    h.until(lambda: all(t.outcome.done() for t in tasks), 5000, "every election attempt answered")
    won = [t.outcome.result() for t in tasks if t.outcome.failed_with() is None]
    lost = [t.outcome.failed_with() for t in tasks if t.outcome.failed_with() is not None]
    assert won == [(1, 1)]
    assert all(isinstance(e, ControllerMoved) for e in lost)
    assert h.wait(sessions[0].get("/controller_epoch"))[0] == b"1"
