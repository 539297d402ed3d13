"""Results that arrive later, and coroutines that wait for them.

The engine has no threads and no asyncio. A controller handler that must read
a znode, then write two more, is written as an ``async def`` that awaits
``Pending`` results; a ``Task`` drives it, resuming it whenever the result it
waits for is resolved (by a scheduled event on the memory store, by kazoo's
answer drained onto the engine thread on the ZooKeeper store).
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Generator
from typing import Any, Generic, TypeVar

from lab.engine.errors import IllegalState

T = TypeVar("T")
_UNSET: Any = object()


class Pending(Generic[T]):
    """A value or an error that some later event provides. ``producer.send`` returns one too."""

    __slots__ = ("_callbacks", "_error", "_value")

    def __init__(self) -> None:
        self._value: Any = _UNSET
        self._error: BaseException | None = None
        # Made on the first callback: a producer makes a Pending per record, and most get none.
        self._callbacks: list[Callable[[Pending[T]], None]] | None = None

    @classmethod
    def resolved(cls, value: T) -> Pending[T]:
        p: Pending[T] = cls()
        p._value = value
        return p

    @classmethod
    def failed(cls, error: BaseException) -> Pending[T]:
        p: Pending[T] = cls()
        p._error = error
        return p

    def done(self) -> bool:
        return self._value is not _UNSET or self._error is not None

    def failed_with(self) -> BaseException | None:
        return self._error

    def result(self) -> T:
        if self._error is not None:
            raise self._error
        if self._value is _UNSET:
            raise IllegalState("not done yet: advance the cluster (run_for) until done() is true")
        value: T = self._value
        return value

    def exception(self) -> BaseException | None:
        if not self.done():
            raise IllegalState("not done yet")
        return self._error

    def resolve(self, value: T) -> None:
        if self.done():
            return
        self._value = value
        self._fire()

    def fail(self, error: BaseException) -> None:
        if self.done():
            return
        self._error = error
        self._fire()

    def add_done_callback(self, callback: Callable[[Pending[T]], None]) -> None:
        if self.done():
            callback(self)
        elif self._callbacks is None:
            self._callbacks = [callback]
        else:
            self._callbacks.append(callback)

    def _fire(self) -> None:
        callbacks, self._callbacks = self._callbacks, None
        for callback in callbacks or ():
            callback(self)

    def __await__(self) -> Generator[Pending[T], None, T]:
        if not self.done():
            yield self
        return self.result()

    def __repr__(self) -> str:
        if self._error is not None:
            return f"<Pending failed {self._error!r}>"
        if self._value is not _UNSET:
            return f"<Pending {self._value!r}>"
        return "<Pending>"


class Task(Generic[T]):
    """Runs a coroutine that awaits ``Pending`` values; cancelling drops it where it stands."""

    __slots__ = ("_coro", "cancelled", "name", "outcome")

    def __init__(self, coro: Coroutine[Any, Any, T], name: str = "") -> None:
        self._coro = coro
        self.outcome: Pending[T] = Pending()
        self.cancelled = False
        self.name = name

    @classmethod
    def start(cls, coro: Coroutine[Any, Any, T], name: str = "") -> Task[T]:
        task = cls(coro, name)
        task._step(None, None)
        return task

    def cancel(self) -> None:
        if not self.cancelled and not self.outcome.done():
            self.cancelled = True
            self._coro.close()

    def _step(self, value: Any, error: BaseException | None) -> None:
        if self.cancelled:
            return
        try:
            if error is None:
                waited = self._coro.send(value)
            else:
                waited = self._coro.throw(error)
        except StopIteration as stop:
            self.outcome.resolve(stop.value)
            return
        except Exception as exc:  # the task's own failure: hand it to whoever waits on it
            self.outcome.fail(exc)
            return
        if not isinstance(waited, Pending):
            self._coro.close()
            self.outcome.fail(TypeError(f"task {self.name!r} awaited {waited!r}, not a Pending"))
            return
        waited.add_done_callback(self._wake)

    def _wake(self, pending: Pending[Any]) -> None:
        err = pending.failed_with()
        if err is not None:
            self._step(None, err)
        else:
            self._step(pending.result(), None)


Job = Callable[[], Coroutine[Any, Any, Any]]


class SerialQueue:
    """Runs async jobs one at a time, in order, as Kafka's controller event thread does.

    A job's failure goes to ``on_error`` and the queue moves on. ``clear`` drops
    what waits and cancels what runs (a controller that resigns).
    """

    def __init__(self, on_error: Callable[[str, BaseException], None]) -> None:
        self._on_error = on_error
        self._queue: list[tuple[str, Job]] = []
        self._current: Task[Any] | None = None
        self._current_name = ""
        self._starting = False

    @property
    def waiting(self) -> list[str]:
        """Names of the jobs not started yet, oldest first."""
        return [name for name, _ in self._queue]

    @property
    def running(self) -> str | None:
        return self._current_name if self._current is not None else None

    def put(self, name: str, job: Job) -> None:
        self._queue.append((name, job))
        if self._current is None:
            self._next()

    def clear(self) -> None:
        self._queue.clear()
        current, self._current = self._current, None
        if current is not None:
            current.cancel()

    def _next(self) -> None:
        if self._starting:
            return  # the loop below picks the next job up; no recursion for jobs that finish at once
        self._starting = True
        try:
            while self._current is None and self._queue:
                name, job = self._queue.pop(0)
                task: Task[Any] = Task(job(), name)
                self._current, self._current_name = task, name
                task.outcome.add_done_callback(self._make_finisher(task))
                task._step(None, None)
        finally:
            self._starting = False

    def _make_finisher(self, task: Task[Any]) -> Callable[[Pending[Any]], None]:
        def finished(outcome: Pending[Any]) -> None:
            if self._current is not task:
                return
            self._current = None
            error = outcome.failed_with()
            if error is not None:
                self._on_error(task.name, error)
            self._next()

        return finished
