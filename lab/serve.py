"""``make run``: start ZooKeeper, migrate, serve the lab with daphne; stop it all on exit.

    python -m lab.serve [--host 127.0.0.1] [--port 8000]

Without ``LAB_ZOOKEEPER`` a managed ZooKeeper runs under ``<LAB_DATA_DIR>/zookeeper``
(its log is ``zookeeper.log`` there) and its address is handed to Django through
``LAB_ZOOKEEPER``. Where ZooKeeper cannot be started (not installed, or it fails), the
labs run on the in-memory metadata store and every page says so and how to get it.

Before serving, it makes sure the demo user (with a generated password, kept in
``<LAB_DATA_DIR>/demo-password`` and printed here) and the demo lab exist, and starts
every lab, so labs come back after a restart with their data. Daphne runs in this
process; Ctrl-C or SIGTERM stops daphne, then the labs, then ZooKeeper, and the process
exits with nothing left behind.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import sys
from types import FrameType
from typing import Any

from lab.zookeeper_server import (
    ENV_VAR,
    INSTALL_HINT,
    ManagedZooKeeper,
    ZooKeeperNotInstalled,
    ZooKeeperStartError,
    default_data_dir,
    zookeeper_status,
)

MANAGED_DIR_ENV_VAR = "LAB_ZOOKEEPER_MANAGED_DIR"


def _interrupt(signum: int, frame: FrameType | None) -> None:
    # SIGTERM takes the same way out as Ctrl-C, so every `finally` runs.
    raise KeyboardInterrupt


def _port_is_free(host: str, port: int) -> bool:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def _say(message: str) -> None:
    print(message, flush=True)


def _finish_pending_tasks() -> None:
    """Let websocket consumers that were still waiting for frames end on their own loop.

    Daphne's reactor stops with those tasks pending; left for the interpreter's last garbage
    collection, they are torn down after their loop and CPython 3.11 can crash there.
    """
    import asyncio

    try:
        loop = asyncio.get_event_loop()
    except RuntimeError:
        return
    if loop.is_closed():
        return
    pending = [task for task in asyncio.all_tasks(loop) if not task.done()]
    for task in pending:
        task.cancel()
    if pending:
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
    loop.run_until_complete(loop.shutdown_asyncgens())
    loop.close()


def _database() -> str:
    """Which database the lab uses, in words (DATABASE_URL's password left out)."""
    from django.db import connection

    db = connection.settings_dict
    if connection.vendor == "postgresql":
        return f"PostgreSQL {db['NAME']} on {db['HOST'] or 'the local socket'}{':' + db['PORT'] if db['PORT'] else ''}"
    return f"SQLite {db['NAME']} (WAL)"


def _start_redis(data_dir: Any) -> Any:
    """The managed Redis the web process and the workers share (unless LAB_REDIS names one); None if it
    cannot run, and the labs then run in this process."""
    from lab.redis_server import ENV_VAR as REDIS_VAR
    from lab.redis_server import INSTALL_HINT as REDIS_HINT
    from lab.redis_server import ManagedRedis, RedisNotInstalled, RedisStartError

    configured = os.environ.get(REDIS_VAR, "").strip()
    if configured:
        _say(f"Redis: {configured} from {REDIS_VAR}")
        return None
    try:
        redis = ManagedRedis(data_dir / "redis", report=_say)
        url = redis.start()
    except (RedisNotInstalled, RedisStartError) as error:
        _say(f"Cannot start Redis: {error}")
        _say(f"Workers: none; the labs run in this process. Get Redis with: {REDIS_HINT}")
        return None
    os.environ[REDIS_VAR] = url
    _say(f"Redis: {url} (managed, pid {redis.pid}, log {redis.log_path})")
    return redis


def _start_workers(count: int, data_dir: Any, timeout_s: float = 60.0) -> Any:
    """Start ``count`` supervised lab workers and wait until each has registered in ZooKeeper."""
    import time

    from django.conf import settings

    from lab.labs import instance_id
    from lab.runtime.ownership import Ownership
    from lab.worker_pool import WorkerPool

    pool = WorkerPool(count, data_dir / "workers", report=_say)
    pool.start()
    watcher = Ownership(settings.LAB_ZOOKEEPER, instance_id())
    try:
        deadline = time.monotonic() + timeout_s
        while len(watcher.workers()) < count and time.monotonic() < deadline:
            time.sleep(0.1)
        ready = len(watcher.workers())
    finally:
        watcher.close()
    if ready < count:
        _say(f"Workers: only {ready} of {count} registered within {timeout_s:g} s (see {pool.log_dir})")
    return pool


def default_workers() -> int:
    """``$WORKERS`` (make's variable, if in the environment), else one lab worker per core: a Python
    process runs on one core at a time (the GIL), so a class's labs use every core only spread over
    as many processes."""
    given = os.environ.get("WORKERS", "").strip()
    return int(given) if given else os.cpu_count() or 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.serve", description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port to listen on (default 8000)")
    parser.add_argument(
        "--workers",
        type=int,
        default=default_workers(),
        help="lab worker processes to run the labs (default $WORKERS, else one per core; 0: the labs run "
        "in this process)",
    )
    args = parser.parse_args(argv)

    signal.signal(signal.SIGTERM, _interrupt)
    if not _port_is_free(args.host, args.port):
        _say(
            f"Port {args.port} on {args.host} is in use (another `make run`?). "
            f"Stop it, or pick another port: make run PORT={args.port + 1}"
        )
        return 1

    data_dir = default_data_dir()
    data_dir.mkdir(parents=True, exist_ok=True)
    os.environ["LAB_DATA_DIR"] = str(data_dir)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lab.settings")
    # Where daphne listens decides how Django serves (lab.settings, lab.hosts): off loopback, a class's
    # defaults (DEBUG off, a generated secret key kept in the data dir, this machine's names allowed).
    from lab.engine.endpoints import format_address
    from lab.hosts import LISTEN_ENV_VAR, classroom_lines

    os.environ[LISTEN_ENV_VAR] = format_address(args.host, args.port)
    for line in classroom_lines(args.host, args.port, debug=os.environ.get("DJANGO_DEBUG", "")):
        _say(line)

    zookeeper: ManagedZooKeeper | None = None
    redis: Any = None
    pool: Any = None
    labs_started = False
    try:
        hosts = os.environ.get(ENV_VAR, "").strip()
        if hosts:
            status = zookeeper_status(hosts)
            answer = (
                f"answers, version {status.version}"
                if status.answered
                else f"DOES NOT ANSWER: {status.error}"
            )
            _say(f"ZooKeeper: {hosts} from {ENV_VAR} ({answer})")
        else:
            try:
                # If it dies, it is started again (with backoff) and says so here.
                zookeeper = ManagedZooKeeper(data_dir / "zookeeper", report=_say)
                _say("ZooKeeper: starting a managed server...")
                hosts = zookeeper.start(timeout_s=60)
            except (ZooKeeperNotInstalled, ZooKeeperStartError) as error:
                zookeeper = None
                what = (
                    "Cannot start ZooKeeper"
                    if isinstance(error, ZooKeeperNotInstalled)
                    else "ZooKeeper did not start"
                )
                _say(f"{what}: {error}")
                _say(
                    "ZooKeeper: none. Labs keep their metadata in memory (lost when the lab stops); "
                    f"get ZooKeeper with: {INSTALL_HINT}"
                )
            else:
                os.environ[ENV_VAR] = hosts
                os.environ[MANAGED_DIR_ENV_VAR] = str(zookeeper.base_dir)
                _say(f"ZooKeeper: {hosts} (managed, pid {zookeeper.pid}, log {zookeeper.log_path})")

        workers = max(0, args.workers)
        if workers and not os.environ.get(ENV_VAR, "").strip():
            _say("Workers: none, since lab workers need ZooKeeper (their labs' owners are recorded there).")
            workers = 0
        if workers:
            redis = _start_redis(data_dir)
            if redis is None and not os.environ.get("LAB_REDIS", "").strip():
                workers = 0
        if workers:
            os.environ["LAB_WORKERS"] = str(workers)

        import django
        from django.core.management import call_command

        django.setup()
        call_command("migrate", interactive=False, verbosity=0)
        _say(f"Database: {_database()} (migrated)")

        from django.conf import settings
        from django.core.exceptions import ImproperlyConfigured

        from lab import labs, ports

        try:
            wire_ports = ports.configured_range()
        except ImproperlyConfigured as error:
            _say(f"Kafka listeners: {error}")
            return 1

        labs.warm_up()  # the labs started here draw their first frames with the URLs and templates loaded
        user, password = labs.ensure_demo_user()
        demo = labs.ensure_demo_lab(user)
        if workers:
            pool = _start_workers(workers, data_dir)
        started = labs.boot()
        labs_started = True
        where = (
            f"the demo lab is /labs/{demo.slug}/"
            if demo is not None
            else "no demo lab: see the warning above"
        )
        _say(f"Labs: {', '.join(live.slug for live in started)} ({where})")
        if pool is not None:
            owners = ", ".join(f"{live.slug} on worker {live.worker}" for live in started)  # type: ignore[attr-defined]
            _say(
                f"Workers: {workers} (pids {', '.join(map(str, pool.pids().values()))}; logs in {pool.log_dir}): {owners}"
            )
        _say(
            f"Kafka listeners: a port per broker from LAB_WIRE_PORTS ({wire_ports}) on "
            f"{settings.LAB_WIRE_BIND_HOST}, advertised as {settings.LAB_ADVERTISED_HOST} (LAB_ADVERTISED_HOST)"
        )
        if demo is not None:
            from lab.engine.endpoints import format_address

            demo_ports = ports.ports_of(demo)
            servers = ",".join(
                format_address(settings.LAB_ADVERTISED_HOST, demo_ports[b]) for b in sorted(demo_ports)
            )
            _say(f"Kafka clients: the demo lab's bootstrap.servers={servers}")
        _say(
            f"Log in as {user.get_username()} with password {password} "
            f"(kept in {data_dir / labs.DEMO_PASSWORD_FILE})"
        )

        # Imported late: daphne installs Twisted's asyncio reactor on import.
        from daphne.cli import CommandLineInterface

        _say(f"Kafka Lab: http://{args.host}:{args.port}/  (Ctrl-C stops the lab and ZooKeeper)")
        # Daphne's reactor handles SIGINT and SIGTERM itself and returns here.
        CommandLineInterface().run(["--bind", args.host, "--port", str(args.port), "lab.asgi:application"])
        _finish_pending_tasks()
    except KeyboardInterrupt:
        pass
    finally:
        # A second Ctrl-C must not cut the teardown short.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if labs_started:
            from lab.api.runs import runs

            runs.stop()  # cancels scenario runs, however long they would have run
            _say("Labs: stopping...")
            from lab import labs

            labs.stop_all()
        if pool is not None:
            _say("Workers: stopping (each stops its labs)...")
            pool.stop()
            from lab import remote

            remote.close()  # its courier reads Redis, which stops next
        if redis is not None:
            _say("Redis: stopping...")
            redis.stop()
        if zookeeper is not None:
            _say("ZooKeeper: stopping...")
            zookeeper.stop()
        _say("Kafka Lab stopped.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
