"""What the panel runs on a lab's driver thread: answers that wait for the cluster, and the lab's spec."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.adminpanel import ops
from lab.engine.errors import InvalidConfig
from lab.labs import live_of
from lab.models import Lab
from lab.runtime.live import LiveLab
from lab.runtime.spec import TopicSpec
from tests.adminpanel.conftest import on_driver, produce
from tests.walltime import (
    advance,
    now_ms,
    pause_controller,
    pause_coordinator,
    still_lab,
    ticks_later,
    until_done,
)
from tests.walltime import produce as produce_for

pytestmark = pytest.mark.django_db


def test_a_change_to_a_topic_the_spec_lacks_records_the_topic_as_it_is(lab: Lab) -> None:
    on_driver(
        lab, lambda live: live.cluster.create_topic("made-by-a-script", partitions=1, replication_factor=2)
    )
    said = live_of(lab).submit(ops.add_partitions("made-by-a-script", 2)).result(10)
    assert said.startswith("Topic made-by-a-script grows from 1 to 2 partitions")
    spec = {t.name: t for t in live_of(lab).spec.topics}
    assert (spec["made-by-a-script"].partitions, spec["made-by-a-script"].replication_factor) == (2, 2)
    on_driver(lab, ops.alter_config("made-by-a-script", {"retention.ms": "5000"}, ()))
    assert live_of(lab).spec.topics[-1].config == {"retention.ms": "5000"}


def test_with_the_clock_paused_an_answer_says_so_instead_of_waiting(
    lab: Lab, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ops, "WAIT_S", 0.2)

    def pause(live: LiveLab) -> None:
        live.clock.pause(live.cluster.now_ms)

    on_driver(lab, pause)
    said = live_of(lab).submit(ops.create_topic("later", 1, 1, {})).result(10)
    assert (
        said
        == "Topic later created: 1 partition(s), replication factor 1; its partitions have no leader yet (is the clock paused?)."
    )


def test_the_newest_matches_of_a_search_are_the_last_ones(lab: Lab) -> None:
    produce(lab, "orders", [(None, f"{'hit' if i % 2 else 'miss'}-{i}") for i in range(30)], partition=0)
    page = on_driver(
        lab, ops.browse("orders", 0, start="newest", offset=None, time_ms=None, search="hit", limit=3)
    )
    assert [r["value"] for r in page.records] == ["hit-25", "hit-27", "hit-29"]
    assert (page.start, page.high_watermark, page.full) == (25, 30, False)


def test_a_reset_its_coordinator_does_not_answer_holds_up_no_one_else(tmp_path: Path) -> None:
    lab, wall = still_lab(
        tmp_path, "panel-reset", topics=(TopicSpec(name="orders", partitions=1, replication_factor=3),)
    )
    try:
        produce_for(lab, wall, "orders", 3)
        until_done(lab, wall, lab.submit(ops.reset_offsets("audit", "orders", "latest", None)))
        coordinator = pause_coordinator(lab, "audit")
        before = now_ms(lab)
        slow = lab.submit(ops.reset_offsets("audit", "orders", "earliest", None))
        assert now_ms(lab) - before < 1000  # another call answered, and the clock did not leap
        assert not slow.done()
        advance(lab, wall, 1.0)
        assert 1000 <= now_ms(lab) - before < 3000
        assert not slow.done()
        lab.submit(lambda lab: lab.cluster.resume_broker(coordinator)).result(10)
        assert (
            until_done(lab, wall, slow)
            == "Group audit's offsets of orders reset to the earliest offset: orders-0 → 0."
        )
    finally:
        lab.stop()


def test_a_config_change_the_controller_does_not_read_holds_up_no_one_else(tmp_path: Path) -> None:
    lab, wall = still_lab(
        tmp_path,
        "panel-config",
        topics=(TopicSpec(name="orders", partitions=1, replication_factor=3),),
        config={"zookeeper.session.timeout.ms": "6000"},
    )
    try:
        controller = pause_controller(lab)
        before = now_ms(lab)
        slow = lab.submit(ops.alter_config("orders", {"retention.ms": "60000"}, ()))
        assert now_ms(lab) - before < 1000  # another call answered, and the clock did not leap
        assert not slow.done()
        advance(lab, wall, 1.0)
        assert 1000 <= now_ms(lab) - before < 3000
        assert not slow.done()
        lab.submit(lambda lab: lab.cluster.resume_broker(controller)).result(10)
        assert until_done(lab, wall, slow) == "Topic orders config: retention.ms=60000."
        assert lab.submit(lambda lab: lab.cluster.topic_config("orders")).result(10) == {
            "retention.ms": "60000"
        }
    finally:
        lab.stop()


def test_a_config_change_is_answered_once_written_when_the_controller_stays_away(tmp_path: Path) -> None:
    lab, wall = still_lab(
        tmp_path,
        "panel-config-away",
        topics=(TopicSpec(name="orders", partitions=1, replication_factor=3),),
        config={"zookeeper.session.timeout.ms": "30000"},
    )
    try:
        pause_controller(lab)
        asked = lab.submit(ops.alter_config("orders", {"retention.ms": "60000"}, ()))
        ticks_later(lab)  # asked
        advance(lab, wall, 0.5)  # ZooKeeper answers the write; the paused controller reads nothing
        said = asked.result(30)
        assert said == (
            "Topic orders config: retention.ms=60000, written to ZooKeeper; the brokers apply it when the "
            "controller reads the change (is it paused?): the page shows it then."
        )
        assert lab.spec.topics[0].config == {"retention.ms": "60000"}
        refused = lab.submit(ops.alter_config("orders", {"retention.ms": "soon"}, ()))
        ticks_later(lab)
        advance(lab, wall, 0.5)
        with pytest.raises(InvalidConfig):  # Kafka's error, and nothing written
            refused.result(10)
    finally:
        lab.stop()
