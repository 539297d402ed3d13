"""Sleeping labs: nobody uses a lab, its clock stops and its thread parks; anyone who needs it wakes it.

The grace period runs on the lab's injected wall clock (``FakeWall``): the tests move it past the
grace period instead of waiting for it.
"""

from __future__ import annotations

import socket
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from lab.cluster import free_ports
from lab.runtime.live import Listen, LiveLab
from lab.runtime.sleep import Nap, duration_label
from tests.processes import wait_until
from tests.runtime.test_live import FakeWall, now_ms, spec, ticks_later

GRACE_S = 10.0


@pytest.fixture
def wall() -> FakeWall:
    return FakeWall()


@pytest.fixture
def labs() -> Iterator[list[LiveLab]]:
    made: list[LiveLab] = []
    yield made
    for live in made:
        live.stop()


def _lab(tmp_path: Path, wall: FakeWall, labs: list[LiveLab], slug: str = "s", **kw: object) -> LiveLab:
    live = LiveLab(
        spec(tmp_path, slug, **kw.pop("spec", {})),  # type: ignore[arg-type]
        zookeeper=None,
        wall=wall,
        tree_interval_s=3600,
        sleep_after_s=GRACE_S,
        **kw,  # type: ignore[arg-type]
    ).start()
    labs.append(live)
    live.ready.result(30)
    assert live.state == "running", live.error
    return live


def _idle_past_grace(live: LiveLab, wall: FakeWall) -> None:
    """Let the driver see the lab idle, then move the wall past the grace period."""
    ticks_later(live, 2)
    wall.now += GRACE_S + 1


def _fall_asleep(live: LiveLab, wall: FakeWall) -> None:
    _idle_past_grace(live, wall)
    assert wait_until(lambda: live.asleep, 10), "the lab did not fall asleep"


def _parked(live: LiveLab) -> bool:
    """The driver thread waits in ``_sleep`` on its condition, with no timeout."""
    thread = live._thread
    assert thread is not None
    assert thread.ident is not None
    frame = sys._current_frames().get(thread.ident)
    names = []
    while frame is not None:
        names.append((frame.f_code.co_name, dict(frame.f_locals).get("timeout", "?")))
        frame = frame.f_back
    return ("wait", None) in names and any(name == "_sleep" for name, _ in names)


def _log_ends(live: LiveLab) -> list[int]:
    def ends(lab: LiveLab) -> list[int]:
        topic = lab.cluster.snapshot()["topics"]["orders"]
        return [max(int(v["log_end_offset"]) for v in p["logs"].values()) for p in topic["partitions"]]

    return list(live.submit(ends).result(10))


def test_durations_and_what_the_page_says() -> None:
    assert [duration_label(s) for s in (0, 40, 60, 12 * 60 + 5, 3600, 2 * 3600 + 5 * 60)] == [
        "0 s",
        "40 s",
        "1 min",
        "12 min",
        "1 h",
        "2 h 5 min",
    ]
    asleep = Nap(time_ms=5000, slept_at=100.0)
    assert asleep.text(100.0 + 12 * 60) == "Asleep: nobody watched; the clock is stopped (for 12 min so far)."
    woke = Nap(time_ms=5000, slept_at=100.0, woke_at=100.0 + 12 * 60, woke_for="a page opened")
    assert (
        woke.text(9999.0) == "Slept: nobody watched; the clock was stopped for 12 min. A page opened woke it."
    )


def test_an_unused_lab_sleeps_its_clock_stops_and_its_thread_parks(
    tmp_path: Path, wall: FakeWall, labs: list[LiveLab]
) -> None:
    live = _lab(tmp_path, wall, labs)
    _idle_past_grace(live, wall)
    assert wait_until(lambda: live.asleep, 10)
    nap = live.nap
    assert nap is not None
    assert nap.asleep
    assert wait_until(lambda: _parked(live), 10)
    ticks = live.ticks
    wall.now += 600  # ten minutes: a running clock would move 600 000 virtual ms
    with live._cond:
        live._cond.notify_all()  # a notification that is not a wake-up changes nothing
    assert wait_until(lambda: _parked(live), 10)
    assert live.ticks == ticks
    assert live.asleep
    assert "Asleep: nobody watched; the clock is stopped (for 10 min so far)." in live.nap_text()


def test_a_command_wakes_it_with_its_records_offsets_and_clock_where_they_were(
    tmp_path: Path, wall: FakeWall, labs: list[LiveLab]
) -> None:
    live = _lab(tmp_path, wall, labs)
    future = live.act("produce", {"topic": "orders", "count": "6", "key": "k", "acks": "1"})
    while not future.done():
        wall.now += 0.05
        ticks_later(live, 1)
    future.result(0)
    ends = _log_ends(live)
    assert sum(ends) == 6
    _fall_asleep(live, wall)
    nap = live.nap
    assert nap is not None
    wall.now += 12 * 60
    # The command is the wake-up: it runs before the clock moves, at the time the lab fell asleep.
    assert now_ms(live) == nap.time_ms
    assert not live.asleep
    assert _log_ends(live) == ends
    assert live.nap_text() == (
        "Slept: nobody watched; the clock was stopped for 12 min. An API call or a command woke it."
    )
    # From there the clock runs on at its rate: the twelve minutes asleep do not count.
    wall.now += 1.0
    ticks_later(live, 3)
    assert now_ms(live) == nap.time_ms + 1000
    # The timeline has one line for the sleep and the wake.
    frame = live.wait_for_frame(
        lambda f: any(e.kind == "lab_slept" for e in f.views["timeline"].events)  # type: ignore[attr-defined]
    )
    slept = [e for e in frame.views["timeline"].events if e.kind == "lab_slept"]  # type: ignore[attr-defined]
    assert len(slept) == 1
    assert slept[0].time_ms == nap.time_ms
    assert "nobody watched; the clock was stopped for 12 min" in slept[0].text
    assert "the clock was stopped for 12 min" in frame.views["status"].nap  # type: ignore[attr-defined]


def test_a_page_connecting_wakes_it_and_keeps_it_awake(
    tmp_path: Path, wall: FakeWall, labs: list[LiveLab]
) -> None:
    live = _lab(tmp_path, wall, labs)
    _fall_asleep(live, wall)
    live.subscribe()
    assert wait_until(lambda: not live.asleep, 10)
    assert "A page opened woke it." in live.nap_text()
    _idle_past_grace(live, wall)
    ticks_later(live, 3)
    assert not live.asleep  # watched: it never sleeps
    live.unsubscribe()
    _fall_asleep(live, wall)  # nobody watches any more: it sleeps again after the grace period


def test_whoever_asks_for_the_lab_wakes_it(tmp_path: Path, wall: FakeWall, labs: list[LiveLab]) -> None:
    live = _lab(tmp_path, wall, labs)
    _fall_asleep(live, wall)
    live.wake("a page or an API call")  # what lab.labs.live_of does for a page or the API
    assert wait_until(lambda: not live.asleep, 10)
    assert "A page or an API call woke it." in live.nap_text()


def test_a_connected_kafka_client_keeps_it_awake_and_a_new_one_wakes_it(
    tmp_path: Path, wall: FakeWall, labs: list[LiveLab]
) -> None:
    port = free_ports(3)
    live = _lab(
        tmp_path,
        wall,
        labs,
        spec={"ports": {b: port + b - 1 for b in (1, 2, 3)}},
        listen=Listen(),
    )
    assert live.wire is not None
    assert live.listeners is not None
    listeners = live.listeners
    wire = live.wire
    # A lab runs once its listeners listen: a client may connect at once.
    assert all(s.open for s in listeners.states()), listeners.states()
    client = socket.create_connection(("127.0.0.1", port), timeout=10)
    try:
        assert wait_until(lambda: len(wire.connections) == 1, 10)
        _idle_past_grace(live, wall)
        ticks_later(live, 3)
        assert not live.asleep
    finally:
        client.close()
    assert wait_until(lambda: not wire.connections, 10)
    _fall_asleep(live, wall)
    again = socket.create_connection(("127.0.0.1", port + 1), timeout=10)
    try:
        assert wait_until(lambda: not live.asleep and len(wire.connections) == 1, 10)
        assert "A Kafka client woke it." in live.nap_text()
    finally:
        again.close()


def test_a_busy_extension_keeps_it_awake_until_it_is_done(
    tmp_path: Path, wall: FakeWall, labs: list[LiveLab]
) -> None:
    live = _lab(tmp_path, wall, labs)
    playing = threading.Event()
    playing.set()
    live.add_tick_hook("player", lambda _lab: None, busy=playing.is_set)
    _idle_past_grace(live, wall)
    ticks_later(live, 3)
    assert not live.asleep
    playing.clear()  # the scenario paused or ended
    _fall_asleep(live, wall)


def test_an_awaited_answer_keeps_it_awake(tmp_path: Path, wall: FakeWall, labs: list[LiveLab]) -> None:
    live = _lab(tmp_path, wall, labs)
    live.act("clock-pause", {}).result(10)
    # acks=all needs engine time, which a paused clock does not give: the answer waits.
    future = live.act("produce", {"topic": "orders", "count": "1", "key": "k", "acks": "all"})
    _idle_past_grace(live, wall)
    ticks_later(live, 3)
    assert not future.done()
    assert not live.asleep


def test_sleeping_can_be_turned_off(tmp_path: Path, wall: FakeWall, labs: list[LiveLab]) -> None:
    live = _lab(tmp_path, wall, labs, slug="awake")
    live.sleep_after_s = None
    _idle_past_grace(live, wall)
    ticks_later(live, 3)
    assert not live.asleep


def _proxies(session: str) -> int:
    """Loopback proxies of ZooKeeper sessions named ``session...`` running in this process."""
    return sum(1 for t in threading.enumerate() if t.name.startswith(f"zk-proxy-{session}"))


def test_on_zookeeper_a_sleeping_lab_closes_its_own_client_and_keeps_its_brokers_sessions(
    tmp_path: Path, zookeeper: str, labs: list[LiveLab]
) -> None:
    admins, brokers = _proxies("admin"), _proxies("broker-")
    live = LiveLab(spec(tmp_path, "zk-nap"), zookeeper=zookeeper, sleep_after_s=0.5).start()
    labs.append(live)
    live.ready.result(60)
    assert live.state == "running", live.error
    live.wait_for_frame(lambda f: f.views["zookeeper"].count > 0, 30)  # read with the lab's own client
    assert _proxies("admin") == admins + 1
    assert wait_until(lambda: live.asleep, 30)
    # It holds no ephemerals and no watches: it goes, with its kazoo thread and its proxy. The brokers'
    # sessions stay open (their znodes register them), pinged by kazoo while the lab sleeps.
    assert wait_until(lambda: _proxies("admin") == admins, 10)
    assert _proxies("broker-") == brokers + 3
    # Awake again, the next question to ZooKeeper opens another.
    tree = live.submit(lambda lab: lab.cluster.zookeeper_tree()).result(30)
    assert "/brokers/ids/1" in {node["path"] for node in tree}
    assert _proxies("admin") == admins + 1
    assert "Slept: nobody watched" in live.nap_text()
