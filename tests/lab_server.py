"""Run the real server (`python -m lab.serve`, what `make run` runs) as a child process, for tests."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from lab.managed_server import free_port

REPO = Path(__file__).resolve().parent.parent


class LabServer:
    """``python -m lab.serve`` on a free port with its own LAB_DATA_DIR; output goes to a file there."""

    def __init__(
        self,
        data_dir: Path,
        *,
        zookeeper: str | None = None,
        env: dict[str, str] | None = None,
        host: str = "127.0.0.1",
        workers: int = 0,
    ):
        self.data_dir = data_dir
        self.workers = workers  # lab worker processes (make run WORKERS=N); 0: labs run in lab.serve
        self.host = host  # what it listens on; the tests reach it on loopback either way
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.output_path = data_dir / "serve.out"
        self._env = {
            **os.environ,
            "LAB_DATA_DIR": str(data_dir),
            "PYTHONUNBUFFERED": "1",
            "DJANGO_SETTINGS_MODULE": "lab.settings",
        }
        self._env.pop("LAB_ZOOKEEPER", None)
        self._env.pop("LAB_REDIS", None)  # with workers, it starts its own Redis
        # Its labs' Kafka listeners on ports of its own, apart from other servers' on this machine.
        base = random.Random().randrange(20_000, 31_700, 50)
        self._env["LAB_WIRE_PORTS"] = f"{base}-{base + 199}"
        if zookeeper:
            self._env["LAB_ZOOKEEPER"] = zookeeper
        self._env.update(env or {})
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, timeout_s: float = 60.0) -> str:
        """Start the server and wait until ``/`` answers 200; return the base URL."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        with self.output_path.open("wb") as out:
            self.process = subprocess.Popen(
                [
                    *(sys.executable, "-m", "lab.serve", "--host", self.host, "--port", str(self.port)),
                    *("--workers", str(self.workers)),
                ],
                cwd=REPO,
                env=self._env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"lab.serve exited with {self.process.returncode} before answering:\n{self.output()}"
                )
            try:
                with urllib.request.urlopen(self.url + "/", timeout=5) as response:
                    if response.status == 200:
                        return self.url
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            time.sleep(0.1)
        self.stop(signal.SIGKILL)
        raise RuntimeError(f"lab.serve did not answer on {self.url} in {timeout_s} s:\n{self.output()}")

    def run_to_exit(self, timeout_s: float = 60.0) -> int:
        """Run a server expected to refuse to start; return its exit status."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        with self.output_path.open("wb") as out:
            completed = subprocess.run(
                [sys.executable, "-m", "lab.serve", "--host", self.host, "--port", str(self.port)],
                cwd=REPO,
                env=self._env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                timeout=timeout_s,
                check=False,
            )
        return completed.returncode

    def stop(self, sig: int = signal.SIGTERM, timeout_s: float = 30.0) -> int | None:
        """Send ``sig`` and wait for the exit status (SIGKILL after ``timeout_s``)."""
        if self.process is None:
            return None
        if self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                self.process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode

    def manage(self, *args: str) -> str:
        """Run ``manage.py`` on this server's data directory; its output."""
        done = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=REPO,
            env=self._env,
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        return done.stdout

    def output(self) -> str:
        try:
            return self.output_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""
