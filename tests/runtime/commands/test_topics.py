"""Topic admin commands (the API's and the topic admin's): requests in flight that hold up no one else,
answers when the clock is paused, and what they record in the lab's spec."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from lab.engine.errors import InvalidConfig, InvalidTopic
from lab.engine.metadata.store import LinkState
from lab.runtime.live import LiveLab
from lab.runtime.spec import TopicSpec
from tests.classroom.helpers import on_driver
from tests.walltime import FakeWall, advance, now_ms, pause_controller, still_lab, ticks_later, until_done

ORDERS = (TopicSpec(name="orders", partitions=1, replication_factor=3),)


def _replicas(lab: LiveLab, topic: str, partition: int = 0) -> list[int]:
    return list(lab.act("topic-describe", {"topic": topic}).result(10)["partitions"][partition]["replicas"])


def _moved_to(lab: LiveLab, wall: FakeWall, replicas: list[int]) -> None:
    """Move the lab's clock on until orders-0 has ``replicas``, led by its first... or not (the move keeps
    the old leader when it stays a replica)."""
    for _ in range(120):
        if _replicas(lab, "orders") == replicas:
            return
        advance(lab, wall, 0.5)
    raise AssertionError(f"orders-0 never had replicas {replicas}")


def _hold_admin(lab: LiveLab, state: LinkState) -> None:
    """The lab's admin client reaches ZooKeeper, but (HELD) its answers are held: a slow, connected server."""
    on_driver(lab, lambda live: live.cluster._admin.set_link(state))


@pytest.mark.parametrize(
    ("name", "args", "answer"),
    [
        (
            "topic-create",
            {"name": "audit", "partitions": 1, "replication_factor": 3},
            "Topic audit created: 1 partition(s), replication factor 3.",
        ),
        ("topic-delete", {"topic": "orders"}, "Topic orders deleted: its replicas removed their logs."),
        (
            "topic-partitions",
            {"topic": "orders", "total": 2},
            "Topic orders grows from 1 to 2 partitions (keys now map to other partitions: murmur2(key) mod "
            "the new count).",
        ),
        (
            "topic-reassign",
            {"topic": "orders", "plan": {"0": [3, 2, 1]}},
            "Reassignment of 1 partition(s) of orders started: the new replicas catch up, then the leader "
            "moves if it must, then the old replicas are removed.",
        ),
        ("topic-elect-preferred", {"topic": "orders"}, "Preferred leaders elected: orders-0 → broker 3."),
        (
            "topic-configs-alter",
            {"topic": "orders", "set": {"retention.ms": "60000"}},
            "Topic orders config: retention.ms=60000.",
        ),
    ],
)
def test_a_topic_command_zookeeper_is_slow_to_answer_holds_up_no_one_else(
    tmp_path: Path, name: str, args: dict[str, Any], answer: str
) -> None:
    lab, wall = still_lab(
        tmp_path, "slow-admin", topics=ORDERS, config={"zookeeper.session.timeout.ms": "6000"}
    )
    try:
        if name == "topic-elect-preferred":  # broker 3 becomes the preferred replica; broker 1 keeps the lead
            until_done(lab, wall, lab.act("topic-reassign", {"topic": "orders", "plan": {"0": [3, 2, 1]}}))
            _moved_to(lab, wall, [3, 2, 1])
        _hold_admin(lab, LinkState.HELD)
        before = now_ms(lab)
        slow = lab.act(name, args)
        assert now_ms(lab) - before < 1000  # another call answered, and the clock did not leap
        assert not slow.done()
        advance(lab, wall, 1.0)
        assert 1000 <= now_ms(lab) - before < 3000  # the lab ran at its clock's rate meanwhile
        assert not slow.done()
        _hold_admin(lab, LinkState.OPEN)
        assert until_done(lab, wall, slow)["message"] == answer
    finally:
        lab.stop()


def test_with_the_clock_paused_an_answer_says_so_at_once_and_the_change_is_made_when_it_runs(
    tmp_path: Path,
) -> None:
    lab, wall = still_lab(tmp_path, "paused", topics=ORDERS)
    try:
        lab.act("clock-pause", {}).result(10)
        began = time.monotonic()
        said = lab.act("topic-create", {"name": "later", "partitions": 1, "replication_factor": 3}).result(10)
        assert (
            time.monotonic() - began < 3
        )  # not the wait for leaders: nothing moves while the clock is paused
        assert said == {
            "message": "Topic later asked for: the lab's clock is paused, so ZooKeeper answers when it runs "
            "again (resume or step it); the page shows the change then."
        }
        assert "later" not in lab.act("snapshot", {}).result(10)["topics"]
        lab.act("clock-resume", {}).result(10)
        for _ in range(40):
            if lab.act("snapshot", {}).result(10)["topics"].get("later"):
                break
            advance(lab, wall, 0.5)
        assert [
            p["leader"] >= 0 for p in lab.act("snapshot", {}).result(10)["topics"]["later"]["partitions"]
        ] == [True]
        assert [t.name for t in lab.spec.topics] == ["orders", "later"]  # recorded once ZooKeeper had it
    finally:
        lab.stop()


def test_a_change_to_a_topic_the_spec_lacks_records_the_topic_as_it_is(tmp_path: Path) -> None:
    lab, wall = still_lab(tmp_path, "unknown-to-spec")
    try:

        def make(live: LiveLab) -> None:
            live.cluster.create_topic("made-by-a-script", partitions=1, replication_factor=2)

        on_driver(lab, make)
        said = until_done(lab, wall, lab.act("topic-partitions", {"topic": "made-by-a-script", "total": 2}))
        assert said["message"].startswith("Topic made-by-a-script grows from 1 to 2 partitions")
        spec = {t.name: t for t in lab.spec.topics}
        assert (spec["made-by-a-script"].partitions, spec["made-by-a-script"].replication_factor) == (2, 2)
        args = {"topic": "made-by-a-script", "set": {"retention.ms": "5000"}}
        until_done(lab, wall, lab.act("topic-configs-alter", args))
        assert lab.spec.topics[-1].config == {"retention.ms": "5000"}
    finally:
        lab.stop()


def test_an_internal_topic_is_not_deleted(tmp_path: Path) -> None:
    lab, _ = still_lab(tmp_path, "internal")
    try:
        with pytest.raises(InvalidTopic, match="is a kafka internal topic and is not allowed to be marked"):
            lab.act("topic-delete", {"topic": "__consumer_offsets"}).result(10)
    finally:
        lab.stop()


def test_a_config_change_the_controller_does_not_read_holds_up_no_one_else(tmp_path: Path) -> None:
    lab, wall = still_lab(
        tmp_path, "panel-config", topics=ORDERS, config={"zookeeper.session.timeout.ms": "6000"}
    )
    try:
        controller = pause_controller(lab)
        before = now_ms(lab)
        slow = lab.act("topic-configs-alter", {"topic": "orders", "set": {"retention.ms": "60000"}})
        assert now_ms(lab) - before < 1000  # another call answered, and the clock did not leap
        assert not slow.done()
        advance(lab, wall, 1.0)
        assert 1000 <= now_ms(lab) - before < 3000
        assert not slow.done()
        lab.act("resume", {"broker": controller}).result(10)
        assert until_done(lab, wall, slow)["message"] == "Topic orders config: retention.ms=60000."
        configs = lab.act("topic-configs", {"topic": "orders"}).result(10)
        assert [c["value"] for c in configs if c["name"] == "retention.ms"] == ["60000"]
    finally:
        lab.stop()


def test_a_config_change_is_answered_once_written_when_the_controller_stays_away(tmp_path: Path) -> None:
    lab, wall = still_lab(
        tmp_path, "panel-config-away", topics=ORDERS, config={"zookeeper.session.timeout.ms": "30000"}
    )
    try:
        pause_controller(lab)
        asked = lab.act("topic-configs-alter", {"topic": "orders", "set": {"retention.ms": "60000"}})
        ticks_later(lab)  # asked
        advance(lab, wall, 0.5)  # ZooKeeper answers the write; the paused controller reads nothing
        said = asked.result(30)
        assert said["message"] == (
            "Topic orders config: retention.ms=60000, written to ZooKeeper; the brokers apply it when the "
            "controller reads the change (is it paused?): the page shows it then."
        )
        assert lab.spec.topics[0].config == {"retention.ms": "60000"}
        with pytest.raises(InvalidConfig):  # Kafka's error where the request arrives, and nothing written
            lab.act("topic-configs-alter", {"topic": "orders", "set": {"retention.ms": "soon"}}).result(10)
    finally:
        lab.stop()
