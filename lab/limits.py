"""How many labs one person, and the whole server, may have: one check, on every path that makes a lab.

Every lab runs while the server does (``make run`` starts them all), so each one costs the class's
server CPU and memory: a student who opens scenario after scenario, or a demo's copies handed to a
class, must not stall the server for everyone. ``lab.labs.create_lab`` is the one way a ``Lab`` row is
made (the home page's form, the API, ``manage.py createlab``, opening a scenario, starting an exercise,
a demo's copies, the demo lab), and it calls :func:`take_a_place` in the transaction that inserts it.

- ``LAB_MAX_LABS_PER_USER`` (10): a student's labs, whatever made them (the form, an exercise, a
  scenario, a demo's copy, an instructor making one for them).
- ``LAB_MAX_LABS_PER_INSTRUCTOR`` (20): an instructor's (or staff member's) own labs, their demos
  included; higher, as an instructor prepares a demo per lesson and tries exercises and scenarios first.
- ``LAB_MAX_LIVE_LABS`` (40): the server's labs, everyone's together.

Two requests at once cannot both take the last place: the lock taken first is held until the
transaction commits, so the counts read after it stay true until the new row is in.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import connections, transaction

from lab.access import is_instructor
from lab.engine.errors import PolicyViolation
from lab.models import Lab

# Any constant will do: it names "making labs" among PostgreSQL's advisory locks.
_ADVISORY_LOCK_KEY = 0x6B61666B61_6C6162  # "kafka" "lab"


@dataclass(frozen=True, slots=True, kw_only=True)
class Limits:
    per_student: int
    per_instructor: int
    live: int

    def per_person(self, *, instructor: bool) -> int:
        return self.per_instructor if instructor else self.per_student


def current() -> Limits:
    return Limits(
        per_student=int(settings.LAB_MAX_LABS_PER_USER),
        per_instructor=int(settings.LAB_MAX_LABS_PER_INSTRUCTOR),
        live=int(settings.LAB_MAX_LIVE_LABS),
    )


def _labs(n: int) -> str:
    return f"{n} lab" if n == 1 else f"{n} labs"


class LabLimitReached(PolicyViolation):
    """A lab refused by a limit: ``message`` for the API and the command line, ``tell(user)`` for a page,
    ``reason`` after a name in a list of who got no lab."""

    @property
    def reason(self) -> str:
        return self.message

    def tell(self, user: Any) -> str:
        return self.message


class TooManyLabs(LabLimitReached):
    """The owner has as many labs as their role allows."""

    def __init__(self, *, owner: str, has: int, most: int, instructor: bool) -> None:
        self.owner, self.has, self.most, self.instructor = owner, has, most, instructor
        self.setting = "LAB_MAX_LABS_PER_INSTRUCTOR" if instructor else "LAB_MAX_LABS_PER_USER"
        self.role = "an instructor" if instructor else "a student"
        super().__init__(
            f"{owner} has {_labs(has)} already, the most {self.role} may have ({self.setting}); delete one first."
        )

    @property
    def reason(self) -> str:
        return f"{_labs(self.has)} already, the most {self.role} may have"

    def tell(self, user: Any) -> str:
        if user.get_username() != self.owner:
            return self.message
        return (
            f"You have {_labs(self.has)} already, the most {self.role} may have: "
            "delete one you no longer need (Your labs, on the home page) first."
        )


class ServerFull(LabLimitReached):
    """The server has as many labs as it runs."""

    def __init__(self, *, labs: int) -> None:
        self.labs = labs
        super().__init__(
            f"The class server is full ({_labs(labs)} running, the most it takes: LAB_MAX_LIVE_LABS); "
            "ask your instructor."
        )

    @property
    def reason(self) -> str:
        return f"the class server is full ({_labs(self.labs)} running)"

    def tell(self, user: Any) -> str:
        if not is_instructor(user):
            return self.message
        return (
            f"The class server is full ({_labs(self.labs)} running, the most it takes): delete labs nobody "
            "uses (Class progress lists every student's), or raise LAB_MAX_LIVE_LABS if this machine has room."
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Standing:
    """Where a person and the server stand, for the home page."""

    has: int
    most: int
    server_labs: int
    server_most: int

    @property
    def server_full(self) -> bool:
        return self.server_labs >= self.server_most


def standing(user: Any) -> Standing:
    limits = current()
    return Standing(
        has=Lab.objects.filter(owner=user).count(),
        most=limits.per_person(instructor=is_instructor(user)),
        server_labs=Lab.objects.count(),
        server_most=limits.live,
    )


def take_a_place(owner: Any, using: str = "default") -> None:
    """Refuse a new lab for ``owner`` if they, or the server, have as many as allowed.

    Call it inside the ``transaction.atomic()`` that then inserts the lab: the lock it takes first
    makes every other maker wait until that transaction ends.
    """
    if not transaction.get_connection(using).in_atomic_block:
        raise RuntimeError("take_a_place must run inside the transaction that makes the lab")
    one_maker_at_a_time(using)
    limits = current()
    instructor = is_instructor(owner)
    most = limits.per_person(instructor=instructor)
    # The person's own limit first: it is the one they can do something about.
    has = Lab.objects.using(using).filter(owner=owner).count()
    if has >= most:
        raise TooManyLabs(owner=owner.get_username(), has=has, most=most, instructor=instructor)
    labs = Lab.objects.using(using).count()
    if labs >= limits.live:
        raise ServerFull(labs=labs)


def one_maker_at_a_time(using: str = "default") -> None:
    """Make every other lab maker wait until this transaction ends (the lab's ports take it too)."""
    connection = connections[using]
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # Held until the transaction ends; a second maker waits here, then counts what the first made.
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_ADVISORY_LOCK_KEY])
        elif connection.vendor == "sqlite":
            # SQLite has one writer at a time, and a write takes the lock for the rest of the transaction
            # (a transaction begun IMMEDIATE, as lab.settings has it, holds it from BEGIN already).
            table = connection.ops.quote_name(Lab._meta.db_table)
            cursor.execute(f"UPDATE {table} SET id = id WHERE 0")
        else:
            raise ImproperlyConfigured(f"the lab runs on SQLite or PostgreSQL, not {connection.vendor}")
