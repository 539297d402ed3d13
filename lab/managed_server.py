"""A server the lab runs as a child of its own (ZooKeeper, Redis): started on a loopback port, watched,
started again when it dies, stopped with the lab.

The child runs in its own session (our Ctrl-C does not reach it; we stop it in order), is stopped by
``atexit``, ended by the kernel if we die (``PR_SET_PDEATHSIG``), and reaped by a supervisor thread the
moment it exits, so it is never a zombie; unless stopping, the supervisor starts it again on the same
port (every client knows that address) after a backoff that doubles while it keeps dying and starts
from the first again once a run has lasted ``stable_s``. ``ManagedServer`` is that life; a subclass
says how to launch its server, how to tell it serves, and where its logs are.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from types import TracebackType
from typing import Any, ClassVar, Self

RESTART_BACKOFF_S = (0.5, 30.0)  # the first wait before a restart, and the longest
STABLE_S = 60.0  # a run this long resets the backoff
_PR_SET_PDEATHSIG = 1

log = logging.getLogger(__name__)


def free_port(host: str = "127.0.0.1") -> int:
    """A port nobody listens on right now (the caller must cope with losing a race for it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


def death_signal_setter(*, thread_outlives_child: bool = False) -> Callable[[], None] | None:
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


def describe_exit(status: int) -> str:
    """A Popen return code in words: "was killed by SIGKILL", "exited with status 1"."""
    if status < 0:
        try:
            return f"was killed by {signal.Signals(-status).name}"
        except ValueError:
            return f"was killed by signal {-status}"
    return f"exited with status {status}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Running:
    process: subprocess.Popen[bytes]
    port: int
    started_at: float  # time.monotonic()


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


class ManagedServer:
    """One server, a child of this process, with everything under ``base_dir``."""

    name: ClassVar[str]  # for people: "ZooKeeper"
    start_error: ClassVar[type[Exception]]  # it did not serve (the message has its log's tail)
    not_installed: ClassVar[type[Exception]]
    relaunch_wait_s: ClassVar[float] = 30.0  # how long a restarted server has to serve

    def __init__(
        self,
        base_dir: Path,
        *,
        port: int | None = None,
        restart: bool = True,
        restart_backoff_s: tuple[float, float] = RESTART_BACKOFF_S,
        stable_s: float = STABLE_S,
        report: Callable[[str], None] | None = None,
    ) -> None:
        if not 0 < restart_backoff_s[0] <= restart_backoff_s[1]:
            raise ValueError(f"need 0 < first <= longest restart backoff, got {restart_backoff_s}")
        self.base_dir = Path(base_dir)
        self._requested_port = port
        self._restart = restart
        self._backoff = restart_backoff_s
        self._stable_s = stable_s
        self._report = report or (lambda text: log.warning("%s", text))
        self._running: Running | None = None
        self._log_offsets: dict[Path, int] = {}
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._supervisor: threading.Thread | None = None
        self._restarts: deque[Restart] = deque(maxlen=50)

    # -- what a subclass says ------------------------------------------------

    def _prepare(self) -> None:
        """Before a first start (under the lock): make its directories."""
        self.base_dir.mkdir(parents=True, exist_ok=True)

    def _install(self) -> Any:
        """Find what runs the server (raises ``not_installed``), for ``_command``: at each launch."""
        raise NotImplementedError

    def _write_config(self, port: int) -> None:
        raise NotImplementedError

    def _command(self, install: Any, port: int) -> list[str]:
        raise NotImplementedError

    def _probe(self, address: str) -> str:
        """ "" once the server at ``address`` serves, else why not yet (OSError: not listening yet)."""
        raise NotImplementedError

    @property
    def _logs(self) -> tuple[Path, ...]:
        """The files a run writes to; its stdout and stderr go to the last one."""
        raise NotImplementedError

    # -- state ---------------------------------------------------------------

    @property
    def address(self) -> str:
        """``127.0.0.1:<port>`` of the running server (raises if it is not running)."""
        if self._running is None:
            raise RuntimeError(f"{self.name} is not running: call start() first")
        return f"127.0.0.1:{self._running.port}"

    @property
    def pid(self) -> int | None:
        """The server's process id (also its process-group id), or None when stopped."""
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
                return self.address
            self._stopping.clear()
            install = self._install()
            self._prepare()
            deadline = time.monotonic() + timeout_s
            # A free port can be taken between our probe and the server's bind; try a few.
            attempts = 1 if self._requested_port else 3
            for attempt in range(attempts):
                running = self._launch(install, self._requested_port or free_port())
                try:
                    self._wait_until_serving(running, deadline)
                except self.start_error:
                    lost_race = "Address already in use" in self._log_tail()
                    self._terminate()
                    if lost_race and attempt + 1 < attempts:
                        continue
                    raise
                break
            atexit.register(self.stop)
            self._supervisor = threading.Thread(
                target=self._supervise, name=f"{self.name.lower()}-supervisor", daemon=True
            )
            self._supervisor.start()
            return self.address

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop the server and everything in its process group; safe to call twice."""
        self._stopping.set()  # first, so the supervisor does not start it again
        with self._lock:
            self._terminate(timeout_s)
            supervisor, self._supervisor = self._supervisor, None
        if supervisor is not None and supervisor is not threading.current_thread():
            supervisor.join(timeout_s)
        atexit.unregister(self.stop)

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # -- internals -----------------------------------------------------------

    def _launch(self, install: Any, port: int, *, supervisor: bool = False) -> Running:
        self._write_config(port)
        # Logs are appended across runs; an error report shows this run's lines only.
        self._log_offsets = {path: path.stat().st_size for path in self._logs if path.exists()}
        with self._logs[-1].open("ab") as out:
            process = subprocess.Popen(
                self._command(install, port),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=self.base_dir,
                start_new_session=True,
                preexec_fn=death_signal_setter(thread_outlives_child=supervisor),
            )
        self._running = Running(process=process, port=port, started_at=time.monotonic())
        return self._running

    def _wait_until_serving(self, running: Running, deadline: float) -> None:
        process, address = running.process, f"127.0.0.1:{running.port}"
        last_error = "no answer yet"
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise self.start_error(
                    f"{self.name} exited with status {process.returncode} before serving on {address}.\n"
                    f"{self._log_tail()}"
                )
            try:
                last_error = self._probe(address)
                if not last_error:
                    return
            except OSError as error:
                last_error = str(error)
            time.sleep(0.05)
        raise self.start_error(
            f"{self.name} did not answer on {address} in time ({last_error}).\n{self._log_tail()}"
        )

    def _log_tail(self, lines: int = 30) -> str:
        """The last lines the current run wrote to its logs."""
        parts = []
        for path in self._logs:
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
                self._report(f"{self.name} (pid {running.process.pid}) {describe_exit(status)}")
                return
            if reaped_at - running.started_at >= self._stable_s:
                delay = self._backoff[0]
            self._report(
                f"{self.name} (pid {running.process.pid}) {describe_exit(status)}; "
                f"starting it again in {delay:g} s on 127.0.0.1:{running.port}"
            )
            restart = Restart(pid=running.process.pid, status=status, reaped_at=reaped_at, delay_s=delay)
            if self._stopping.wait(delay):
                return
            restart = self._relaunch(running, restart)
            with self._lock:
                self._restarts.append(restart)
            if restart.error:
                self._report(f"{self.name} did not start again: {restart.error.splitlines()[0]}")
            else:
                self._report(f"{self.name} serves again on 127.0.0.1:{running.port} (pid {restart.new_pid})")
            delay = min(delay * 2, self._backoff[1])

    def _relaunch(self, dead: Running, restart: Restart) -> Restart:
        """Start the server again on the port it had; what happened, as ``restart`` filled in."""
        with self._lock:
            if self._stopping.is_set() or self._running is not dead:
                return restart
            try:
                running = self._launch(self._install(), dead.port, supervisor=True)
            except (OSError, self.not_installed) as problem:
                return replace(restart, error=str(problem))
        restart = replace(restart, started_at=running.started_at, new_pid=running.process.pid)
        try:
            self._wait_until_serving(running, time.monotonic() + self.relaunch_wait_s)
        except self.start_error as problem:
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
