"""The scenario player on a live lab: play runs to the end, step runs one step, the clock holds waits."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from lab.classroom.content import FIXTURES
from lab.classroom.player import ScenarioPlayer
from lab.engine.cluster import Cluster
from lab.engine.errors import IllegalState
from lab.runtime.live import LiveLab
from lab.scenarios.format import load, parse
from tests.classroom.helpers import FakeWall, live_lab, on_driver
from tests.processes import wait_until
from tests.walltime import advance, now_ms, pause_controller

SCENARIOS = FIXTURES / "scenarios"


@pytest.fixture
def labs() -> Iterator[list[LiveLab]]:
    made: list[LiveLab] = []
    yield made
    for live in made:
        live.stop()


def _player(tmp_path: Path, labs: list[LiveLab], name: str, **kw: object) -> tuple[LiveLab, ScenarioPlayer]:
    scenario = load(SCENARIOS / f"{name}.yaml")
    live = live_lab(
        tmp_path,
        name,
        brokers=scenario.cluster.brokers,
        seed=scenario.cluster.seed,
        config=dict(scenario.cluster.config),
        **kw,
    )
    labs.append(live)
    player = ScenarioPlayer(scenario, lab=name)
    live.add_tick_hook("player", player.tick)
    live.add_view("scenario", lambda _lab: player.view)
    return live, player


def test_play_runs_to_the_end_and_the_table_shows_every_step(tmp_path: Path, labs: list[LiveLab]) -> None:
    live, player = _player(tmp_path, labs, "consumer-rewind")
    assert wait_until(lambda: player.view.status == "ready", 10)
    assert [r.state for r in player.view.rows] == ["pending"] * len(player.scenario.steps)
    assert on_driver(live, player.play) == "Playing A consumer rewinds and reads again."
    assert wait_until(lambda: player.view.finished, 30), player.view
    view = player.view
    assert view.status == "passed"
    assert [r.state for r in view.rows] == ["passed"] * len(player.scenario.steps)
    assert [r.label for r in view.rows] == [s.label for s in player.scenario.steps]
    assert any("✓" in c and "values" in c for r in view.rows for c in r.checks)
    # The frame carries the table for the page.
    frame = live.wait_for_frame(lambda f: getattr(f.views.get("scenario"), "status", "") == "passed")
    assert frame.views["scenario"].passed == len(player.scenario.steps)  # type: ignore[attr-defined]
    with pytest.raises(IllegalState, match="the scenario is over"):
        on_driver(live, player.play)


def test_step_runs_exactly_the_next_step(tmp_path: Path, labs: list[LiveLab]) -> None:
    live, player = _player(tmp_path, labs, "consumer-rewind")
    assert on_driver(live, player.step) == f"Step 1: {player.scenario.steps[0].label}."
    assert wait_until(lambda: player.view.mode == "paused", 10)
    assert [r.state for r in player.view.rows[:2]] == ["passed", "pending"]
    on_driver(live, lambda lab: None)  # more ticks: nothing else runs while paused
    assert player.view.rows[1].state == "pending"
    on_driver(live, player.step)  # produce 5: it waits for acks on the lab's clock, then stops
    assert wait_until(lambda: player.view.mode == "paused", 10), player.view
    assert [r.state for r in player.view.rows[:3]] == ["passed", "passed", "pending"]
    assert player.view.status == "paused"
    # Then play runs the rest.
    on_driver(live, player.play)
    assert wait_until(lambda: player.view.status == "passed", 30), player.view


def test_a_paused_clock_holds_a_wait_step(tmp_path: Path, labs: list[LiveLab]) -> None:
    live, player = _player(tmp_path, labs, "leader-failover", rate=10.0)
    # Steps 1-4 (create, produce, expect, kill) and the note; then "wait 2000 ms".
    for _ in range(5):
        on_driver(live, player.step)
        assert wait_until(lambda: player.view.mode == "paused", 20), player.view
    assert player.view.rows[5].label == "wait 2000 ms"
    live.act("clock-pause", {}).result(10)
    on_driver(live, player.step)
    for _ in range(20):
        on_driver(live, lambda lab: None)
    assert player.view.rows[5].state == "running"
    assert player.view.mode == "stepping"
    live.act("clock-resume", {}).result(10)
    assert wait_until(lambda: player.view.rows[5].state == "passed", 10), player.view
    assert player.view.mode == "paused"
    on_driver(live, player.play)
    assert wait_until(lambda: player.view.finished, 60), player.view
    assert player.view.status == "passed", [r for r in player.view.rows if r.state != "passed"]


def test_pause_stops_between_steps_and_restart_begins_again(tmp_path: Path, labs: list[LiveLab]) -> None:
    live, player = _player(tmp_path, labs, "leader-failover", rate=10.0)
    with pytest.raises(IllegalState, match="not playing"):
        on_driver(live, player.pause)
    on_driver(live, player.play)
    assert wait_until(lambda: player.view.rows[3].state == "passed", 20)  # broker 1 killed
    on_driver(live, player.pause)
    done = player.view.passed
    for _ in range(30):
        on_driver(live, lambda lab: None)
    assert player.view.passed == done
    assert player.view.status == "paused"
    assert "fresh cluster" in on_driver(live, player.restart)
    assert player.view.status == "ready"
    assert on_driver(live, lambda lab: lab.cluster.topics()) == []
    assert all(r.state == "pending" for r in player.view.rows)


LONG = """\
name: A long wait
cluster: {brokers: 1}
steps:
  - create_topic: t
  - wait: 3600000
  - note: after the wait
"""


def test_cancel_ends_the_step_under_way_and_skips_the_rest(tmp_path: Path, labs: list[LiveLab]) -> None:
    live = live_lab(tmp_path, "long", brokers=1)
    labs.append(live)
    player = ScenarioPlayer(parse(LONG, slug="long"), lab="long")
    live.add_tick_hook("player", player.tick)
    with pytest.raises(IllegalState, match="nothing to cancel"):
        on_driver(live, player.cancel)
    on_driver(live, player.play)
    assert wait_until(lambda: player.view.rows[1].state == "running", 10), player.view
    said = on_driver(live, player.cancel)
    assert said == "Scenario cancelled at step 2 (wait 3600000 ms): start it over to play it again."
    view = player.view
    assert view.status == "cancelled"
    assert view.mode == "paused"
    assert [r.state for r in view.rows] == ["passed", "cancelled", "skipped"]
    assert view.rows[1].detail == "cancelled"
    for _ in range(5):
        on_driver(live, lambda lab: None)
    assert [r.state for r in player.view.rows] == ["passed", "cancelled", "skipped"]
    for control in (player.play, player.step, player.cancel):
        with pytest.raises(IllegalState, match="cancelled"):
            on_driver(live, control)
    on_driver(live, player.restart)
    assert player.view.status == "ready"
    assert [r.state for r in player.view.rows] == ["pending"] * 3


def test_a_paused_scenario_can_be_cancelled_between_steps(tmp_path: Path, labs: list[LiveLab]) -> None:
    live, player = _player(tmp_path, labs, "consumer-rewind")
    on_driver(live, player.step)
    assert wait_until(lambda: player.view.mode == "paused", 10)
    assert on_driver(live, player.cancel).startswith("Scenario cancelled before step 2 (")
    assert player.view.status == "cancelled"
    assert [r.state for r in player.view.rows[:3]] == ["passed", "skipped", "skipped"]


ADMIN_STEPS = """\
name: Admin steps
cluster: {brokers: 3}
steps:
  - create_topic: {name: orders, partitions: 1, replication_factor: 3}
  - %s
  - note: after it
"""


@pytest.mark.parametrize(
    ("step", "label", "done"),
    [
        (
            "create_topic: {name: audit, partitions: 2, replication_factor: 3}",
            "create topic audit",
            lambda c: c.partitions_usable("audit", [0, 1]),
        ),
        (
            "add_partitions: {topic: orders, total: 3}",
            "add partitions",
            lambda c: c.partitions_usable("orders", [0, 1, 2]),
        ),
        (
            "set_config: {topic: orders, config: {retention.ms: 60000}}",
            "set config",
            lambda c: c.topic_config("orders") == {"retention.ms": "60000"},
        ),
        ("delete_topic: orders", "delete topic", lambda c: c.topics() == []),
    ],
)
def test_an_admin_step_the_controller_does_not_answer_holds_up_no_one_else(
    tmp_path: Path, labs: list[LiveLab], step: str, label: str, done: Callable[[Cluster], bool]
) -> None:
    wall = FakeWall()
    live = live_lab(tmp_path, "admin-steps", wall=wall, config={"zookeeper.session.timeout.ms": "6000"})
    labs.append(live)
    player = ScenarioPlayer(parse(ADMIN_STEPS % step, slug="admin-steps"), lab="admin-steps")
    live.add_tick_hook("player", player.tick)
    on_driver(live, player.step)
    until(live, wall, lambda: player.view.rows[0].state == "passed")
    controller = pause_controller(live)
    before = now_ms(live)
    on_driver(live, player.step)  # the step starts; the driver goes on
    assert now_ms(live) - before < 1000  # another call answered, and the clock did not leap
    assert player.view.rows[1].label.startswith(label)
    assert player.view.rows[1].state == "running"
    advance(live, wall, 1.0)
    assert 1000 <= now_ms(live) - before < 3000
    assert player.view.rows[1].state == "running"  # the lab's clock runs; the step waits for the controller
    on_driver(live, lambda lab: lab.cluster.resume_broker(controller))
    until(live, wall, lambda: player.view.rows[1].state != "running")
    assert player.view.rows[1].state == "passed", player.view.rows[1]
    assert on_driver(live, lambda lab: done(lab.cluster))
    on_driver(live, player.play)
    until(live, wall, lambda: player.view.finished)
    assert player.view.status == "passed", player.view.rows


def until(live: LiveLab, wall: FakeWall, done: Callable[[], bool], seconds: float = 60.0) -> None:
    """Move the lab's clock on until ``done()`` (at most ``seconds`` of its time)."""
    moved = 0.0
    while not done():
        assert moved < seconds, f"not done after {seconds:g} s of the lab's time"
        advance(live, wall, 0.5)
        moved += 0.5


@pytest.mark.parametrize(
    ("step", "label"),
    [
        ("create_topic: {name: audit, partitions: 1, replication_factor: 3}", "create topic audit"),
        ("reassign: {partition: orders-0, replicas: [3, 2, 1]}", "reassign"),
        ("elect_preferred: {partitions: [orders-0]}", "elect preferred"),
    ],
)
def test_an_admin_step_zookeeper_is_slow_to_answer_holds_up_no_one_else(
    tmp_path: Path, labs: list[LiveLab], step: str, label: str
) -> None:
    from lab.engine.metadata.store import LinkState

    wall = FakeWall()
    live = live_lab(tmp_path, "slow-admin", wall=wall, config={"zookeeper.session.timeout.ms": "6000"})
    labs.append(live)
    player = ScenarioPlayer(parse(ADMIN_STEPS % step, slug="slow-admin"), lab="slow-admin")
    live.add_tick_hook("player", player.tick)
    on_driver(live, player.step)
    until(live, wall, lambda: player.view.rows[0].state == "passed")
    # The lab's admin client reaches ZooKeeper, but its answers are held: a slow, connected server.
    on_driver(live, lambda lab: lab.cluster._admin.set_link(LinkState.HELD))
    before = now_ms(live)
    on_driver(live, player.step)
    assert now_ms(live) - before < 1000  # another call answered, and the clock did not leap
    assert player.view.rows[1].label.startswith(label)
    advance(live, wall, 1.0)
    assert 1000 <= now_ms(live) - before < 3000
    assert player.view.rows[1].state == "running"
    on_driver(live, lambda lab: lab.cluster._admin.set_link(LinkState.OPEN))
    until(live, wall, lambda: player.view.rows[1].state != "running")
    assert player.view.rows[1].state == "passed", player.view.rows[1]
