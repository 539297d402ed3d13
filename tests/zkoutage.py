"""Killing the managed ZooKeeper in a test, and holding it down for exactly as long as the test needs."""

from __future__ import annotations

import os
import signal
import threading

from lab.zookeeper_server import ManagedZooKeeper


class HeldRestart:
    """A ``report`` hook for ManagedZooKeeper that keeps its supervisor from starting the server again
    until ``release()``: the supervisor says what it will do, then waits here before its backoff."""

    def __init__(self) -> None:
        self.said: list[str] = []
        self._go = threading.Event()

    def __call__(self, text: str) -> None:
        self.said.append(text)
        if "starting it again" in text:
            self._go.wait(120)

    def release(self) -> None:
        self._go.set()


def kill(server: ManagedZooKeeper) -> int:
    """SIGKILL the server's java process, as `kill -9` would; its pid."""
    pid = server.pid
    assert pid is not None, "ZooKeeper is not running"
    os.kill(pid, signal.SIGKILL)
    return pid


class KillableZooKeeper:
    """A managed ZooKeeper of a test's own, to kill (``kill()``) and let come back (``back()``)."""

    def __init__(self, server: ManagedZooKeeper, held: HeldRestart) -> None:
        self.server = server
        self.held = held
        self.hosts = server.hosts

    def kill(self) -> int:
        return kill(self.server)

    def back(self, timeout_s: float = 90.0) -> None:
        """Let the supervisor start it again, and wait until it serves."""
        from tests.processes import wait_until

        restarts = len(self.server.restarts)
        self.held.release()
        assert wait_until(lambda: len(self.server.restarts) > restarts, timeout_s), (
            "ZooKeeper did not come back"
        )
        assert self.server.restarts[-1].error == "", self.server.restarts[-1].error
