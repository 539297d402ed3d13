"""The clock's view: time as m:ss.mmm, speed buttons, and step enabled only when paused."""

from __future__ import annotations

from lab.visuals.clock import TIMES, ClockTime, LabStatus, clock_controls


def test_time_label() -> None:
    assert ClockTime(time_ms=83_045, paused=False).label == "1:23.045"


def test_stepping_needs_a_paused_clock() -> None:
    running = {(a.name, a.label): a for a in clock_controls(1.0, paused=False).actions}
    assert running[("clock-pause", "Pause")].enabled
    assert not running[("clock-resume", "Resume")].enabled
    step = running[("clock-step", "Step 1 event")]
    assert not step.enabled
    assert step.title == "pause the clock first: stepping is for a stopped clock"
    paused = {(a.name, a.label): a for a in clock_controls(2.0, paused=True).actions}
    assert paused[("clock-step", "Step 100 ms")].enabled
    assert paused[("clock-step", "Step 100 ms")].params == (("ms", "100"),)
    assert paused[("clock-resume", "Resume")].title == f"Run the clock again at 2{TIMES}"
    assert paused[("clock-reset", "Reset lab")].confirm


def test_the_current_speed_is_pressed() -> None:
    speeds = clock_controls(0.5, paused=False).speeds
    assert [s.label for s in speeds] == [f"{r}{TIMES}" for r in ("0.1", "0.25", "0.5", "1", "2", "5", "10")]
    assert [s.label for s in speeds if s.current] == [f"0.5{TIMES}"]


def test_the_memory_store_status_says_how_to_get_zookeeper() -> None:
    status = LabStatus(
        state="running", store="memory", zookeeper="", chroot="/kafka-lab/x", error="", fallback_reason=""
    )
    assert status.memory
    assert status.install_hint == "apt-get install -y zookeeper"
