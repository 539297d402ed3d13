"""Pending results, tasks that await them, and the serial queue the controller runs its events on."""

from __future__ import annotations

from typing import Any

import pytest

from lab.engine.errors import IllegalState, NotLeaderOrFollower, RequestTimedOut
from lab.engine.tasks import Pending, SerialQueue, Task

# Pending


def test_a_pending_result_resolves_once_and_keeps_its_first_value() -> None:
    p: Pending[int] = Pending()
    assert not p.done()
    p.resolve(1)
    p.resolve(2)
    p.fail(RequestTimedOut("late"))
    assert p.done()
    assert p.result() == 1
    assert p.exception() is None


def test_a_failed_pending_raises_its_error_and_ignores_later_answers() -> None:
    p: Pending[int] = Pending()
    error = NotLeaderOrFollower("broker 2 is not the leader")
    p.fail(error)
    p.resolve(5)
    p.fail(RequestTimedOut("second"))
    assert p.failed_with() is error
    assert p.exception() is error
    with pytest.raises(NotLeaderOrFollower, match="broker 2 is not the leader"):
        p.result()


def test_reading_a_result_before_it_is_done_raises_illegal_state() -> None:
    p: Pending[int] = Pending()
    with pytest.raises(IllegalState, match="not done yet"):
        p.result()
    with pytest.raises(IllegalState):
        p.exception()
    assert p.failed_with() is None


def test_resolved_and_failed_constructors_are_done_at_once() -> None:
    assert Pending.resolved("x").result() == "x"
    assert Pending.resolved(None).done()  # None is a value, not "unset"
    err = RequestTimedOut("t")
    assert Pending.failed(err).exception() is err


def test_callbacks_run_once_when_the_result_arrives_in_the_order_they_were_added() -> None:
    p: Pending[str] = Pending()
    heard: list[tuple[str, str]] = []
    p.add_done_callback(lambda q: heard.append(("first", q.result())))
    p.add_done_callback(lambda q: heard.append(("second", q.result())))
    assert heard == []
    p.resolve("v")
    p.resolve("w")
    assert heard == [("first", "v"), ("second", "v")]


def test_a_callback_added_after_the_result_runs_at_once() -> None:
    p = Pending.resolved(3)
    heard: list[int] = []
    p.add_done_callback(lambda q: heard.append(q.result()))
    assert heard == [3]


def test_callbacks_also_run_on_failure() -> None:
    p: Pending[int] = Pending()
    heard: list[BaseException | None] = []
    p.add_done_callback(lambda q: heard.append(q.failed_with()))
    err = RequestTimedOut("no answer")
    p.fail(err)
    assert heard == [err]


# Task


def test_a_task_runs_until_its_first_await_then_resumes_when_the_result_arrives() -> None:
    first: Pending[int] = Pending()
    second: Pending[int] = Pending()
    steps: list[str] = []

    async def handler() -> int:
        steps.append("start")
        a = await first
        steps.append(f"got {a}")
        b = await second
        steps.append(f"got {b}")
        return a + b

    task = Task.start(handler(), "read two znodes")
    assert steps == ["start"]
    assert not task.outcome.done()
    first.resolve(2)
    assert steps == ["start", "got 2"]
    second.resolve(5)
    assert steps == ["start", "got 2", "got 5"]
    assert task.outcome.result() == 7


def test_awaiting_a_result_that_is_already_there_does_not_suspend() -> None:
    async def handler() -> str:
        return await Pending.resolved("ready")

    assert Task.start(handler()).outcome.result() == "ready"


def test_an_error_is_raised_inside_the_coroutine_where_a_try_can_catch_it() -> None:
    answer: Pending[int] = Pending()

    async def handler() -> str:
        try:
            await answer
        except RequestTimedOut as exc:
            return f"handled {exc.name}"
        return "no error"

    task = Task.start(handler())
    answer.fail(RequestTimedOut("ZooKeeper did not answer"))
    assert task.outcome.result() == "handled REQUEST_TIMED_OUT"


def test_an_error_the_coroutine_does_not_catch_fails_the_tasks_outcome() -> None:
    answer: Pending[int] = Pending()
    reached: list[str] = []

    async def handler() -> int:
        value = await answer
        reached.append("after await")
        return value

    task = Task.start(handler())
    answer.fail(NotLeaderOrFollower("gone"))
    assert reached == []
    with pytest.raises(NotLeaderOrFollower, match="gone"):
        task.outcome.result()


def test_an_exception_raised_by_the_coroutine_itself_fails_the_outcome() -> None:
    async def handler() -> None:
        raise ValueError("bad state znode")

    task = Task.start(handler())
    assert isinstance(task.outcome.exception(), ValueError)


def test_a_task_can_await_another_tasks_outcome() -> None:
    gate: Pending[int] = Pending()

    async def inner() -> int:
        return await gate * 10

    async def outer() -> int:
        return await Task.start(inner()).outcome + 1

    task = Task.start(outer())
    gate.resolve(4)
    assert task.outcome.result() == 41


def test_a_cancelled_task_stops_where_it_stands() -> None:
    answer: Pending[int] = Pending()
    steps: list[str] = []
    cleaned: list[str] = []

    async def handler() -> None:
        try:
            await answer
            steps.append("resumed")
        finally:
            cleaned.append("finally ran")

    task = Task.start(handler())
    task.cancel()
    answer.resolve(1)
    assert steps == []
    assert cleaned == ["finally ran"]  # the coroutine was closed, not left hanging
    assert task.cancelled
    assert not task.outcome.done()


def test_cancelling_a_finished_task_changes_nothing() -> None:
    async def handler() -> int:
        return 1

    task = Task.start(handler())
    task.cancel()
    assert not task.cancelled
    assert task.outcome.result() == 1


def test_awaiting_something_that_is_not_a_pending_fails_the_task_with_a_clear_error() -> None:
    class NotPending:
        def __await__(self) -> Any:
            yield "something else"

    async def handler() -> None:
        await NotPending()

    task = Task.start(handler(), "confused")
    error = task.outcome.exception()
    assert isinstance(error, TypeError)
    assert "'confused'" in str(error)
    assert "not a Pending" in str(error)


# SerialQueue


def _queue() -> tuple[SerialQueue, list[tuple[str, BaseException]]]:
    errors: list[tuple[str, BaseException]] = []
    return SerialQueue(on_error=lambda name, exc: errors.append((name, exc))), errors


def test_the_queue_runs_one_job_at_a_time_in_the_order_they_were_put() -> None:
    q, errors = _queue()
    answers = {name: Pending[None]() for name in ("a", "b", "c")}
    log: list[str] = []

    def job(name: str) -> Any:
        async def run() -> None:
            log.append(f"{name} starts")
            await answers[name]
            log.append(f"{name} ends")

        return run

    for name in ("a", "b", "c"):
        q.put(name, job(name))
    assert log == ["a starts"]
    assert q.running == "a"
    assert q.waiting == ["b", "c"]
    answers["b"].resolve(None)  # b's answer arrives early: b has not started, nothing runs
    assert log == ["a starts"]
    answers["a"].resolve(None)
    # a ends; b starts and finds its answer already there, so it ends too; c starts.
    assert log == ["a starts", "a ends", "b starts", "b ends", "c starts"]
    answers["c"].resolve(None)
    assert log[-1] == "c ends"
    assert q.running is None
    assert q.waiting == []
    assert errors == []


def test_a_failing_job_goes_to_on_error_and_the_queue_moves_on() -> None:
    q, errors = _queue()
    answer: Pending[None] = Pending()
    log: list[str] = []

    async def failing() -> None:
        await answer
        raise NotLeaderOrFollower("the controller moved")

    async def next_job() -> None:
        log.append("next ran")

    q.put("elect leaders", failing)
    q.put("next", next_job)
    assert log == []
    answer.resolve(None)
    assert [(name, type(exc)) for name, exc in errors] == [("elect leaders", NotLeaderOrFollower)]
    assert log == ["next ran"]
    assert q.running is None


def test_clear_cancels_the_running_job_and_drops_the_waiting_ones() -> None:
    q, errors = _queue()
    answer: Pending[None] = Pending()
    log: list[str] = []

    async def running() -> None:
        await answer
        log.append("running job resumed")

    async def waiting() -> None:
        log.append("waiting job ran")

    q.put("running", running)
    q.put("waiting", waiting)
    q.clear()
    assert q.running is None
    assert q.waiting == []
    answer.resolve(None)
    assert log == []
    assert errors == []

    async def later() -> None:
        log.append("a job put after clear runs")

    q.put("later", later)
    assert log == ["a job put after clear runs"]


def test_jobs_that_finish_at_once_do_not_recurse() -> None:
    q, errors = _queue()
    done: list[int] = []

    def job(i: int) -> Any:
        async def run() -> None:
            done.append(i)

        return run

    blocker: Pending[None] = Pending()

    async def first() -> None:
        await blocker

    q.put("first", first)
    for i in range(10_000):
        q.put(f"job {i}", job(i))
    assert len(q.waiting) == 10_000
    blocker.resolve(None)  # ten thousand immediate jobs run now: a recursion would overflow the stack
    assert done == list(range(10_000))
    assert errors == []
    assert q.running is None


def test_a_job_may_put_another_job_which_runs_after_it() -> None:
    q, _ = _queue()
    log: list[str] = []

    async def child() -> None:
        log.append("child")

    async def parent() -> None:
        q.put("child", child)
        log.append("parent")

    q.put("parent", parent)
    assert log == ["parent", "child"]
