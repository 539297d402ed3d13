"""A Redis server the lab starts and stops itself, as it does ZooKeeper (``lab/zookeeper_server.py``).

With labs spread over worker processes (``make run WORKERS=N``), frames, commands and their
answers travel between processes on channels' Redis layer. :class:`ManagedRedis` runs Debian's
``redis-server`` (``apt-get install -y redis-server``) as a child on a free loopback port: no
persistence (no RDB snapshot, no append-only file: what travels is frames and commands, never
state), its files under ``<LAB_DATA_DIR>/redis`` (``redis.conf``, ``redis.log``). As the
ZooKeeper child does, it runs in its own session, is stopped by ``atexit``, ended by the kernel
if we die (``PR_SET_PDEATHSIG``), reaped by a supervisor thread the moment it exits, and started
again on the same port after a backoff that doubles while it keeps dying.

``LAB_REDIS=redis://host:port/0`` (or ``host:port``) points the lab at an existing server instead.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from types import TracebackType

from lab.zookeeper_server import Restart, _death_signal_setter, describe_exit, free_port

ENV_VAR = "LAB_REDIS"
INSTALL_HINT = "apt-get install -y redis-server"
RESTART_BACKOFF_S = (0.5, 30.0)
STABLE_S = 60.0

log = logging.getLogger(__name__)


class RedisNotInstalled(RuntimeError):
    """``redis-server`` is missing; the message says what to install."""


class RedisStartError(RuntimeError):
    """The server did not come up; the message carries the tail of its log."""


def find_redis(binary: str | None = None) -> str:
    """The path of ``redis-server``, or raise :class:`RedisNotInstalled`."""
    path = binary or shutil.which("redis-server") or "/usr/bin/redis-server"
    if not os.access(path, os.X_OK):
        raise RedisNotInstalled(
            f"Redis is not installed (no redis-server at {path}). Install Debian's package with "
            f"`{INSTALL_HINT}`, or point the lab at a running server with {ENV_VAR}=redis://host:port/0."
        )
    return path


def ping(address: str, timeout_s: float = 1.0) -> bool:
    """Whether the Redis server at ``host:port`` answers PING with PONG."""
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host or "127.0.0.1", int(port)), timeout=timeout_s) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(64).startswith(b"+PONG")
    except (OSError, ValueError):
        return False


def redis_url(configured: str) -> str:
    """``host:port`` or a ``redis://`` URL, as channels-redis takes it (a URL)."""
    configured = configured.strip()
    return configured if "://" in configured else f"redis://{configured}/0"


@dataclass(frozen=True, slots=True, kw_only=True)
class _Running:
    process: subprocess.Popen[bytes]
    port: int
    started_at: float


class ManagedRedis:
    """One Redis server, a child of this process, with everything under ``base_dir``."""

    def __init__(
        self,
        base_dir: Path,
        *,
        port: int | None = None,
        binary: str | None = None,
        restart: bool = True,
        restart_backoff_s: tuple[float, float] = RESTART_BACKOFF_S,
        stable_s: float = STABLE_S,
        report: Callable[[str], None] | None = None,
    ) -> None:
        if not 0 < restart_backoff_s[0] <= restart_backoff_s[1]:
            raise ValueError(f"need 0 < first <= longest restart backoff, got {restart_backoff_s}")
        self.base_dir = Path(base_dir)
        self._requested_port = port
        self._binary = binary
        self._restart = restart
        self._backoff = restart_backoff_s
        self._stable_s = stable_s
        self._report = report or (lambda text: log.warning("%s", text))
        self._running: _Running | None = None
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._supervisor: threading.Thread | None = None
        self._restarts: deque[Restart] = deque(maxlen=50)

    @property
    def config_path(self) -> Path:
        return self.base_dir / "redis.conf"

    @property
    def log_path(self) -> Path:
        return self.base_dir / "redis.log"

    @property
    def address(self) -> str:
        if self._running is None:
            raise RuntimeError("Redis is not running: call start() first")
        return f"127.0.0.1:{self._running.port}"

    @property
    def url(self) -> str:
        return redis_url(self.address)

    @property
    def pid(self) -> int | None:
        return self._running.process.pid if self._running else None

    @property
    def running(self) -> bool:
        return self._running is not None and self._running.process.poll() is None

    @property
    def restarts(self) -> tuple[Restart, ...]:
        with self._lock:
            return tuple(self._restarts)

    def start(self, timeout_s: float = 30.0) -> str:
        """Start the server and wait until it answers PING; return its ``redis://`` URL."""
        with self._lock:
            if self._running is not None:
                return self.url
            self._stopping.clear()
            binary = find_redis(self._binary)
            self.base_dir.mkdir(parents=True, exist_ok=True)
            deadline = time.monotonic() + timeout_s
            attempts = 1 if self._requested_port else 3  # a free port can be taken before redis binds it
            for attempt in range(attempts):
                running = self._launch(binary, self._requested_port or free_port())
                try:
                    self._wait_until_serving(running, deadline)
                except RedisStartError:
                    lost_race = "Address already in use" in self._log_tail()
                    self._terminate()
                    if lost_race and attempt + 1 < attempts:
                        continue
                    raise
                break
            atexit.register(self.stop)
            self._supervisor = threading.Thread(target=self._supervise, name="redis-supervisor", daemon=True)
            self._supervisor.start()
            return self.url

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop the server; safe to call twice."""
        self._stopping.set()
        with self._lock:
            self._terminate(timeout_s)
            supervisor, self._supervisor = self._supervisor, None
        if supervisor is not None and supervisor is not threading.current_thread():
            supervisor.join(timeout_s)
        atexit.unregister(self.stop)

    def __enter__(self) -> ManagedRedis:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def _write_config(self, port: int) -> None:
        self.config_path.write_text(
            "# Written by lab/redis_server.py on every start; edits are lost.\n"
            "bind 127.0.0.1\n"
            "protected-mode yes\n"
            f"port {port}\n"
            "daemonize no\n"
            f"dir {self.base_dir}\n"
            f"logfile {self.log_path}\n"
            # Nothing is kept: frames and commands are in flight, never state.
            'save ""\n'
            "appendonly no\n"
            "maxmemory 256mb\n"
            "maxmemory-policy noeviction\n"
        )

    def _launch(self, binary: str, port: int, *, supervisor: bool = False) -> _Running:
        self._write_config(port)
        self._log_offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        process = subprocess.Popen(
            [binary, str(self.config_path)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd=self.base_dir,
            start_new_session=True,
            preexec_fn=_death_signal_setter(thread_outlives_child=supervisor),
        )
        self._running = _Running(process=process, port=port, started_at=time.monotonic())
        return self._running

    def _wait_until_serving(self, running: _Running, deadline: float) -> None:
        address = f"127.0.0.1:{running.port}"
        while time.monotonic() < deadline:
            if running.process.poll() is not None:
                raise RedisStartError(
                    f"redis-server exited with status {running.process.returncode} before serving on "
                    f"{address}.\n{self._log_tail()}"
                )
            if ping(address, timeout_s=0.5):
                return
            time.sleep(0.02)
        raise RedisStartError(f"redis-server did not answer on {address} in time.\n{self._log_tail()}")

    def _log_tail(self, lines: int = 20) -> str:
        with contextlib.suppress(OSError), self.log_path.open("rb") as file:
            file.seek(getattr(self, "_log_offset", 0))
            text = file.read().decode("utf-8", errors="replace").splitlines()[-lines:]
            if text:
                return f"--- last lines of {self.log_path} ---\n" + "\n".join(text)
        return f"(nothing written to {self.log_path})"

    def _supervise(self) -> None:
        """Reap the server the moment it exits and, unless stopping, start it again after a backoff."""
        delay = self._backoff[0]
        while True:
            running = self._running
            if running is None or self._stopping.is_set():
                return
            status = running.process.wait()
            reaped_at = time.monotonic()
            if self._stopping.is_set() or self._running is not running:
                return
            if not self._restart:
                self._report(f"Redis (pid {running.process.pid}) {describe_exit(status)}")
                return
            if reaped_at - running.started_at >= self._stable_s:
                delay = self._backoff[0]
            self._report(
                f"Redis (pid {running.process.pid}) {describe_exit(status)}; "
                f"starting it again in {delay:g} s on 127.0.0.1:{running.port}"
            )
            restart = Restart(pid=running.process.pid, status=status, reaped_at=reaped_at, delay_s=delay)
            if self._stopping.wait(delay):
                return
            restart = self._relaunch(running, restart)
            with self._lock:
                self._restarts.append(restart)
            if restart.error:
                self._report(f"Redis did not start again: {restart.error.splitlines()[0]}")
            else:
                self._report(f"Redis serves again on 127.0.0.1:{running.port} (pid {restart.new_pid})")
            delay = min(delay * 2, self._backoff[1])

    def _relaunch(self, dead: _Running, restart: Restart) -> Restart:
        with self._lock:
            if self._stopping.is_set() or self._running is not dead:
                return restart
            try:
                running = self._launch(find_redis(self._binary), dead.port, supervisor=True)
            except (OSError, RedisNotInstalled) as problem:
                return replace(restart, error=str(problem))
        restart = replace(restart, started_at=running.started_at, new_pid=running.process.pid)
        try:
            self._wait_until_serving(running, time.monotonic() + 30)
        except RedisStartError as problem:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(running.process.pid, signal.SIGKILL)
            return replace(restart, error=str(problem))
        return restart

    def _terminate(self, timeout_s: float = 10.0) -> None:
        running, self._running = self._running, None
        if running is None:
            return
        for sig, wait_s in ((signal.SIGTERM, timeout_s), (signal.SIGKILL, 5.0)):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(running.process.pid, sig)
            try:
                running.process.wait(wait_s)
                break
            except subprocess.TimeoutExpired:
                continue
