"""The clock and the lab's status: virtual time, speed, and what the lab runs on."""

from __future__ import annotations

from dataclasses import dataclass

from lab.visuals.cluster_map import Action

SPEEDS = (0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0)
INSTALL_HINT = "apt-get install -y zookeeper"


def clock_label(time_ms: int) -> str:
    """A moment of virtual time as the lab's clock shows it: minutes:seconds.milliseconds ("3:34.019").

    Every page says times this one way: the timeline, rebalances, fetches in flight, the admin panel."""
    seconds, ms = divmod(max(0, int(time_ms)), 1000)
    minutes, seconds = divmod(seconds, 60)
    return f"{minutes}:{seconds:02d}.{ms:03d}"


@dataclass(frozen=True, slots=True, kw_only=True)
class ClockTime:
    """Virtual time when the frame was made. Between frames the page runs the clock on at ``rate``
    (0 when paused): a lab with nothing happening sends no frame just for the time."""

    time_ms: int
    paused: bool
    rate: float = 0.0

    @property
    def label(self) -> str:
        return clock_label(self.time_ms)


@dataclass(frozen=True, slots=True, kw_only=True)
class Speed:
    rate: float
    label: str
    current: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class ClockControls:
    """What changes only when a person touches the clock."""

    rate: float
    paused: bool
    speeds: tuple[Speed, ...]
    actions: tuple[Action, ...]

    @property
    def rate_label(self) -> str:
        return speed_label(self.rate)


TIMES = "\u00d7"  # the multiplication sign, so "2" reads as a speed: 2 times


def speed_label(rate: float) -> str:
    return f"{rate:g}{TIMES}"


def clock_controls(rate: float, paused: bool) -> ClockControls:
    not_paused = "pause the clock first: stepping is for a stopped clock"
    return ClockControls(
        rate=rate,
        paused=paused,
        speeds=tuple(Speed(rate=s, label=speed_label(s), current=abs(s - rate) < 1e-9) for s in SPEEDS),
        actions=(
            Action(
                name="clock-pause",
                label="Pause",
                enabled=not paused,
                title="Stop the lab's virtual clock (ZooKeeper keeps real time)"
                if not paused
                else "already paused",
            ),
            Action(
                name="clock-resume",
                label="Resume",
                enabled=paused,
                title=f"Run the clock again at {speed_label(rate)}" if paused else "the clock is running",
            ),
            Action(
                name="clock-step",
                label="Step 1 event",
                enabled=paused,
                title="Run the next scheduled event, then stop" if paused else not_paused,
                params=(("events", "1"),),
            ),
            Action(
                name="clock-step",
                label="Step 100 ms",
                enabled=paused,
                title="Run 100 ms of virtual time, then stop" if paused else not_paused,
                params=(("ms", "100"),),
            ),
            Action(
                name="clock-step",
                label="Step 1 s",
                enabled=paused,
                title="Run one virtual second, then stop" if paused else not_paused,
                params=(("ms", "1000"),),
            ),
            Action(
                name="clock-reset",
                label="Reset lab",
                enabled=True,
                title="Rebuild this lab's cluster from scratch: fresh logs, fresh znodes",
                confirm="Reset the lab? Every record and znode of this lab is deleted and the cluster starts afresh.",
            ),
        ),
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class LabStatus:
    state: str  # starting | running | resetting | failed | stopped
    store: str  # zookeeper | memory
    zookeeper: str  # hosts, or "" on the memory store
    chroot: str
    error: str
    fallback_reason: str  # why the memory store is used, when it is
    zookeeper_outage: str = ""  # "ZooKeeper is not answering ..." while the lab cannot reach it
    note: str = ""  # while starting or resetting: what the start waits for
    nap: str = ""  # "Slept: nobody watched; the clock was stopped for 12 min. ..." (lab.runtime.sleep)

    @property
    def memory(self) -> bool:
        return self.store == "memory"

    @property
    def install_hint(self) -> str:
        return INSTALL_HINT
