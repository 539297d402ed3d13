"""What idle labs cost: ``python -m lab.bench idle [--quick]``, one JSON line per figure.

Labs of 3 brokers (topic ``orders``, 3 partitions, RF 3), each broker listening for Kafka clients
on a port of its own as ``make run`` labs do, run in this process, and nothing happens in them: first on the managed ZooKeeper (what ``make run`` labs run on), then the same labs on the
memory store, in the same run (``LAB_BENCH_MEMORY=1``, or no ZooKeeper here: the memory store
only). CPU is this process's (user + system), as a fraction of one core, per lab; each figure has
a ``store`` and, where Linux tells it (``/proc/self/task/*/schedstat``), ``by_thread``: the same CPU
split by who spent it (``driver``: the labs' driver threads; ``zookeeper_clients``: kazoo's
connection threads, which ping the server every third of a session timeout; ``zookeeper_proxies``:
the per-session loopback proxies; ``listeners``: the process's loop for the brokers' Kafka
listeners; ``other``: the channel layer's loop, the main thread).

- ``idle_watched``: every lab watched by one page (subscribed; its frames go through the
  in-memory channel layer to a receiving channel), with the driver's ticks per second. Baseline:
  one plain thread waking ten times a second and doing nothing (``thread_10hz``), what a clock
  ticking every frame slot costs at the least. Target <= 0.005 on ZooKeeper.
- ``idle_sleeping``: the same labs with nobody watching, once they slept. Baseline: the same labs
  unwatched in the seconds before they slept (``same_labs_awake``); the ratio is sleeping / awake.
  On ZooKeeper what is left is the sessions' pings (kazoo and the proxies), which a sleeping lab
  keeps so its brokers stay registered.
- ``threads``: threads per lab, awake and asleep (a sleeping lab keeps its driver, parked, and its
  brokers' sessions; on ZooKeeper it closes its own client, the tree reads' and topic admin's).
  Baseline: the process's threads before any lab started.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

LABS = 5
QUICK_LABS = 2
WINDOW_S = 20.0
QUICK_WINDOW_S = 3.0
SETTLE_S = 5.0  # after start: leaders elected, the first checkpoints written
QUICK_SETTLE_S = 2.0
SLEEP_AFTER_S = 2.0
TARGET_WATCHED = 0.005


def _cpu_fraction(window_s: float, during: Callable[[], None] | None = None) -> float:
    """This process's CPU over ``window_s`` wall seconds, as a fraction of one core."""
    cpu0, wall0 = time.process_time(), time.monotonic()
    if during is not None:
        during()
    time.sleep(max(0.0, window_s - (time.monotonic() - wall0)))
    return (time.process_time() - cpu0) / (time.monotonic() - wall0)


def _thread_cpu() -> dict[int, float]:
    """CPU seconds each thread of this process has used, by native thread id ({} off Linux)."""
    out: dict[int, float] = {}
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/self/task/{tid}/schedstat") as f:
                out[int(tid)] = int(f.read().split()[0]) / 1e9
        except (OSError, ValueError, IndexError):
            continue  # the thread ended meanwhile
    return out


def _kind(name: str) -> str:
    if name.startswith("lab-"):
        return "driver"
    if "zk_loop" in name:  # kazoo's connection thread: Thread-N (zk_loop)
        return "zookeeper_clients"
    if name.startswith("zk-proxy-"):
        return "zookeeper_proxies"
    if name == "kafka-listeners":
        return "listeners"
    return "other"


class _Split:
    """CPU by kind of thread between ``start()`` and ``stop()``, per second of wall time."""

    def start(self) -> None:
        self._cpu0, self._wall0 = _thread_cpu(), time.monotonic()

    def stop(self, labs: int) -> dict[str, float] | None:
        cpu1, wall = _thread_cpu(), time.monotonic() - self._wall0
        if not cpu1:
            return None
        names = {t.native_id: t.name for t in threading.enumerate()}
        split = dict.fromkeys(("driver", "zookeeper_clients", "zookeeper_proxies", "listeners", "other"), 0.0)
        for tid, cpu in cpu1.items():
            split[_kind(names.get(tid, ""))] += cpu - self._cpu0.get(tid, 0.0)
        return {kind: round(cpu / wall / labs, 5) for kind, cpu in split.items()}


def _ticking_thread(window_s: float) -> float:
    stop = threading.Event()

    def run() -> None:
        while not stop.wait(0.1):
            pass

    thread = threading.Thread(target=run, daemon=True)
    quiet = _cpu_fraction(window_s)
    thread.start()
    busy = _cpu_fraction(window_s)
    stop.set()
    thread.join()
    return max(0.0, busy - quiet)


class _Channel:
    """A loop thread, an in-memory channel layer and one channel in every lab's group, draining it."""

    def __init__(self) -> None:
        from channels.layers import InMemoryChannelLayer

        from lab.runtime.broadcast import Broadcaster

        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.layer = InMemoryChannelLayer()
        self.broadcast = Broadcaster(layer=lambda: self.layer)
        self.broadcast.attach(self.loop)
        self.frames = 0
        self.name = self._call(self.layer.new_channel())
        self.reader = asyncio.run_coroutine_threadsafe(self._read(), self.loop)

    def _call(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(10)

    async def _read(self) -> None:
        while True:
            await self.layer.receive(self.name)
            self.frames += 1

    def join(self, group: str) -> None:
        self._call(self.layer.group_add(group, self.name))

    def close(self) -> None:
        self.reader.cancel()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


class _Renderer:
    """Fragments as the page gets them, without Django: the key and the view's text."""

    def fragment(self, key: str, views: Any) -> str:
        return f'<div id="{key}" hx-swap-oob="true">{views.get(key)!r}</div>'


def _zookeeper(data_dir: Path, memory: bool) -> tuple[Any, str | None]:
    if memory:
        return None, None
    from lab.zookeeper_server import ManagedZooKeeper

    server = ManagedZooKeeper(data_dir / "zookeeper")
    try:
        return server, server.start(timeout_s=60)
    except Exception:  # no ZooKeeper here: the memory store still measures the lab's own cost
        server.stop()
        return None, None


def run(
    *, labs: int, window_s: float, settle_s: float, memory: bool = False, thread_10hz: float | None = None
) -> list[dict[str, Any]]:
    """The figures of one store (ZooKeeper unless ``memory``, or when it cannot start)."""
    from lab.cluster import free_ports
    from lab.runtime.live import Listen, LiveLab
    from lab.runtime.spec import LabSpec, TopicSpec

    data_dir = Path(tempfile.mkdtemp(prefix="kafka-lab-bench-idle-"))
    server, hosts = _zookeeper(data_dir, memory)
    channel = _Channel()
    threads_before = threading.active_count()
    if thread_10hz is None:
        thread_10hz = _ticking_thread(window_s)
    running: list[LiveLab] = []
    try:
        for n in range(labs):
            slug = f"idle-{n}"
            first_port = free_ports(3)
            spec = LabSpec(
                slug=slug,
                name=slug,
                data_dir=str(data_dir / slug),
                chroot=f"/kafka-lab/bench-idle/{slug}-{time.time_ns()}",
                topics=(TopicSpec(name="orders", partitions=3, replication_factor=3),),
                ports={b: first_port + b - 1 for b in (1, 2, 3)},
            )
            live = LiveLab(
                spec,
                zookeeper=hosts,
                listen=Listen(),
                renderer=_Renderer(),
                broadcast=channel.broadcast,
                sleep_after_s=SLEEP_AFTER_S,
            )
            channel.join(live.group)
            live.subscribe()  # watched from the start: it must not sleep yet
            running.append(live.start())
        for live in running:
            live.ready.result(60)
            if live.state != "running":
                raise RuntimeError(f"lab {live.slug} did not start: {live.error}")
        time.sleep(settle_s)
        threads_awake = threading.active_count()
        frames0 = channel.frames
        ticks0 = sum(live.ticks for live in running)
        split = _Split()
        split.start()
        watched = _cpu_fraction(window_s)
        watched_by_thread = split.stop(labs)
        frames = channel.frames - frames0
        ticks = sum(live.ticks for live in running) - ticks0
        for live in running:
            live.unsubscribe()
        awake = _cpu_fraction(SLEEP_AFTER_S * 0.75)  # unwatched, before the grace period ends
        deadline = time.monotonic() + 60
        while not all(live.asleep for live in running):
            if time.monotonic() > deadline:
                raise RuntimeError("the labs did not fall asleep within 60 s")
            time.sleep(0.1)
        split.start()
        sleeping = _cpu_fraction(window_s)
        sleeping_by_thread = split.stop(labs)
        threads_asleep = threading.active_count()  # counted once the clients they closed have ended
    finally:
        for live in running:
            live.stop()
        channel.close()
        if server is not None:
            server.stop()
        shutil.rmtree(data_dir, ignore_errors=True)
    store = "zookeeper" if hosts else "memory"
    common = {"labs": labs, "brokers_per_lab": 3, "store": store, "window_s": window_s}
    per_watched = watched / labs
    per_sleeping = sleeping / labs
    per_awake = awake / labs
    return [
        {
            "bench": "idle_watched",
            "cpu_per_lab": round(per_watched, 5),
            "frames_per_s_per_lab": round(frames / window_s / labs, 2),
            "ticks_per_s_per_lab": round(ticks / window_s / labs, 1),
            "by_thread": watched_by_thread,
            "target": TARGET_WATCHED,
            "baseline": "thread_10hz",
            "baseline_cpu": round(thread_10hz, 5),
            "ratio": round(per_watched / thread_10hz, 1) if thread_10hz > 0 else None,
            **common,
        },
        {
            "bench": "idle_sleeping",
            "cpu_per_lab": round(per_sleeping, 5),
            "by_thread": sleeping_by_thread,
            "baseline": "same_labs_awake",
            "baseline_cpu": round(per_awake, 5),
            "ratio": round(per_sleeping / per_awake, 3) if per_awake > 0 else None,
            **common,
        },
        {
            "bench": "idle_threads",
            "threads_per_lab_awake": round((threads_awake - threads_before) / labs, 2),
            "threads_per_lab_asleep": round((threads_asleep - threads_before) / labs, 2),
            "baseline": "process_threads_before_labs",
            "baseline_threads": threads_before,
            **common,
        },
    ]


def main(quick: bool = False) -> None:
    labs = QUICK_LABS if quick else LABS
    window_s = QUICK_WINDOW_S if quick else WINDOW_S
    settle_s = QUICK_SETTLE_S if quick else SETTLE_S
    thread_10hz = _ticking_thread(window_s)  # one baseline for both stores
    stores = [True] if os.environ.get("LAB_BENCH_MEMORY") == "1" else [False, True]
    for memory in stores:
        figures = run(labs=labs, window_s=window_s, settle_s=settle_s, memory=memory, thread_10hz=thread_10hz)
        for figure in figures:
            print(json.dumps(figure), flush=True)
        if not memory and figures[0]["store"] == "memory":
            break  # no ZooKeeper here: the memory store was measured already
