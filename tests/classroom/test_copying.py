"""A copy of a demo's state: same topics and configs, the same records at the same offsets, offsets, clients."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from lab.classroom.copying import DemoState, commit_offset, fill, read_state
from lab.runtime.live import LiveLab
from lab.runtime.spec import TopicSpec
from tests.classroom.helpers import FakeWall, live_lab, on_driver
from tests.processes import wait_until
from tests.walltime import advance, now_ms, until_done


@pytest.fixture
def labs() -> Iterator[list[LiveLab]]:
    made: list[LiveLab] = []
    yield made
    for live in made:
        live.stop()


def _everything(lab: LiveLab) -> dict[str, list[tuple[int, str | None, str | None]]]:
    out = {}
    for topic in lab.cluster.topics():
        if topic.startswith("__"):
            continue
        for p in range(lab.cluster.partition_count(topic)):
            out[f"{topic}-{p}"] = [
                (r["offset"], r["key"], r["value"]) for r in lab.cluster.browse(topic, p, limit=10_000)
            ]
    return out


def _demo(tmp_path: Path, labs: list[LiveLab]) -> LiveLab:
    demo = live_lab(
        tmp_path,
        "demo",
        rate=10.0,
        config={"zookeeper.session.timeout.ms": "1500", "min.insync.replicas": "1"},
        topics=(
            TopicSpec(name="orders", partitions=3, replication_factor=3, config={"retention.ms": "86400000"}),
            TopicSpec(name="audit", partitions=1, replication_factor=2),
        ),
    )
    labs.append(demo)
    for key in ("a", "b", "c", "d"):
        demo.act("produce", {"topic": "orders", "count": "7", "key": key}).result(30)
    demo.act("produce", {"topic": "audit", "count": "3"}).result(30)

    for p in range(3):
        on_driver(demo, lambda lab, p=p: commit_offset(lab, "billing", "orders", p, 2))
    demo.act("client-producer", {"topic": "audit", "rate": "2", "name": "feeder"}).result(30)
    return demo


def test_the_copy_has_the_same_topics_records_offsets_and_clients(
    tmp_path: Path, labs: list[LiveLab]
) -> None:
    demo = _demo(tmp_path, labs)
    demo.act("clock-pause", {}).result(10)  # a still picture to compare
    state: DemoState = on_driver(demo, read_state)
    original = on_driver(demo, _everything)
    assert state.record_count == sum(len(v) for v in original.values()) >= 31
    assert [t.name for t in state.topics] == ["audit", "orders"]
    committed = on_driver(demo, lambda lab: lab.cluster.groups()["billing"]["committed"])
    assert committed
    assert set(committed.values()) <= {0, 2}
    assert state.committed == {"billing": {("orders", int(k[-1])): v for k, v in committed.items()}}
    assert [c.name for c in state.clients] == ["feeder"]

    copy = live_lab(
        tmp_path, "copy", brokers=state.brokers, config=dict(state.config), topics=state.topics, rate=10.0
    )
    labs.append(copy)
    said = on_driver(copy, lambda lab: fill(lab, state))
    assert said == f"{state.record_count} record(s) copied into 2 topic(s)."
    copy.act("clock-pause", {}).result(10)
    copied = on_driver(copy, _everything)
    # The committed records, at the same partitions and offsets, with the same keys and values.
    for name, records in original.items():
        assert copied[name][: len(records)] == records, name
    assert on_driver(copy, lambda lab: lab.cluster.topic_config("orders")) == {"retention.ms": "86400000"}
    assert on_driver(copy, lambda lab: lab.cluster.partition_count("orders")) == 3
    groups = on_driver(copy, lambda lab: lab.cluster.groups())
    assert groups["billing"]["committed"] == committed
    assert dict(copy.spec.config)["min.insync.replicas"] == "1"
    assert [c.name for c in copy.spec.clients] == ["feeder"]
    assert on_driver(copy, lambda lab: lab.cluster.simulated["feeder"].state) == "running"


def test_broker_faults_are_not_copied(tmp_path: Path, labs: list[LiveLab]) -> None:
    demo = live_lab(
        tmp_path,
        "faulty",
        rate=10.0,
        config={"zookeeper.session.timeout.ms": "1500"},
        topics=(TopicSpec(name="orders", partitions=1, replication_factor=3),),
    )
    labs.append(demo)
    demo.act("produce", {"topic": "orders", "count": "4"}).result(30)
    on_driver(demo, lambda lab: lab.cluster.kill_broker(3))
    state = on_driver(demo, read_state)
    assert state.brokers == 3
    copy = live_lab(tmp_path, "healthy", config=dict(state.config), topics=state.topics, rate=10.0)
    labs.append(copy)
    on_driver(copy, lambda lab: fill(lab, state))
    states = on_driver(copy, lambda lab: [b["state"] for b in lab.cluster.snapshot()["brokers"]])
    assert states == ["alive", "alive", "alive"]
    assert wait_until(lambda: len(on_driver(copy, _everything)["orders-0"]) == 4, 10)
    assert copy.spec.clients == ()  # the demo had no simulated client


def test_filling_a_copy_holds_up_no_other_call_on_it(tmp_path: Path, labs: list[LiveLab]) -> None:
    demo = _demo(tmp_path, labs)
    state: DemoState = on_driver(demo, read_state)
    wall = FakeWall()
    copy = live_lab(
        tmp_path, "copy", wall=wall, brokers=state.brokers, config=dict(state.config), topics=state.topics
    )
    labs.append(copy)
    before = now_ms(copy)
    filling = copy.submit(lambda lab: fill(lab, state))
    # Meanwhile another call answers, and the copy's clock has not leapt on (its wall has not moved).
    assert now_ms(copy) == before
    assert not filling.done()
    assert until_done(copy, wall, filling) == f"{state.record_count} record(s) copied into 2 topic(s)."
    assert on_driver(copy, lambda lab: lab.cluster.groups()["billing"]["committed"])


def test_a_copy_without_the_demos_topics_gets_them_first(tmp_path: Path, labs: list[LiveLab]) -> None:
    demo = _demo(tmp_path, labs)
    demo.act("clock-pause", {}).result(10)
    state: DemoState = on_driver(demo, read_state)
    copy = live_lab(tmp_path, "bare", rate=10.0)  # made without the demo's topics
    labs.append(copy)
    assert on_driver(copy, lambda lab: lab.cluster.topics()) == []
    said = on_driver(copy, lambda lab: fill(lab, state), 60)
    assert said == f"{state.record_count} record(s) copied into 2 topic(s)."
    copy.act("clock-pause", {}).result(10)
    original, copied = on_driver(demo, _everything), on_driver(copy, _everything)
    for name, records in original.items():
        assert copied[name][: len(records)] == records, name
    assert on_driver(copy, lambda lab: lab.cluster.topic_config("orders")) == {"retention.ms": "86400000"}


def test_creating_a_copys_missing_topics_holds_up_no_one_else(tmp_path: Path, labs: list[LiveLab]) -> None:
    from lab.engine.metadata.store import LinkState

    demo = _demo(tmp_path, labs)
    demo.act("clock-pause", {}).result(10)
    state: DemoState = on_driver(demo, read_state)
    wall = FakeWall()
    copy = live_lab(tmp_path, "bare", wall=wall, config={"zookeeper.session.timeout.ms": "6000"})
    labs.append(copy)
    # The copy's admin client reaches ZooKeeper, but its answers are held: a slow, connected server.
    on_driver(copy, lambda lab: lab.cluster._admin.set_link(LinkState.HELD))
    before = now_ms(copy)
    filling = copy.submit(lambda lab: fill(lab, state))
    assert now_ms(copy) - before < 1000  # another call answered, and the clock did not leap
    advance(copy, wall, 1.0)
    assert 1000 <= now_ms(copy) - before < 3000
    assert not filling.done()  # the topics' znodes are not written yet: the records wait
    on_driver(copy, lambda lab: lab.cluster._admin.set_link(LinkState.OPEN))
    assert until_done(copy, wall, filling) == f"{state.record_count} record(s) copied into 2 topic(s)."
