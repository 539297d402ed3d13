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

import atexit
import contextlib
import ctypes
import logging
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import TracebackType

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

_PR_SET_PDEATHSIG = 1

RESTART_BACKOFF_S = (0.5, 30.0)  # the first wait before starting a dead server again, and the longest
STABLE_S = 60.0  # a server that served this long before it died starts again after the first wait

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


def free_port(host: str = "127.0.0.1") -> int:
    """A port nobody listens on right now (the caller must cope with losing a race for it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


def four_letter_word(address: str, word: str, timeout_s: float = 1.0) -> str:
    """Send a four-letter word (``ruok``, ``srvr``...) to one ``host:port``; return the answer."""
    host, _, port = address.rpartition(":")
    chunks: list[bytes] = []
    with socket.create_connection((host or "127.0.0.1", int(port)), timeout=timeout_s) as sock:
        sock.sendall(word.encode("ascii"))
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks).decode("utf-8", errors="replace")


def _death_signal_setter(*, thread_outlives_child: bool = False) -> Callable[[], None] | None:
    """What the child runs between fork and exec so the kernel ends it when we die.

    Linux only, and only from the main thread or from a thread that outlives the child (the
    supervisor): PR_SET_PDEATHSIG fires when the *thread* that forked the child exits, and a
    worker thread may exit long before the process. prctl is looked up here, in the parent:
    the child must not dlopen between fork and exec.
    """
    on_main = threading.current_thread() is threading.main_thread()
    if sys.platform != "linux" or not (on_main or thread_outlives_child):
        return None
    prctl = ctypes.CDLL(None, use_errno=True).prctl
    parent = os.getpid()

    def die_with_parent() -> None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        # The parent may have died before prctl took effect; then nobody would tell us.
        if os.getppid() != parent:
            os._exit(1)

    return die_with_parent


@dataclass(frozen=True, slots=True, kw_only=True)
class _Running:
    process: subprocess.Popen[bytes]
    port: int
    started_at: float  # time.monotonic()


def describe_exit(status: int) -> str:
    """A Popen return code in words: "was killed by SIGKILL", "exited with status 1"."""
    if status < 0:
        try:
            return f"was killed by {signal.Signals(-status).name}"
        except ValueError:
            return f"was killed by signal {-status}"
    return f"exited with status {status}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Restart:
    """One exit of the managed server that nobody asked for, and what the supervisor did about it."""

    pid: int
    status: int  # Popen's return code: negative for the signal that killed it
    reaped_at: float  # time.monotonic() when its exit was collected (it is no zombie from then on)
    delay_s: float  # the backoff waited before starting it again
    started_at: float | None = None  # when the new server was launched
    new_pid: int | None = None
    error: str = ""  # why the new server did not serve, if it did not

    @property
    def how(self) -> str:
        return describe_exit(self.status)


class ManagedZooKeeper:
    """One standalone ZooKeeper server, a child of this process.

    Everything lives under ``base_dir``: ``zoo.cfg``, ``conf/log4j.properties``,
    ``data/`` (snapshots and transaction logs) and ``zookeeper.log``. With
    ``fresh=True`` the data of a previous run is removed first.
    """

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
        self.base_dir = Path(base_dir)
        self.tick_time_ms = tick_time_ms
        self.min_session_timeout_ms = min_session_timeout_ms
        self.max_session_timeout_ms = max_session_timeout_ms
        self._requested_port = port
        self._fresh = fresh
        self._java_dir = java_dir
        self._java = java
        if not 0 < restart_backoff_s[0] <= restart_backoff_s[1]:
            raise ValueError(f"need 0 < first <= longest restart backoff, got {restart_backoff_s}")
        self._running: _Running | None = None
        self._log_offsets: dict[Path, int] = {}
        self._lock = threading.Lock()
        self._restart = restart
        self._backoff = restart_backoff_s
        self._stable_s = stable_s
        self._report = report or (lambda text: log.warning("%s", text))
        self._stopping = threading.Event()
        self._supervisor: threading.Thread | None = None
        self._restarts: deque[Restart] = deque(maxlen=50)

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
    def _out_path(self) -> Path:
        return self.base_dir / "zookeeper.out"

    # -- state ---------------------------------------------------------------

    @property
    def hosts(self) -> str:
        """``127.0.0.1:<port>`` of the running server (raises if it is not running)."""
        if self._running is None:
            raise RuntimeError("ZooKeeper is not running: call start() first")
        return f"127.0.0.1:{self._running.port}"

    @property
    def pid(self) -> int | None:
        """The java process id (also its process-group id), or None when stopped."""
        return self._running.process.pid if self._running else None

    @property
    def running(self) -> bool:
        return self._running is not None and self._running.process.poll() is None

    @property
    def restarts(self) -> tuple[Restart, ...]:
        """The server's unasked-for exits and restarts, oldest first (the last 50)."""
        with self._lock:
            return tuple(self._restarts)

    # -- lifecycle -----------------------------------------------------------

    def start(self, timeout_s: float = 30.0) -> str:
        """Start the server and wait until it serves; return its ``host:port``."""
        with self._lock:
            if self._running is not None:
                return self.hosts
            self._stopping.clear()
            install = find_install(self._java_dir, self._java)
            if self._fresh and self.data_dir.exists():
                shutil.rmtree(self.data_dir)
            self.data_dir.mkdir(parents=True, exist_ok=True)
            deadline = time.monotonic() + timeout_s
            # A free port can be taken between our probe and java's bind; try a few.
            attempts = 1 if self._requested_port else 3
            for attempt in range(attempts):
                port = self._requested_port or free_port()
                running = self._launch(install, port)
                try:
                    self._wait_until_serving(running, deadline)
                except ZooKeeperStartError:
                    lost_race = "Address already in use" in self._log_tail()
                    self._terminate()
                    if lost_race and attempt + 1 < attempts:
                        continue
                    raise
                break
            atexit.register(self.stop)
            self._supervisor = threading.Thread(
                target=self._supervise, name="zookeeper-supervisor", daemon=True
            )
            self._supervisor.start()
            return self.hosts

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop the server and everything in its process group; safe to call twice."""
        self._stopping.set()  # first, so the supervisor does not start it again
        with self._lock:
            self._terminate(timeout_s)
            supervisor, self._supervisor = self._supervisor, None
        if supervisor is not None and supervisor is not threading.current_thread():
            supervisor.join(timeout_s)
        atexit.unregister(self.stop)

    def __enter__(self) -> ManagedZooKeeper:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- internals -----------------------------------------------------------

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

    def _launch(self, install: ZooKeeperInstall, port: int, *, supervisor: bool = False) -> _Running:
        self._write_config(port)
        conf_dir = self.base_dir / "conf"
        classpath = os.pathsep.join((str(conf_dir), *install.classpath))
        command = [
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
        # Logs are appended across runs; an error report shows this run's lines only.
        self._log_offsets = {
            path: path.stat().st_size for path in (self.log_path, self._out_path) if path.exists()
        }
        # stdout/stderr (JVM crashes, slf4j warnings) go to a file beside the log, not our terminal.
        with self._out_path.open("ab") as out:
            process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=self.base_dir,
                start_new_session=True,  # our Ctrl-C does not reach it; we stop it in order
                preexec_fn=_death_signal_setter(thread_outlives_child=supervisor),
            )
        self._running = _Running(process=process, port=port, started_at=time.monotonic())
        return self._running

    def _wait_until_serving(self, running: _Running, deadline: float) -> None:
        process, address = running.process, f"127.0.0.1:{running.port}"
        last_error = "no answer yet"
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise ZooKeeperStartError(
                    f"ZooKeeper exited with status {process.returncode} before serving on {address}.\n"
                    f"{self._log_tail()}"
                )
            try:
                # srvr answers "not currently serving requests" until the server is up.
                if "Mode:" in four_letter_word(address, "srvr", timeout_s=1.0):
                    return
                last_error = "the server is not serving requests yet"
            except OSError as error:
                last_error = str(error)
            time.sleep(0.05)
        raise ZooKeeperStartError(
            f"ZooKeeper did not answer on {address} in time ({last_error}).\n{self._log_tail()}"
        )

    def _log_tail(self, lines: int = 30) -> str:
        """The last lines the current run wrote to its log and to stdout/stderr."""
        parts = []
        for path in (self.log_path, self._out_path):
            with contextlib.suppress(OSError), path.open("rb") as file:
                file.seek(self._log_offsets.get(path, 0))
                text = file.read().decode("utf-8", errors="replace").splitlines()[-lines:]
                if text:
                    parts.append(f"--- last lines of {path} ---\n" + "\n".join(text))
        return "\n".join(parts) or f"(nothing written to the logs under {self.base_dir})"

    def _supervise(self) -> None:
        """Wait on the server (collecting its exit, so it is never a zombie) and, with ``restart``,
        start it again after a backoff when it dies on its own. Ends when stop() is called."""
        delay = self._backoff[0]
        while True:
            running = self._running
            if running is None or self._stopping.is_set():
                return
            status = running.process.wait()
            reaped_at = time.monotonic()
            if self._stopping.is_set() or self._running is not running:
                return  # stopped on purpose
            if not self._restart:
                self._report(f"ZooKeeper (pid {running.process.pid}) {describe_exit(status)}")
                return
            if reaped_at - running.started_at >= self._stable_s:
                delay = self._backoff[0]
            self._report(
                f"ZooKeeper (pid {running.process.pid}) {describe_exit(status)}; "
                f"starting it again in {delay:g} s on 127.0.0.1:{running.port}"
            )
            restart = Restart(pid=running.process.pid, status=status, reaped_at=reaped_at, delay_s=delay)
            if self._stopping.wait(delay):
                return
            restart = self._relaunch(running, restart)
            with self._lock:
                self._restarts.append(restart)
            if restart.error:
                self._report(f"ZooKeeper did not start again: {restart.error.splitlines()[0]}")
            else:
                self._report(f"ZooKeeper serves again on 127.0.0.1:{running.port} (pid {restart.new_pid})")
            delay = min(delay * 2, self._backoff[1])

    def _relaunch(self, dead: _Running, restart: Restart) -> Restart:
        """Start the server again on the port it had; what happened, as ``restart`` filled in."""
        with self._lock:
            if self._stopping.is_set() or self._running is not dead:
                return restart
            try:
                running = self._launch(find_install(self._java_dir, self._java), dead.port, supervisor=True)
            except (OSError, ZooKeeperNotInstalled) as problem:
                return replace(restart, error=str(problem))
        restart = replace(restart, started_at=running.started_at, new_pid=running.process.pid)
        try:
            self._wait_until_serving(running, time.monotonic() + 60)
        except ZooKeeperStartError as problem:
            # Not serving: end it, and let the next turn of the loop collect it and try again.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(running.process.pid, signal.SIGKILL)
            return replace(restart, error=str(problem))
        return restart

    def _terminate(self, timeout_s: float = 10.0) -> None:
        running, self._running = self._running, None
        if running is None:
            return
        process = running.process
        for sig, wait_s in ((signal.SIGTERM, timeout_s), (signal.SIGKILL, 5.0)):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, sig)
            try:
                process.wait(wait_s)
                break
            except subprocess.TimeoutExpired:
                continue


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
