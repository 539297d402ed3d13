"""A class at once: ``python -m lab.bench classroom [--quick]``, one JSON line per WORKERS value, then
the scaling line.

The run, as issue 11 describes a class: ``LABS`` students, each with a lab of 3 brokers (topic
``orders``, 3 partitions, RF 3; a simulated producer at 5 records/s and a group of two consumers),
each lab watched by its student's websocket; plus the instructor's demo lab (the same load) watched by
every student. The server is ``python -m lab.serve`` as ``make run`` starts it (a managed ZooKeeper,
the labs on it), with ``WORKERS`` set for the run. Every student opens both websockets at once.

Per WORKERS value: ``handshakes`` / ``handshakes_ok`` (a 101 and a first message within
``HANDSHAKE_S``), ``frame_p50_ms`` / ``frame_p99_ms`` (from the moment a lab read its state for a
frame to the frame's arrival, over every frame at every client), ``api_p50_ms`` / ``api_p99_ms``
(``GET /api/labs/{slug}`` by a few API clients through the window), ``cpu_per_busy_lab`` (the
server's processes, ZooKeeper and Redis left out, over the labs; ``client_cpu`` is the bench's own
clients, on the same cores), ``rss_per_lab_mb`` (their memory
after the labs started, less before), and ``cpu_per_idle_watched_lab`` / ``cpu_per_sleeping_lab``
(one lab measured alone by ``lab.bench.idle``, the same for every WORKERS value).

``labs_per_core`` is the capacity the run's CPU figures predict, per core of the machine: a Python
process gets at most one core (the GIL), so the labs fit until the busiest process of the server or
the machine's cores are full, whichever comes first:
``labs * min(1 / busiest_process_cpu, cores / server_cpu) / cores``. The last line
(``classroom_scaling``) is WORKERS=2's over WORKERS=1's, both measured in this run.

Options (``python -m lab.bench classroom --help``), for looking into a run rather than reporting it:
``--labs N`` and ``--duration S`` (a smaller class, a shorter window), ``--workers 2`` (one WORKERS
value; the scaling line needs 1 and 2), ``--no-alone`` (the idle lab's figures are not measured:
null), and ``--profile DIR``: py-spy (``pip install -e '.[profile]'``) samples every server process through
the window, each into ``DIR/workers<N>-<process>.txt`` (collapsed stacks, one thread's name first),
and ``DIR/workers<N>-top.txt`` lists the functions that took the most samples, by process (the
server's and its workers' logs are kept there too).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lab.bench._web import Socket, command_name, cpu_s, descendants, free_port, get, percentile, rss_mb
from lab.bench.dashboard import MADE_AT

LABS = 30
QUICK_LABS = 2
DURATION_S = 60.0
QUICK_DURATION_S = 3.0
WORKERS = (1, 2)
PRODUCE_RATE = 5.0
HANDSHAKE_S = 10.0
START_S = 180.0  # every lab running, on a loaded machine
API_CLIENTS = 4
API_PAUSE_S = 0.25
WARM_UP_S = 3.0
NOT_THE_SERVERS = {"java", "redis-server"}  # ZooKeeper and Redis: shared engines, not the lab's work


@dataclass
class Class:
    """What the bench made in the database: who logs in where, and which labs they watch."""

    sessions: list[str] = field(default_factory=list)  # a student's session key, by student
    labs: list[str] = field(default_factory=list)  # a student's lab slug, by student
    demo: str = ""
    token: str = ""  # the instructor's API token (an instructor may read every lab)


def _prepare(data_dir: Path, labs: int) -> Class:
    """A fresh database with the class in it: students, their labs, the demo and its viewers."""
    os.environ["LAB_DATA_DIR"] = str(data_dir)
    os.environ["DJANGO_SETTINGS_MODULE"] = "lab.settings"
    import django
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, get_user_model
    from django.contrib.sessions.backends.db import SessionStore
    from django.core.management import call_command

    django.setup()
    call_command("migrate", interactive=False, verbosity=0)
    from lab.accounts.models import ApiToken, set_role
    from lab.classroom.models import Demo, DemoViewer
    from lab.labs import create_lab
    from lab.models import Lab
    from lab.runtime.spec import ClientSpec, TopicSpec

    def lab_for(owner: Any, name: str) -> str:
        made = create_lab(
            owner,
            name,
            brokers=3,
            topics=[TopicSpec(name="orders", partitions=3, replication_factor=3)],
            clients=[
                ClientSpec(kind="producer", name="orders-app", topics=("orders",), rate_per_s=PRODUCE_RATE),
                ClientSpec(kind="consumer", name="billing-1", topics=("orders",), group="billing"),
                ClientSpec(kind="consumer", name="billing-2", topics=("orders",), group="billing"),
            ],
        )
        return str(made.slug)

    def session_of(user: Any) -> str:
        session = SessionStore()
        session[SESSION_KEY] = str(user.pk)
        session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
        session[HASH_SESSION_KEY] = user.get_session_auth_hash()
        session.create()
        assert session.session_key is not None
        return session.session_key

    users = get_user_model().objects
    teacher = users.create_user("teacher")  # no password: sessions are made here, and hashing is slow
    set_role(teacher, "instructor")
    made = Class(demo=lab_for(teacher, "Demo"), token=ApiToken.issue(teacher, "bench")[1])
    demo = Demo.objects.create(lab=Lab.objects.get(slug=made.demo))
    for n in range(1, labs + 1):
        student = users.create_user(f"student{n}")
        made.labs.append(lab_for(student, f"Student {n}"))
        DemoViewer.objects.create(demo=demo, user=student)
        made.sessions.append(session_of(student))
    return made


def _serve(data_dir: Path, port: int, workers: int) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "LAB_DATA_DIR": str(data_dir),
        "DJANGO_SETTINGS_MODULE": "lab.settings",
        "WORKERS": str(workers),
        "LAB_MAX_LIVE_LABS": "200",
        "LAB_MAX_LABS_PER_WORKER": "200",  # one worker runs the whole class when WORKERS=1
        "PYTHONUNBUFFERED": "1",
    }
    env.pop("LAB_ZOOKEEPER", None)  # a managed one, as `make run` has
    log = (data_dir / f"serve-{workers}.log").open("wb")
    server = subprocess.Popen(
        [sys.executable, "-m", "lab.serve", "--port", str(port)],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"lab.serve exited: {(data_dir / f'serve-{workers}.log').read_text()[-3000:]}")
        try:
            status, _ = asyncio.run(get(port, "/accounts/login/", ""))
            if status == 200:
                return server
        except OSError:
            pass
        time.sleep(0.2)
    _stop(server)
    raise RuntimeError("lab.serve did not answer within 120 s")


def _stop(server: subprocess.Popen[bytes]) -> None:
    server.send_signal(signal.SIGTERM)
    try:
        server.wait(60)
    except subprocess.TimeoutExpired:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait()


def _lab_processes(server: subprocess.Popen[bytes]) -> list[int]:
    return [server.pid] + [p for p in descendants(server.pid) if command_name(p) not in NOT_THE_SERVERS]


def _usage(pids: list[int]) -> dict[int, float]:
    used = {}
    for pid in pids:
        try:
            used[pid] = cpu_s(pid)
        except OSError:  # a process that ended meanwhile
            continue
    return used


async def _running(port: int, made: Class) -> None:
    """Every lab asked for (a GET starts one that is not running) until each says it runs."""
    waiting = {*made.labs, made.demo}
    deadline = time.monotonic() + START_S
    while waiting:
        for slug in sorted(waiting):
            status, body = await get(port, f"/api/labs/{slug}", made.token)
            if status == 200 and json.loads(body)["state"] == "running":
                waiting.discard(slug)
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"{len(waiting)} lab(s) did not start within {START_S:g} s: {sorted(waiting)[:5]}"
            )
        await asyncio.sleep(0.5)


@dataclass
class Seen:
    frames_ms: list[float] = field(default_factory=list)
    api_ms: list[float] = field(default_factory=list)
    api_failed: dict[str, int] = field(default_factory=dict)  # answers other than 200, by status
    handshakes_ok: int = 0


async def _open(port: int, path: str, session: str) -> Socket:
    sock = await Socket.connect(port, path, session)
    await sock.receive()  # the full state a page gets on connect
    return sock


async def _read(sock: Socket, window: dict[str, float], seen: Seen) -> None:
    try:
        while True:
            message = await sock.receive()
            arrived = time.time()
            made_at = MADE_AT.search(message)
            if made_at is not None and window["start"] <= float(made_at.group(1)) < window["end"]:
                seen.frames_ms.append((arrived - float(made_at.group(1))) * 1000)
    except (ConnectionError, asyncio.IncompleteReadError, OSError):
        return


async def _ask(port: int, made: Class, window: dict[str, float], seen: Seen, n: int) -> None:
    slugs = [*made.labs, made.demo]
    while time.time() < window["end"]:
        slug = slugs[n % len(slugs)]
        n += API_CLIENTS
        began = time.monotonic()
        status, _ = await get(port, f"/api/labs/{slug}", made.token)
        if time.time() >= window["start"]:
            if status == 200:
                seen.api_ms.append((time.monotonic() - began) * 1000)
            else:  # not a figure, but said: a 504 is a request that waited too
                seen.api_failed[str(status)] = seen.api_failed.get(str(status), 0) + 1
        await asyncio.sleep(API_PAUSE_S)


async def _class(port: int, made: Class, duration_s: float) -> tuple[Seen, int, float]:
    """Every student opens their lab and the demo at once; then the window."""
    seen = Seen()
    opening = [
        _open(port, f"/ws/labs/{slug}/", session)
        for session, slug in zip(made.sessions, made.labs, strict=True)
    ] + [_open(port, f"/ws/labs/{made.demo}/", session) for session in made.sessions]
    results = await asyncio.gather(
        *(asyncio.wait_for(o, HANDSHAKE_S) for o in opening), return_exceptions=True
    )
    sockets = [r for r in results if isinstance(r, Socket)]
    seen.handshakes_ok = len(sockets)
    window = {"start": float("inf"), "end": float("inf")}
    readers = [asyncio.create_task(_read(sock, window, seen)) for sock in sockets]
    await asyncio.sleep(WARM_UP_S)
    window["start"] = time.time()
    window["end"] = window["start"] + duration_s
    await asyncio.gather(*(_ask(port, made, window, seen, n) for n in range(API_CLIENTS)))
    await asyncio.sleep(0.5)  # frames made before the end may still be on their way
    for sock in sockets:
        sock.close()
    await asyncio.gather(*readers, return_exceptions=True)
    return seen, len(opening), duration_s


def _process_name(pid: int, server: int) -> str:
    """``web``, ``worker1``, ...: who a server process is, for its profile's file name."""
    if pid == server:
        return "web"
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return str(pid)
    if b"lab.worker" in argv and b"--name" in argv:
        return f"worker{argv[argv.index(b'--name') + 1].decode()}"
    return f"{command_name(pid)}-{pid}"


def _py_spy() -> str | None:
    beside = Path(sys.executable).with_name("py-spy")
    return str(beside) if beside.exists() else shutil.which("py-spy")


def _profile(
    py_spy: str, pids: list[int], server: int, duration_s: float, out: Path, workers: int
) -> list[subprocess.Popen[bytes]]:
    """py-spy samples each of ``pids`` for ``duration_s`` (without stopping it: ``--nonblocking``)."""
    out.mkdir(parents=True, exist_ok=True)
    samplers = []
    for pid in pids:
        path = out / f"workers{workers}-{_process_name(pid, server)}.txt"
        samplers.append(
            subprocess.Popen(
                [
                    py_spy,
                    "record",
                    "--pid",
                    str(pid),
                    "--duration",
                    str(max(1, round(duration_s))),
                    "--rate",
                    "50",
                    "--nonblocking",
                    "--gil",
                    "--threads",
                    "--format",
                    "raw",
                    "--output",
                    str(path),
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )
    return samplers


# Where a thread waits (no CPU): a sample ending in one of these is left out.
WAITING = (
    "Condition.wait ",
    "EpollSelector.select ",
    "Event.wait ",
    "Thread.join ",
    "sleep ",
    "_worker (concurrent/futures/thread.py:81)",
)


def _samples(collapsed: str) -> list[tuple[list[str], int]]:
    """py-spy's collapsed stacks (``thread;frame;frame;... count``) less the waiting ones."""
    out = []
    for line in collapsed.splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        frames = stack.strip().split(";")
        if frames[-1].startswith(WAITING):
            continue
        out.append((frames, int(count_text)))
    return out


def top_entries(collapsed: str, n: int = 25) -> list[tuple[str, float, float]]:
    """(function, share of samples it was running in (self), share it was on the stack (total)), the
    first ``n`` by total, from py-spy's collapsed stacks (waiting left out)."""
    own: dict[str, int] = {}
    total: dict[str, int] = {}
    samples = 0
    for frames, count in _samples(collapsed):
        samples += count
        for frame in set(frames[1:]):  # the first is the thread
            total[frame] = total.get(frame, 0) + count
        own[frames[-1]] = own.get(frames[-1], 0) + count
    ranked = sorted(total, key=lambda f: -total[f])[:n]
    return [(f, own.get(f, 0) / samples, total[f] / samples) for f in ranked] if samples else []


def thread_shares(collapsed: str) -> list[tuple[str, float]]:
    """Each thread's share of the samples (drivers ``lab-<slug>`` summed as ``lab-*``)."""
    counts: dict[str, int] = {}
    for frames, count in _samples(collapsed):
        thread = frames[0].strip()
        name = thread.partition("): ")[2] or thread
        for prefix in ("lab-", "zk-proxy-", "ThreadPoolExecutor-", "asyncio_", "Thread-"):
            name = prefix + "*" if name.startswith(prefix) else name
        counts[name] = counts.get(name, 0) + count
    samples = sum(counts.values()) or 1
    return sorted(((t, c / samples) for t, c in counts.items()), key=lambda tc: -tc[1])


def _summarise_profiles(out: Path, workers: int) -> None:
    lines = []
    for path in sorted(out.glob(f"workers{workers}-*.txt")):
        if path.name.endswith("-top.txt"):
            continue
        collapsed = path.read_text(errors="replace")
        lines.append(f"== {path.stem}: {sum(c for _, c in _samples(collapsed))} samples; threads")
        lines += [f"  {share:6.1%}  {thread}" for thread, share in thread_shares(collapsed)]
        lines.append(f"== {path.stem}: functions (self, total)")
        lines += [f"  {mine:6.1%} {whole:6.1%}  {frame}" for frame, mine, whole in top_entries(collapsed)]
    (out / f"workers{workers}-top.txt").write_text("\n".join(lines) + "\n")


def _one(workers: int, labs: int, duration_s: float, profile: Path | None = None) -> dict[str, Any]:
    data_dir = Path(tempfile.mkdtemp(prefix=f"kafka-lab-bench-class{workers}-"))
    server: subprocess.Popen[bytes] | None = None
    script = (
        "import json, sys; from pathlib import Path; from lab.bench import classroom; "
        "made = classroom._prepare(Path(sys.argv[1]), int(sys.argv[2])); "
        "print(json.dumps(made.__dict__))"
    )
    try:
        port = free_port()
        server = _serve(data_dir, port, workers)
        before = sum(rss_mb(p) for p in _lab_processes(server))
        # The class is made while the server runs (its labs start when first asked for, as a class's
        # do), in a child: Django, once set up in this process, stays on one database.
        done = subprocess.run(
            [sys.executable, "-c", script, str(data_dir), str(labs)],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "LAB_DATA_DIR": str(data_dir)},
        )
        made = Class(**json.loads(done.stdout.strip().splitlines()[-1]))
        t0 = time.monotonic()
        asyncio.run(_running(port, made))
        started_s = time.monotonic() - t0
        pids = _lab_processes(server)
        samplers: list[subprocess.Popen[bytes]] = []
        py_spy = _py_spy() if profile is not None else None
        if profile is not None and py_spy is None:
            print(
                "--profile: py-spy is not installed (pip install py-spy); no profile taken", file=sys.stderr
            )
        cpu0, wall0, client0 = _usage(pids), time.monotonic(), time.process_time()
        if profile is not None and py_spy is not None:
            # From the handshakes to the window's end (its warm-up and the class opening included).
            samplers = _profile(py_spy, pids, server.pid, duration_s + WARM_UP_S, profile, workers)
        seen, attempted, _ = asyncio.run(_class(port, made, duration_s))
        cpu1, wall = _usage(pids), time.monotonic() - wall0
        for sampler in samplers:
            sampler.wait(60)
        if samplers and profile is not None:
            _summarise_profiles(profile, workers)
        client_cpu = (time.process_time() - client0) / wall
        rss = sum(rss_mb(p) for p in _lab_processes(server))  # after the window: logs and journals have grown
    finally:
        if server is not None:
            _stop(server)
        if profile is not None:  # the server's and its workers' logs go with the profiles
            for log in [*data_dir.glob("serve-*.log"), *data_dir.glob("**/workers/*.log")]:
                shutil.copy(log, profile / f"workers{workers}-{log.name}")
        shutil.rmtree(data_dir, ignore_errors=True)
    per_process = [(cpu1[p] - cpu0[p]) / wall for p in cpu1 if p in cpu0]
    server_cpu = sum(per_process)
    busiest = max(per_process)
    cores = os.cpu_count() or 1
    live = labs + 1
    capacity = live * min(1 / busiest, cores / server_cpu) if server_cpu > 0 else float("inf")
    return {
        "bench": "classroom",
        "workers": workers,
        "labs": live,
        "viewers": attempted,
        "handshakes": attempted,
        "handshakes_ok": seen.handshakes_ok,
        "api_p50_ms": round(percentile(seen.api_ms, 50), 1),
        "api_p99_ms": round(percentile(seen.api_ms, 99), 1),
        "api_requests": len(seen.api_ms),
        "api_failed": seen.api_failed,
        "frame_p50_ms": round(percentile(seen.frames_ms, 50), 1),
        "frame_p99_ms": round(percentile(seen.frames_ms, 99), 1),
        "frames": len(seen.frames_ms),
        "cpu_per_busy_lab": round(server_cpu / live, 4),
        "rss_per_lab_mb": round((rss - before) / live, 1),
        "server_cpu": round(server_cpu, 3),
        "client_cpu": round(client_cpu, 3),  # this bench's own websocket and API clients, on the same cores
        "busiest_process_cpu": round(busiest, 3),
        "processes": len(per_process),
        "cores": cores,
        "labs_per_core": round(capacity / cores, 1),
        "start_s": round(started_s, 1),
        "duration_s": duration_s,
        "targets": {"handshakes_ok": attempted, "api_p99_ms": 500, "frame_p99_ms": 250},
    }


def _alone(quick: bool) -> dict[str, float | None]:
    """One watched idle lab and one sleeping lab, measured alone (``lab.bench.idle``, on ZooKeeper)."""
    from lab.bench import idle

    figures = {
        f["bench"]: f
        for f in idle.run(
            labs=1,
            window_s=idle.QUICK_WINDOW_S if quick else idle.WINDOW_S,
            settle_s=idle.QUICK_SETTLE_S if quick else idle.SETTLE_S,
        )
    }
    return {
        "cpu_per_idle_watched_lab": figures["idle_watched"]["cpu_per_lab"],
        "cpu_per_sleeping_lab": figures["idle_sleeping"]["cpu_per_lab"],
    }


def options(argv: list[str], quick: bool) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m lab.bench classroom", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--labs", type=int, default=QUICK_LABS if quick else LABS, help="students (each a lab)"
    )
    parser.add_argument(
        "--duration", type=float, default=QUICK_DURATION_S if quick else DURATION_S, help="the window, s"
    )
    parser.add_argument(
        "--workers", default=",".join(map(str, WORKERS)), help="WORKERS values, comma-separated (1,2)"
    )
    parser.add_argument("--no-alone", action="store_true", help="skip the idle lab's figures (null)")
    parser.add_argument("--profile", type=Path, help="py-spy profiles of the server's processes go here")
    args = parser.parse_args(argv)
    if args.labs < 1 or args.duration <= 0:
        parser.error("--labs is at least 1 and --duration more than 0")
    try:
        args.workers = tuple(int(w) for w in args.workers.split(","))
    except ValueError:
        parser.error(f"--workers is a comma-separated list of numbers, not {args.workers!r}")
    if not args.workers or min(args.workers) < 1:
        parser.error("--workers: each value at least 1 (WORKERS=0 runs no worker)")
    return args


def main(quick: bool = False, argv: list[str] | None = None) -> None:
    args = options(argv or [], quick)
    alone: dict[str, float | None] = (
        {"cpu_per_idle_watched_lab": None, "cpu_per_sleeping_lab": None} if args.no_alone else _alone(quick)
    )
    lines = [{**_one(workers, args.labs, args.duration, args.profile), **alone} for workers in args.workers]
    for line in lines:
        print(json.dumps(line), flush=True)
    if len(lines) < 2:
        return  # no scaling without both WORKERS values
    one, two = lines[0]["labs_per_core"], lines[-1]["labs_per_core"]
    print(
        json.dumps(
            {
                "bench": "classroom_scaling",
                "ratio": round(two / one, 2) if one else None,
                "labs_per_core_workers_2": two,
                "labs_per_core_workers_1": one,
                "baseline": "workers_1",
                "target": 1.5,
            }
        ),
        flush=True,
    )
