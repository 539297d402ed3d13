"""A lab nobody uses sleeps: its clock stops and its driver thread parks until someone comes back.

A lab keeps awake while a page watches it, a Kafka client is connected to its listeners, an
answer is awaited (an API call's acks), or an extension is busy (a scenario playing, an
exercise's setup). Once none of that has been true for ``sleep_after_s`` (wall seconds), the
driver parks on its condition with no timeout: no ticks, no frames, no engine steps. Anything
that needs the lab (a page, an API call, a command, a wire connection) notifies the condition, and
the lab carries on where it stopped: same records and offsets, the clock at the same virtual
millisecond. The brokers' ZooKeeper sessions stay open meanwhile (kazoo
pings them on its own threads); the lab's own client, which holds nothing, closes until needed.

``Nap`` is what the page, the API and the timeline say about it.
"""

from __future__ import annotations

from dataclasses import dataclass

SLEEP_AFTER_S = 30.0  # wall seconds with nobody using a lab before it sleeps (LAB_SLEEP_AFTER_S)


def duration_label(seconds: float) -> str:
    """A wall-clock span as a person says it: "40 s", "12 min", "2 h 5 min"."""
    whole = max(0, round(seconds))
    if whole < 60:
        return f"{whole} s"
    minutes = whole // 60
    if minutes < 60:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min" if minutes else f"{hours} h"


@dataclass(frozen=True, slots=True, kw_only=True)
class Nap:
    """One sleep of a lab: at which virtual time, from when to when (the lab's wall clock, seconds),
    and what woke it."""

    time_ms: int  # virtual time, the same when it fell asleep and when it woke
    slept_at: float
    woke_at: float | None = None  # None: still asleep
    woke_for: str = ""  # "a page opened", "an API call or a command", "a Kafka client"

    @property
    def asleep(self) -> bool:
        return self.woke_at is None

    def seconds(self, now: float) -> float:
        return (self.woke_at if self.woke_at is not None else now) - self.slept_at

    def text(self, now: float) -> str:
        """What the page, the API and the timeline say (``now`` on the same wall clock)."""
        span = duration_label(self.seconds(now))
        if self.asleep:
            return f"Asleep: nobody watched; the clock is stopped (for {span} so far)."
        return f"Slept: nobody watched; the clock was stopped for {span}. {self.woke_for[:1].upper()}{self.woke_for[1:]} woke it."
