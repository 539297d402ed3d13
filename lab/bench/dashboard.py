"""The dashboard's fan-out: N websocket clients watching one lab in one daphne process.

``python -m lab.bench dashboard [--quick]`` prints one JSON line:

- ``p50_ms`` / ``p99_ms``: from the moment the runtime read the engine's state for a frame to
  that frame arriving at a client, over every frame at every client (render, channel layer,
  daphne, the socket); ``event_p50_ms`` / ``event_p99_ms``: from the first engine step a frame
  shows, so they include the wait for the frame's slot (frames are coalesced to one per 100 ms);
- ``frames_per_s``: frames each client received per second, on average;
- ``baseline_p50_ms`` / ``baseline_p99_ms``: the same clients, same process, same channel-layer
  group fan-out, of a fixed 2 KB message sent every 100 ms with no engine behind it;
- ``ratio``: p99 over the baseline's p99.

The lab is 3 brokers on the in-memory metadata store (no ZooKeeper needed), topic ``orders``
(3 partitions, RF 3) and a simulated producer writing steadily. Everything runs in a temporary
data directory that is deleted afterwards.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lab.bench._web import Socket, cpu_s, free_port, percentile

CLIENTS = 100
QUICK_CLIENTS = 10
DURATION_S = 20.0
QUICK_DURATION_S = 1.5
PRODUCE_RATE = 200  # records per second, steady
FIXED_BYTES = 2048
FIXED_INTERVAL_S = 0.1
FIXED_GROUP = "bench.fixed"
WARM_UP_S = 1.0
DRAIN_S = 0.5
MADE_AT = re.compile(rb'data-made-at="([0-9.]+)"')
EVENT_AT = re.compile(rb'data-event-at="([0-9.]+)"')


# ---------------------------------------------------------------------------- the server side


def _application() -> Any:
    """The lab's ASGI app plus one bench-only route: a fixed 2 KB message fanned out every 100 ms."""
    from channels.auth import AuthMiddlewareStack
    from channels.generic.websocket import AsyncWebsocketConsumer
    from channels.layers import get_channel_layer
    from channels.routing import ProtocolTypeRouter, URLRouter
    from django.urls import path

    import lab.asgi
    from lab.urls import websocket_urlpatterns

    state: dict[str, Any] = {"task": None}

    async def pulse() -> None:
        layer = get_channel_layer()
        while True:
            stamp = f"{time.time():.6f}"
            head = f'<div id="bench-fixed" hx-swap-oob="true" data-made-at="{stamp}">'
            body = head + "x" * (FIXED_BYTES - len(head) - len("</div>")) + "</div>"
            await layer.group_send(FIXED_GROUP, {"type": "bench.fixed", "html": body})
            await asyncio.sleep(FIXED_INTERVAL_S)

    class FixedConsumer(AsyncWebsocketConsumer):
        async def connect(self) -> None:
            await self.channel_layer.group_add(FIXED_GROUP, self.channel_name)
            await self.accept()
            if state["task"] is None:
                state["task"] = asyncio.get_running_loop().create_task(pulse())

        async def disconnect(self, code: int) -> None:
            await self.channel_layer.group_discard(FIXED_GROUP, self.channel_name)

        async def dispatch(self, message: dict[str, Any]) -> None:
            if message.get("type") == "bench.fixed":  # as LabConsumer does for frames
                await self.bench_fixed(message)
                return
            await super().dispatch(message)

        async def bench_fixed(self, event: dict[str, Any]) -> None:
            await self.send(text_data=event["html"])

    routes = [*websocket_urlpatterns, path("ws/bench/fixed/", FixedConsumer.as_asgi())]
    return ProtocolTypeRouter(
        {"http": lab.asgi.application, "websocket": AuthMiddlewareStack(URLRouter(routes))}
    )


def __getattr__(name: str) -> Any:
    # Daphne imports ``lab.bench.dashboard:application``; build it only then (it needs Django).
    if name == "application":
        app = _application()
        globals()["application"] = app
        return app
    raise AttributeError(name)


@dataclass
class Watch:
    delays_ms: list[float] = field(default_factory=list)
    event_delays_ms: list[float] = field(default_factory=list)
    frames: int = 0
    bytes: int = 0


async def _watch(
    sock: Socket, full_state: bool, clock: dict[str, float], watch: Watch, connected: list[int]
) -> None:
    """Read everything as it comes; count the frames made after the measurement started."""
    try:
        if full_state:
            await sock.receive()  # the full state a page gets on connect is not a frame
        connected.append(1)
        while True:
            message = await sock.receive()
            arrived = time.time()
            made = MADE_AT.search(message)
            if made is None or not clock["start"] <= float(made.group(1)) < clock["end"]:
                continue
            watch.frames += 1
            watch.bytes += len(message)
            watch.delays_ms.append((arrived - float(made.group(1))) * 1000)
            event = EVENT_AT.search(message)
            if event is not None:
                watch.event_delays_ms.append((arrived - float(event.group(1))) * 1000)
    except (ConnectionError, asyncio.IncompleteReadError, OSError):
        if clock["end"] > time.time():
            raise


async def _phase(port: int, path: str, cookie: str, clients: int, duration_s: float) -> tuple[Watch, float]:
    clock = {"start": float("inf"), "end": float("inf")}
    watches = [Watch() for _ in range(clients)]
    connected: list[int] = []
    sockets = [await Socket.connect(port, path, cookie) for _ in range(clients)]
    tasks = [
        asyncio.create_task(_watch(sock, "bench" not in path, clock, w, connected))
        for sock, w in zip(sockets, watches, strict=True)
    ]
    deadline = time.monotonic() + 60
    while len(connected) < clients:
        failed = [t for t in tasks if t.done() and t.exception() is not None]
        if failed:
            raise failed[0].exception()  # type: ignore[misc]
        if time.monotonic() > deadline:
            raise TimeoutError(f"only {len(connected)} of {clients} clients got their first message")
        await asyncio.sleep(0.05)
    await asyncio.sleep(WARM_UP_S)  # let the lab settle after the first page started it
    clock["start"] = time.time()
    await asyncio.sleep(duration_s)
    clock["end"] = time.time()
    await asyncio.sleep(DRAIN_S)  # frames made before the end may still be on their way
    for sock in sockets:
        sock.close()
    await asyncio.gather(*tasks, return_exceptions=True)
    total = Watch()
    for w in watches:
        total.delays_ms += w.delays_ms
        total.event_delays_ms += w.event_delays_ms
        total.frames += w.frames
        total.bytes += w.bytes
    return total, clock["end"] - clock["start"]


# ---------------------------------------------------------------------------- the run


def _prepare(data_dir: Path) -> str:
    """Migrate a fresh database, make a user and the bench lab; return a logged-in session key."""
    os.environ["LAB_DATA_DIR"] = str(data_dir)
    os.environ["DJANGO_SETTINGS_MODULE"] = "lab.settings"
    os.environ["LAB_ZOOKEEPER"] = ""
    import django
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, get_user_model
    from django.contrib.sessions.backends.db import SessionStore
    from django.core.management import call_command

    django.setup()
    call_command("migrate", interactive=False, verbosity=0)
    from lab.labs import create_lab
    from lab.runtime.spec import ClientSpec, TopicSpec

    user = get_user_model().objects.create_user("bench", password=secrets.token_urlsafe(16))
    create_lab(
        user,
        "bench",
        brokers=3,
        topics=[TopicSpec(name="orders", partitions=3, replication_factor=3)],
        clients=[
            ClientSpec(kind="producer", name="load", topics=("orders",), rate_per_s=PRODUCE_RATE, acks="1")
        ],
    )
    session = SessionStore()
    session[SESSION_KEY] = str(user.pk)
    session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    session[HASH_SESSION_KEY] = user.get_session_auth_hash()
    session.create()
    assert session.session_key is not None
    return session.session_key


def _serve(data_dir: Path, port: int) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "LAB_DATA_DIR": str(data_dir),
        "DJANGO_SETTINGS_MODULE": "lab.settings",
        "LAB_ZOOKEEPER": "",
    }
    log = (data_dir / "daphne.log").open("wb")
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "daphne",
            "-b",
            "127.0.0.1",
            "-p",
            str(port),
            "--verbosity",
            "0",
            "lab.bench.dashboard:application",
        ],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"daphne exited: {(data_dir / 'daphne.log').read_text()}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return server
        except OSError:
            time.sleep(0.1)
    server.kill()
    raise RuntimeError("daphne did not start listening within 60 s")


def run(*, clients: int, duration_s: float) -> dict[str, Any]:
    data_dir = Path(tempfile.mkdtemp(prefix="kafka-lab-bench-"))
    server: subprocess.Popen[bytes] | None = None
    try:
        cookie = _prepare(data_dir)
        port = free_port()
        server = _serve(data_dir, port)
        cpu0, own0 = cpu_s(server.pid), time.process_time()
        lab, lab_s = asyncio.run(_phase(port, "/ws/labs/bench/", cookie, clients, duration_s))
        cpu1, own1 = cpu_s(server.pid), time.process_time()
        fixed, fixed_s = asyncio.run(_phase(port, "/ws/bench/fixed/", cookie, clients, duration_s))
        cpu2, _own2 = cpu_s(server.pid), time.process_time()
    finally:
        if server is not None:
            server.send_signal(signal.SIGTERM)
            try:
                server.wait(30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
        shutil.rmtree(data_dir, ignore_errors=True)
    p99 = percentile(lab.delays_ms, 99)
    base_p99 = percentile(fixed.delays_ms, 99)
    return {
        "bench": "dashboard_fanout",
        "clients": clients,
        "p50_ms": round(percentile(lab.delays_ms, 50), 2),
        "p99_ms": round(p99, 2),
        "event_p50_ms": round(percentile(lab.event_delays_ms, 50), 2),
        "event_p99_ms": round(percentile(lab.event_delays_ms, 99), 2),
        "frames_per_s": round(lab.frames / clients / lab_s, 2),
        "frame_bytes_avg": round(lab.bytes / max(1, lab.frames)),
        "baseline": "fixed_2kb_fanout",
        "baseline_p50_ms": round(percentile(fixed.delays_ms, 50), 2),
        "baseline_p99_ms": round(base_p99, 2),
        "baseline_frames_per_s": round(fixed.frames / clients / fixed_s, 2),
        "ratio": round(p99 / base_p99, 2) if base_p99 > 0 else None,
        "duration_s": duration_s,
        "store": "memory",
        "produce_rate": PRODUCE_RATE,
        "server_cpu_per_s": round((cpu1 - cpu0) / lab_s, 2),
        "clients_cpu_per_s": round((own1 - own0) / lab_s, 2),
        "baseline_server_cpu_per_s": round((cpu2 - cpu1) / fixed_s, 2),
    }


def main(quick: bool = False) -> None:
    figure = run(
        clients=QUICK_CLIENTS if quick else CLIENTS, duration_s=QUICK_DURATION_S if quick else DURATION_S
    )
    print(json.dumps(figure), flush=True)
