"""One frame budget per process: the labs that make frames share one part of a core."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.runtime.budget import ACTIVE_S, FrameBudget
from lab.runtime.live import SLOWEST_FRAMES_S, LiveLab
from lab.runtime.spec import ClientSpec, LabSpec, TopicSpec

FASTEST = 0.1


class Wall:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_lab_alone_keeps_ten_frames_a_second_while_its_frames_are_cheap() -> None:
    budget = FrameBudget(0.1, wall=Wall())
    assert budget.interval("a", fastest_s=FASTEST, slowest_s=1.0) == FASTEST  # no frame yet: now
    budget.charge("a", 0.005)  # 5 ms a frame, 50 ms a second at ten a second: half the share
    assert budget.interval("a", fastest_s=FASTEST, slowest_s=1.0) == FASTEST


def test_two_labs_share_one_budget_and_each_gets_half() -> None:
    budget = FrameBudget(0.1, wall=Wall())
    budget.charge("a", 0.02)  # 20 ms a frame: alone, one frame every 200 ms spends the share
    assert budget.interval("a", fastest_s=FASTEST, slowest_s=1.0) == pytest.approx(0.2)
    budget.charge("b", 0.02)
    assert budget.active() == 2
    assert budget.interval("a", fastest_s=FASTEST, slowest_s=1.0) == pytest.approx(0.4)
    assert budget.interval("b", fastest_s=FASTEST, slowest_s=1.0) == pytest.approx(0.4)
    # What the two spend together is the one share, not one each.
    spent = sum(0.02 / budget.interval(lab, fastest_s=FASTEST, slowest_s=1.0) for lab in "ab")
    assert spent == pytest.approx(budget.share)


def test_a_crowded_process_slows_every_lab_to_one_frame_a_second_and_no_slower() -> None:
    budget = FrameBudget(0.1, wall=Wall())
    for n in range(40):
        budget.charge(f"lab-{n}", 0.01)
    assert budget.interval("lab-0", fastest_s=FASTEST, slowest_s=SLOWEST_FRAMES_S) == SLOWEST_FRAMES_S


def test_a_lab_that_stopped_making_frames_leaves_its_part_to_the_others() -> None:
    wall = Wall()
    budget = FrameBudget(0.1, wall=wall)
    budget.charge("a", 0.02)
    budget.charge("b", 0.02)
    wall.now += ACTIVE_S / 2
    budget.charge("a", 0.02)
    assert budget.interval("a", fastest_s=FASTEST, slowest_s=1.0) == pytest.approx(0.4)
    wall.now += ACTIVE_S / 2  # b's last frame is ACTIVE_S old: it is quiet, or nobody watches it
    assert budget.active() == 1
    assert budget.interval("a", fastest_s=FASTEST, slowest_s=1.0) == pytest.approx(0.2)
    budget.charge("c", 0.02)
    budget.forget("c")  # a lab stopped: its part is free at once
    assert budget.interval("a", fastest_s=FASTEST, slowest_s=1.0) == pytest.approx(0.2)


def test_a_frame_cost_is_smoothed_so_one_slow_frame_does_not_stall_the_lab() -> None:
    budget = FrameBudget(0.1, wall=Wall())
    for _ in range(10):
        budget.charge("a", 0.005)
    budget.charge("a", 0.5)  # a garbage collection, another thread holding the GIL
    assert budget.interval("a", fastest_s=FASTEST, slowest_s=10.0) < 0.5 / 0.1


def test_the_labs_of_a_process_charge_one_budget_and_a_stopped_one_leaves_it(tmp_path: Path) -> None:
    budget = FrameBudget(0.1, active_s=3600)  # every lab that made a frame counts through the test

    def busy(slug: str) -> LiveLab:
        return LiveLab(
            LabSpec(
                slug=slug,
                name=slug,
                data_dir=str(tmp_path / slug),
                chroot=f"/{slug}",
                topics=(TopicSpec(name="orders", partitions=3, replication_factor=3),),
                clients=(ClientSpec(kind="producer", name="app", topics=("orders",), rate_per_s=20),),
            ),
            zookeeper=None,
            budget=budget,
            sleep_after_s=None,
        ).start()

    one, two = busy("one"), busy("two")
    try:
        for live in (one, two):
            live.ready.result(30)
            first = live.frame.seq
            live.wait_for_frame(lambda f, first=first: f.seq > first + 2)  # type: ignore[misc]
        assert budget.active() == 2  # each lab's part is half the one share
        two.stop()
        assert budget.active() == 1
    finally:
        one.stop()
        two.stop()
