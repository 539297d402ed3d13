"""A broker's door to the world: what reaches a paused broker waits until it resumes.

A paused broker is a process stopped by a long GC pause: the network still
delivers to its socket buffers and ZooKeeper still answers, but nothing runs.
Every callback into a broker goes through its gate; the gate holds them while
paused, drops them once the broker is dead, and runs them otherwise.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from lab.engine.metadata.store import (
    LinkState,
    Op,
    OpResult,
    Session,
    SessionState,
    Stat,
    Watcher,
    WatchEvent,
)
from lab.engine.tasks import Pending

T = TypeVar("T")


class GateState(enum.Enum):
    OPEN = "open"
    HELD = "held"
    CLOSED = "closed"


class Gate:
    def __init__(self) -> None:
        self.state = GateState.OPEN
        self._held: list[tuple[Callable[..., Any], tuple[Any, ...]]] = []

    def __call__(self, fn: Callable[..., Any], *args: Any) -> None:
        if self.state is GateState.OPEN:
            fn(*args)
        elif self.state is GateState.HELD:
            self._held.append((fn, args))

    def hold(self) -> None:
        if self.state is GateState.OPEN:
            self.state = GateState.HELD

    def release(self) -> None:
        """Open again and run, in order, what arrived meanwhile."""
        if self.state is not GateState.HELD:
            return
        self.state = GateState.OPEN
        while self._held and self.state is GateState.OPEN:
            fn, args = self._held.pop(0)
            fn(*args)

    def close(self) -> None:
        self.state = GateState.CLOSED
        self._held.clear()

    @property
    def backlog(self) -> int:
        return len(self._held)

    def through(self, pending: Pending[T]) -> Pending[T]:
        """The same result, delivered through the gate."""
        out: Pending[T] = Pending()

        def transfer(src: Pending[T]) -> None:
            err = src.failed_with()
            if err is not None:
                out.fail(err)
            else:
                out.resolve(src.result())

        pending.add_done_callback(lambda src: self(transfer, src))
        return out


class GatedSession:
    """A metadata session whose answers, watches and state changes pass through a gate."""

    def __init__(self, session: Session, gate: Gate) -> None:
        self.raw = session
        self._gate = gate

    @property
    def session_id(self) -> int:
        return self.raw.session_id

    @property
    def state(self) -> SessionState:
        return self.raw.state

    @property
    def link(self) -> LinkState:
        return self.raw.link

    @property
    def expires_in_ms(self) -> int | None:
        return self.raw.expires_in_ms

    def _watch(self, watch: Watcher | None) -> Watcher | None:
        if watch is None:
            return None
        gate = self._gate

        def gated(event: WatchEvent) -> None:
            gate(watch, event)

        return gated

    def create(
        self,
        path: str,
        data: bytes = b"",
        *,
        ephemeral: bool = False,
        sequential: bool = False,
        make_parents: bool = False,
    ) -> Pending[str]:
        return self._gate.through(
            self.raw.create(path, data, ephemeral=ephemeral, sequential=sequential, make_parents=make_parents)
        )

    def get(self, path: str, watch: Watcher | None = None) -> Pending[tuple[bytes, Stat]]:
        return self._gate.through(self.raw.get(path, self._watch(watch)))

    def exists(self, path: str, watch: Watcher | None = None) -> Pending[Stat | None]:
        return self._gate.through(self.raw.exists(path, self._watch(watch)))

    def get_children(self, path: str, watch: Watcher | None = None) -> Pending[list[str]]:
        return self._gate.through(self.raw.get_children(path, self._watch(watch)))

    def set(self, path: str, data: bytes, version: int = -1) -> Pending[Stat]:
        return self._gate.through(self.raw.set(path, data, version))

    def delete(self, path: str, version: int = -1, *, recursive: bool = False) -> Pending[None]:
        return self._gate.through(self.raw.delete(path, version, recursive=recursive))

    def multi(self, ops: Sequence[Op]) -> Pending[list[OpResult]]:
        return self._gate.through(self.raw.multi(ops))

    def close(self) -> None:
        self.raw.close()

    def abandon(self) -> None:
        self.raw.abandon()

    def set_link(self, link: LinkState) -> None:
        self.raw.set_link(link)
