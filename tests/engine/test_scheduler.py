"""Virtual time: events run in (time, scheduling order), and the clock only moves when told."""

from __future__ import annotations

import weakref

from lab.engine.scheduler import Scheduler


def _run_all(s: Scheduler) -> None:
    while s.step():
        pass


def test_events_run_in_time_order_whatever_order_they_were_scheduled_in() -> None:
    s = Scheduler()
    ran: list[tuple[str, int]] = []
    for name, at in (("c", 30), ("a", 10), ("d", 40), ("b", 20)):
        s.call_at(at, lambda n=name: ran.append((n, s.now_ms)))
    _run_all(s)
    assert ran == [("a", 10), ("b", 20), ("c", 30), ("d", 40)]


def test_events_due_at_the_same_time_run_in_the_order_they_were_scheduled() -> None:
    s = Scheduler()
    ran: list[int] = []
    for i in range(20):
        s.call_at(100, ran.append, i)
    _run_all(s)
    assert ran == list(range(20))


def test_an_event_scheduled_by_an_event_for_the_same_time_runs_after_those_already_waiting() -> None:
    s = Scheduler()
    ran: list[str] = []

    def first() -> None:
        ran.append("first")
        s.call_soon(ran.append, "scheduled by first")

    s.call_at(5, first)
    s.call_at(5, ran.append, "second")
    _run_all(s)
    assert ran == ["first", "second", "scheduled by first"]


def test_call_later_counts_from_now_and_passes_arguments() -> None:
    s = Scheduler()
    s.run_until(1000)
    got: list[tuple[int, str, int]] = []
    s.call_later(250, lambda a, b: got.append((s.now_ms, a, b)), "x", 2)
    _run_all(s)
    assert got == [(1250, "x", 2)]


def test_call_soon_runs_at_the_current_time_without_moving_the_clock() -> None:
    s = Scheduler()
    s.run_until(500)
    seen: list[int] = []
    s.call_soon(lambda: seen.append(s.now_ms))
    assert s.step() is True
    assert seen == [500]
    assert s.now_ms == 500


def test_a_cancelled_timer_never_runs() -> None:
    s = Scheduler()
    ran: list[str] = []
    keep = s.call_at(10, ran.append, "kept")
    dropped = s.call_at(5, ran.append, "dropped")
    other = s.call_at(20, ran.append, "also dropped")
    Scheduler.cancel(dropped)
    other.cancel()
    Scheduler.cancel(None)  # cancelling "no timer" is allowed and does nothing
    assert s.pending() == [keep]
    assert s.next_time() == 10
    _run_all(s)
    assert ran == ["kept"]
    assert s.events_run == 1


def test_a_cancelled_timer_lets_go_of_what_it_would_have_called_at_once() -> None:
    # A request's timeout is cancelled when its answer comes, but waits in the heap until a sweep:
    # it must not keep the request (and what hangs on it) alive meanwhile.
    s = Scheduler()

    class Request:
        def expire(self) -> None:
            raise AssertionError("a cancelled timer ran")

    request = Request()
    gone = weakref.ref(request)
    by_method = s.call_later(30_000, request.expire)
    by_argument = s.call_later(30_000, Request.expire, request)
    Scheduler.cancel(by_method)
    by_argument.cancel()
    del request
    assert gone() is None
    assert s.next_time() is None


def test_cancelling_from_inside_an_event_stops_a_later_one_due_at_the_same_time() -> None:
    s = Scheduler()
    ran: list[str] = []
    later = None

    def first() -> None:
        ran.append("first")
        Scheduler.cancel(later)

    s.call_at(7, first)
    later = s.call_at(7, ran.append, "later")
    _run_all(s)
    assert ran == ["first"]


def test_step_returns_false_when_nothing_is_scheduled() -> None:
    s = Scheduler()
    assert s.step() is False
    assert s.next_time() is None
    s.call_at(3, lambda: None).cancel()
    assert s.step() is False  # only a cancelled timer: nothing to run
    assert s.now_ms == 0  # and the clock did not move to it


def test_step_moves_the_clock_to_the_events_time() -> None:
    s = Scheduler()
    s.call_at(42, lambda: None)
    s.call_at(99, lambda: None)
    assert s.step() is True
    assert s.now_ms == 42
    assert s.step() is True
    assert s.now_ms == 99


def test_run_until_runs_what_is_due_and_leaves_the_rest() -> None:
    s = Scheduler()
    ran: list[int] = []
    for at in (10, 50, 100, 101, 500):
        s.call_at(at, ran.append, at)
    s.run_until(100)
    assert ran == [10, 50, 100]  # "at or before" includes 100
    assert s.now_ms == 100
    assert [t.time_ms for t in s.pending()] == [101, 500]


def test_run_until_moves_the_clock_even_with_nothing_due() -> None:
    s = Scheduler()
    s.run_until(1234)
    assert s.now_ms == 1234
    s.call_at(5000, lambda: None)
    s.run_until(2000)
    assert s.now_ms == 2000
    assert s.next_time() == 5000


def test_the_clock_never_goes_backwards() -> None:
    s = Scheduler()
    s.run_until(1000)
    s.run_until(10)
    assert s.now_ms == 1000
    s.advance_to(5)
    assert s.now_ms == 1000


def test_run_until_calls_after_step_once_per_event() -> None:
    s = Scheduler()
    for at in (1, 2, 3):
        s.call_at(at, lambda: None)
    seen: list[int] = []
    s.run_until(10, after_step=lambda: seen.append(s.now_ms))
    assert seen == [1, 2, 3]


def test_a_time_in_the_past_is_clamped_to_now() -> None:
    s = Scheduler()
    s.run_until(1000)
    ran: list[int] = []
    timer = s.call_at(200, lambda: ran.append(s.now_ms))
    s.call_later(-50, lambda: ran.append(s.now_ms))
    assert timer.time_ms == 1000
    _run_all(s)
    assert ran == [1000, 1000]
    assert s.now_ms == 1000


def test_events_scheduled_while_running_until_a_time_run_if_they_are_due_by_then() -> None:
    s = Scheduler()
    ran: list[int] = []

    def chain() -> None:
        ran.append(s.now_ms)
        s.call_later(10, chain)

    s.call_at(0, chain)
    s.run_until(45)
    assert ran == [0, 10, 20, 30, 40]
    assert s.next_time() == 50


def test_the_same_seed_gives_the_same_random_numbers() -> None:
    a, b, c = Scheduler(seed=7), Scheduler(seed=7), Scheduler(seed=8)
    draws_a = [a.rng.randrange(1_000_000) for _ in range(20)]
    draws_b = [b.rng.randrange(1_000_000) for _ in range(20)]
    draws_c = [c.rng.randrange(1_000_000) for _ in range(20)]
    assert draws_a == draws_b
    assert draws_a != draws_c


def test_each_scheduler_has_its_own_generator() -> None:
    a, b, fresh = Scheduler(seed=3), Scheduler(seed=3), Scheduler(seed=3)
    for _ in range(5):
        a.rng.random()  # drawing from one does not move the other
    assert [b.rng.random() for _ in range(3)] == [fresh.rng.random() for _ in range(3)]


def test_pending_lists_live_timers_in_run_order_with_their_labels() -> None:
    s = Scheduler()
    s.call_at(30, lambda: None, label="fetch")
    s.call_at(10, lambda: None, label="heartbeat")
    s.call_at(10, lambda: None, label="timeout").cancel()
    s.call_at(20, lambda: None, label="produce")
    assert [(t.time_ms, t.label) for t in s.pending()] == [(10, "heartbeat"), (20, "produce"), (30, "fetch")]


def test_cancelled_timers_do_not_pile_up_and_the_rest_keep_their_order() -> None:
    s = Scheduler()
    ran: list[int] = []
    for i in range(10_000):
        timeout = s.call_later(30_000, ran.append, -1)  # a request's timeout...
        s.call_later(i % 3, ran.append, i)
        s.step()
        Scheduler.cancel(timeout)  # ...answered in time
        assert len(s._heap) <= 2048 + 3
    _run_all(s)
    assert sorted(ran) == list(range(10_000))
