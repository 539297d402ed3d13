"""A ZooKeeper server the lab starts and stops itself, and a probe for any server.

``make run`` and the test suite use the same code: :class:`ManagedZooKeeper`
runs Debian's ZooKeeper 3.8 (``apt-get install -y zookeeper``) as a child
process with a generated ``zoo.cfg`` on a free loopback port. Its tickTime is
short (200 ms) and its session-timeout bounds are explicit, so a lab can give
a broker a ZooKeeper session of one to a few seconds and watch it expire.

The child never outlives us: it runs in its own session (Ctrl-C in our
terminal does not reach it, we stop it in order), ``stop()`` ends its whole
process group, an ``atexit`` hook stops it on a normal exit, and on Linux the
kernel sends it SIGTERM if we die, even by SIGKILL (``PR_SET_PDEATHSIG``).
That last guard needs start() on the main thread (the death signal follows the
starting *thread*); from another thread the server runs without it.

A server that dies on its own (``kill -9``, a JVM crash) is not left a zombie: a
supervisor thread waits on it, so its exit is collected at once, and starts it again
on the same port (every client and proxy of the labs knows that address), after a
backoff that doubles with each exit that comes soon after a start (0.5 s, 1 s, 2 s ...
at most 30 s). Its data directory is kept, so the znodes and the sessions come back.

``LAB_ZOOKEEPER=host:port,...`` points the lab at an existing ensemble
instead; :func:`zookeeper_hosts` then starts nothing.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from lab.managed_server import (
    RESTART_BACKOFF_S,
    STABLE_S,
    ManagedServer,
)

JAVA_DIR = Path("/usr/share/java")
MAIN_CLASS = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
INSTALL_HINT = "apt-get install -y zookeeper"
ENV_VAR = "LAB_ZOOKEEPER"

# Four-letter words the status page and tests use; all read-only.
FOUR_LETTER_WORDS = "ruok,srvr,stat,mntr,conf,cons,dump,wchs"

# ZooKeeper's server jar pulls its own dependencies through its manifest's
# Class-Path (Debian writes absolute paths there). We add what it leaves out:
# the jute jar on distributions that don't list it, and a log4j binding for
# slf4j so the server logs to a file instead of warning on our terminal.
_OPTIONAL_JARS = ("zookeeper-jute.jar", "slf4j-log4j12.jar", "log4j-1.2.jar")


log = logging.getLogger(__name__)


class ZooKeeperNotInstalled(RuntimeError):
    """Java or ZooKeeper's jars are missing; the message says what to install."""


class ZooKeeperStartError(RuntimeError):
    """The server did not come up; the message carries the tail of its log."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ZooKeeperInstall:
    """Where the Java runtime and ZooKeeper's jars are."""

    java: str
    classpath: tuple[str, ...]


def find_install(java_dir: Path = JAVA_DIR, java: str | None = None) -> ZooKeeperInstall:
    """Locate java and ZooKeeper's jars, or raise :class:`ZooKeeperNotInstalled`."""
    server_jar = java_dir / "zookeeper.jar"
    if not server_jar.is_file():
        raise ZooKeeperNotInstalled(
            f"ZooKeeper is not installed: {server_jar} is missing. "
            f"Install Debian's package with `{INSTALL_HINT}` (it brings Java too), "
            f"or point the lab at a running server with {ENV_VAR}=host:port."
        )
    java_path = java if java is not None else shutil.which("java")
    if java_path is None or not os.access(java_path, os.X_OK):
        raise ZooKeeperNotInstalled(
            f"Java is not installed (no `java` {'at ' + java if java else 'on PATH'}). "
            f"Install it with `{INSTALL_HINT}` (it depends on default-jre) "
            f"or `apt-get install -y default-jre-headless`."
        )
    jars = [str(server_jar)]
    jars += [str(java_dir / name) for name in _OPTIONAL_JARS if (java_dir / name).is_file()]
    return ZooKeeperInstall(java=java_path, classpath=tuple(jars))


def four_letter_word(address: str, word: str, timeout_s: float = 1.0) -> str:
    """Send a four-letter word (``ruok``, ``srvr``...) to one ``host:port``; return the answer."""
    host, _, port = address.rpartition(":")
    chunks: list[bytes] = []
    with socket.create_connection((host or "127.0.0.1", int(port)), timeout=timeout_s) as sock:
        sock.sendall(word.encode("ascii"))
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks).decode("utf-8", errors="replace")


class ManagedZooKeeper(ManagedServer):
    """One standalone ZooKeeper server, a child of this process.

    Everything lives under ``base_dir``: ``zoo.cfg``, ``conf/log4j.properties``,
    ``data/`` (snapshots and transaction logs) and ``zookeeper.log``. With
    ``fresh=True`` the data of a previous run is removed first.
    """

    name = "ZooKeeper"
    start_error = ZooKeeperStartError
    not_installed = ZooKeeperNotInstalled
    relaunch_wait_s = 60.0

    def __init__(
        self,
        base_dir: Path,
        *,
        port: int | None = None,
        tick_time_ms: int = 200,
        min_session_timeout_ms: int = 400,
        max_session_timeout_ms: int = 60_000,
        fresh: bool = False,
        java_dir: Path = JAVA_DIR,
        java: str | None = None,
        restart: bool = True,
        restart_backoff_s: tuple[float, float] = RESTART_BACKOFF_S,
        stable_s: float = STABLE_S,
        report: Callable[[str], None] | None = None,
    ) -> None:
        if not 0 < min_session_timeout_ms <= max_session_timeout_ms:
            raise ValueError(
                f"need 0 < min_session_timeout_ms <= max_session_timeout_ms, "
                f"got {min_session_timeout_ms} and {max_session_timeout_ms}"
            )
        super().__init__(
            base_dir,
            port=port,
            restart=restart,
            restart_backoff_s=restart_backoff_s,
            stable_s=stable_s,
            report=report,
        )
        self.tick_time_ms = tick_time_ms
        self.min_session_timeout_ms = min_session_timeout_ms
        self.max_session_timeout_ms = max_session_timeout_ms
        self._fresh = fresh
        self._java_dir = java_dir
        self._java = java

    # -- paths ---------------------------------------------------------------

    @property
    def config_path(self) -> Path:
        return self.base_dir / "zoo.cfg"

    @property
    def data_dir(self) -> Path:
        return self.base_dir / "data"

    @property
    def log_path(self) -> Path:
        return self.base_dir / "zookeeper.log"

    @property
    def _logs(self) -> tuple[Path, ...]:
        # stdout/stderr (JVM crashes, slf4j warnings) go to a file beside the log, not our terminal.
        return (self.log_path, self.base_dir / "zookeeper.out")

    @property
    def hosts(self) -> str:
        """``127.0.0.1:<port>`` of the running server (raises if it is not running)."""
        return self.address

    # -- what ManagedServer asks ---------------------------------------------

    def _prepare(self) -> None:
        super()._prepare()
        if self._fresh and self.data_dir.exists():
            shutil.rmtree(self.data_dir)
        self.data_dir.mkdir(parents=True, exist_ok=True)

    def _install(self) -> ZooKeeperInstall:
        return find_install(self._java_dir, self._java)

    def _probe(self, address: str) -> str:
        # srvr answers "not currently serving requests" until the server is up.
        if "Mode:" in four_letter_word(address, "srvr", timeout_s=1.0):
            return ""
        return "the server is not serving requests yet"

    def _write_config(self, port: int) -> None:
        conf_dir = self.base_dir / "conf"
        conf_dir.mkdir(parents=True, exist_ok=True)
        self.config_path.write_text(
            "# Written by lab/zookeeper_server.py on every start; edits are lost.\n"
            f"tickTime={self.tick_time_ms}\n"
            f"minSessionTimeout={self.min_session_timeout_ms}\n"
            f"maxSessionTimeout={self.max_session_timeout_ms}\n"
            f"dataDir={self.data_dir}\n"
            f"clientPort={port}\n"
            "clientPortAddress=127.0.0.1\n"
            "maxClientCnxns=0\n"
            "admin.enableServer=false\n"
            f"4lw.commands.whitelist={FOUR_LETTER_WORDS}\n"
            "autopurge.snapRetainCount=3\n"
            "autopurge.purgeInterval=1\n"
        )
        (conf_dir / "log4j.properties").write_text(
            "log4j.rootLogger=INFO, FILE\n"
            "log4j.appender.FILE=org.apache.log4j.RollingFileAppender\n"
            f"log4j.appender.FILE.File={self.log_path}\n"
            "log4j.appender.FILE.MaxFileSize=10MB\n"
            "log4j.appender.FILE.MaxBackupIndex=2\n"
            "log4j.appender.FILE.layout=org.apache.log4j.PatternLayout\n"
            "log4j.appender.FILE.layout.ConversionPattern=%d{ISO8601} %-5p [%t:%C{1}@%L] %m%n\n"
        )

    def _command(self, install: ZooKeeperInstall, port: int) -> list[str]:
        conf_dir = self.base_dir / "conf"
        classpath = os.pathsep.join((str(conf_dir), *install.classpath))
        return [
            install.java,
            "-Xms32m",
            "-Xmx256m",
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",
            "-Djava.awt.headless=true",
            f"-Dlog4j.configuration=file:{conf_dir / 'log4j.properties'}",
            f"-Dzookeeper.log.dir={self.base_dir}",
            "-Dzookeeper.jmx.log4j.disable=true",
            "-cp",
            classpath,
            MAIN_CLASS,
            str(self.config_path),
        ]


def split_hosts(hosts: str) -> tuple[list[str], str]:
    """``"a:1,b:2/chroot"`` -> ``(["a:1", "b:2"], "/chroot")``, as kazoo reads a hosts string."""
    servers, slash, chroot = hosts.strip().partition("/")
    addresses = [part.strip() for part in servers.split(",") if part.strip()]
    return [a if ":" in a else f"{a}:2181" for a in addresses], (slash + chroot if slash else "")


@dataclass(frozen=True, slots=True, kw_only=True)
class ZooKeeperStatus:
    """What the home page shows about ZooKeeper."""

    hosts: str
    answered: bool
    address: str | None = None
    version: str | None = None
    mode: str | None = None
    latency_ms: float | None = None
    stats: dict[str, str] = field(default_factory=dict)
    error: str | None = None

    def as_dict(self) -> dict[str, object]:
        return {
            "hosts": self.hosts,
            "answered": self.answered,
            "address": self.address,
            "version": self.version,
            "mode": self.mode,
            "latency_ms": self.latency_ms,
            "stats": dict(self.stats),
            "error": self.error,
        }


def zookeeper_status(hosts: str, timeout_s: float = 1.0) -> ZooKeeperStatus:
    """Ask each server in ``hosts`` for ``srvr``; report the first that answers."""
    addresses, _chroot = split_hosts(hosts)
    if not addresses:
        return ZooKeeperStatus(hosts=hosts, answered=False, error="no ZooKeeper address configured")
    errors = []
    for address in addresses:
        started = time.perf_counter()
        try:
            answer = four_letter_word(address, "srvr", timeout_s=timeout_s)
        except (OSError, ValueError) as problem:
            errors.append(f"{address}: {problem}")
            continue
        latency_ms = round((time.perf_counter() - started) * 1000, 2)
        stats = {}
        for line in answer.splitlines():
            key, colon, value = line.partition(":")
            if colon:
                stats[key.strip()] = value.strip()
        # "3.8.0-<git sha>, built on ..." (Debian's build leaves "${mvngit.commit.id}" for the sha)
        found = re.match(r"\d+(?:\.\d+)+", stats.get("Zookeeper version", ""))
        version = found.group(0) if found else None
        refusal = None if stats else answer.strip() or "empty answer to srvr"
        return ZooKeeperStatus(
            hosts=hosts,
            answered=True,
            address=address,
            version=version,
            mode=stats.get("Mode"),
            latency_ms=latency_ms,
            stats=stats,
            error=refusal,
        )
    return ZooKeeperStatus(hosts=hosts, answered=False, error="; ".join(errors))


_process_server: ManagedZooKeeper | None = None
_process_lock = threading.Lock()


def zookeeper_hosts(base_dir: Path | None = None) -> str:
    """The ZooKeeper this process should use.

    ``LAB_ZOOKEEPER`` when set (nothing is started); otherwise this process's
    managed server, started on the first call under ``base_dir`` (default
    ``<LAB_DATA_DIR>/zookeeper``) and stopped at exit. Call it first from the
    main thread.
    """
    configured = os.environ.get(ENV_VAR, "").strip()
    if configured:
        return configured
    global _process_server
    with _process_lock:
        if _process_server is None:
            if base_dir is None:
                base_dir = default_data_dir() / "zookeeper"
            _process_server = ManagedZooKeeper(base_dir)
        return _process_server.start()


def default_data_dir() -> Path:
    """``LAB_DATA_DIR``, or ``var/`` at the top of the checkout."""
    configured = os.environ.get("LAB_DATA_DIR", "").strip()
    return Path(configured) if configured else Path(__file__).resolve().parent.parent / "var"
