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

import logging
import os
import shutil
import socket
from collections.abc import Callable
from pathlib import Path

from lab.managed_server import RESTART_BACKOFF_S, STABLE_S, ManagedServer

ENV_VAR = "LAB_REDIS"
INSTALL_HINT = "apt-get install -y redis-server"

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


class ManagedRedis(ManagedServer):
    """One Redis server, a child of this process, with everything under ``base_dir``."""

    name = "Redis"
    start_error = RedisStartError
    not_installed = RedisNotInstalled

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
        super().__init__(
            base_dir,
            port=port,
            restart=restart,
            restart_backoff_s=restart_backoff_s,
            stable_s=stable_s,
            report=report,
        )
        self._binary = binary

    @property
    def config_path(self) -> Path:
        return self.base_dir / "redis.conf"

    @property
    def log_path(self) -> Path:
        return self.base_dir / "redis.log"

    @property
    def _logs(self) -> tuple[Path, ...]:
        return (self.log_path,)

    @property
    def url(self) -> str:
        return redis_url(self.address)

    def start(self, timeout_s: float = 30.0) -> str:
        """Start the server and wait until it answers PING; return its ``redis://`` URL."""
        super().start(timeout_s)
        return self.url

    def _install(self) -> str:
        return find_redis(self._binary)

    def _probe(self, address: str) -> str:
        return "" if ping(address, timeout_s=0.5) else "no PONG yet"

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

    def _command(self, install: str, port: int) -> list[str]:
        return [install, str(self.config_path)]
