"""``make run WORKERS=N``: N lab workers (``python -m lab.worker``) as children of ``lab.serve``.

Each worker runs in its own session (Ctrl-C in the terminal reaches ``lab.serve``, which stops them in
order), dies with us (``PR_SET_PDEATHSIG``), is reaped the moment it exits by a thread that waits on
it, and is started again under the same name after a backoff that doubles while it keeps dying soon
after a start (0.5 s, 1 s, ... at most 30 s). Its output goes to ``<LAB_DATA_DIR>/workers/<name>.log``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from lab.managed_server import death_signal_setter, describe_exit

BACKOFF_S = (0.5, 30.0)
STABLE_S = 60.0


class WorkerPool:
    def __init__(
        self,
        count: int,
        log_dir: Path,
        *,
        report: Callable[[str], None] = print,
        backoff_s: tuple[float, float] = BACKOFF_S,
        env: dict[str, str] | None = None,
    ) -> None:
        self.names = [str(n) for n in range(1, count + 1)]
        self.log_dir = Path(log_dir)
        self._report = report
        self._backoff = backoff_s
        self._env = env
        self._processes: dict[str, subprocess.Popen[bytes]] = {}
        self._lock = threading.Lock()
        self._launching = threading.Lock()
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        self.restarts: list[tuple[str, int]] = []  # (worker, the exit status that made it restart)

    def pids(self) -> dict[str, int]:
        with self._lock:
            return {name: p.pid for name, p in self._processes.items() if p.poll() is None}

    def start(self) -> None:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        for name in self.names:
            self._launch(name, supervisor=False)
            thread = threading.Thread(
                target=self._supervise, args=(name,), name=f"worker-{name}-supervisor", daemon=True
            )
            thread.start()
            self._threads.append(thread)

    def stop(self, timeout_s: float = 30.0) -> None:
        """SIGTERM every worker (each stops its labs), then SIGKILL what is left after ``timeout_s``."""
        self._stopping.set()
        with self._launching, self._lock:
            processes = list(self._processes.values())
        for process in processes:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        for process in processes:
            try:
                process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        for thread in self._threads:
            thread.join(5)

    def _launch(self, name: str, *, supervisor: bool) -> subprocess.Popen[bytes]:
        with (self.log_dir / f"{name}.log").open("ab") as out:
            process = subprocess.Popen(
                [sys.executable, "-m", "lab.worker", "--name", name],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=self._env,
                start_new_session=True,
                preexec_fn=death_signal_setter(thread_outlives_child=supervisor),
            )
        with self._lock:
            self._processes[name] = process
        return process

    def _supervise(self, name: str) -> None:
        delay = self._backoff[0]
        while not self._stopping.is_set():
            with self._lock:
                process = self._processes[name]
            started = time.monotonic()
            status = process.wait()
            if self._stopping.is_set():
                return
            if time.monotonic() - started >= STABLE_S:
                delay = self._backoff[0]
            self.restarts.append((name, status))
            self._report(
                f"Worker {name} (pid {process.pid}) {describe_exit(status)}; starting it again in {delay:g} s"
            )
            if self._stopping.wait(delay):
                return
            with self._launching:  # stop() snapshots the processes under it: none starts behind its back
                if self._stopping.is_set():
                    return
                self._launch(name, supervisor=True)
            delay = min(delay * 2, self._backoff[1])
