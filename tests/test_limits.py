"""The lab limits (lab/limits.py): per person by role, per server, and holding when requests race.

Each path that makes a lab answers a refusal in its own way; those are tested with the path (the home
page in tests/test_views.py, the API in tests/api/test_labs.py, exercises, scenarios and demo copies
in tests/classroom/test_views.py, createlab in tests/management). This module tests the rule itself,
through ``create_lab``, the one function every path calls. The race tests run on the suite's database
(SQLite in a file, WAL, as the lab runs) and, through tests/test_postgresql.py, on PostgreSQL.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from django.db import connection, connections, transaction
from pytest_django.fixtures import Settings

from lab import limits
from lab.accounts.models import Role, set_role
from lab.labs import create_lab
from lab.models import Lab
from tests.labhelpers import make_user

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def small_limits(settings: Settings) -> None:
    settings.LAB_MAX_LABS_PER_USER = 2
    settings.LAB_MAX_LABS_PER_INSTRUCTOR = 3
    settings.LAB_MAX_LIVE_LABS = 6


def _instructor(name: str = "prof") -> Any:
    user = make_user(name)
    set_role(user, Role.INSTRUCTOR)
    return user


def test_a_student_has_their_limit_and_the_next_lab_is_refused_with_nothing_made(settings: Settings) -> None:
    ada = make_user("ada")
    create_lab(ada, "One")
    create_lab(ada, "Two")
    with pytest.raises(limits.TooManyLabs) as refused:
        create_lab(ada, "Three")
    assert refused.value.name == "POLICY_VIOLATION"
    assert refused.value.message == (
        "ada has 2 labs already, the most a student may have (LAB_MAX_LABS_PER_USER); delete one first."
    )
    assert sorted(Lab.objects.values_list("name", flat=True)) == ["One", "Two"]
    assert not (Path(settings.LAB_DATA_DIR) / "labs" / "three").exists()
    # Deleting one makes room again.
    Lab.objects.get(name="One").delete()
    assert create_lab(ada, "Three").name == "Three"


def test_instructors_have_a_higher_limit_and_their_demos_count_for_them() -> None:
    prof = _instructor()
    demo = create_lab(prof, "Orders demo")
    from lab.classroom.models import Demo

    Demo.objects.create(lab=demo)
    create_lab(prof, "Prepared for Tuesday")
    create_lab(prof, "Trying a scenario")  # three: past a student's two
    with pytest.raises(limits.TooManyLabs, match="prof has 3 labs already, the most an instructor may have"):
        create_lab(prof, "Fourth")


def test_staff_count_as_instructors() -> None:
    admin = make_user("root")
    admin.is_staff = True  # type: ignore[attr-defined]
    admin.save()  # type: ignore[attr-defined]
    for n in range(3):
        create_lab(admin, f"Lab {n}")
    with pytest.raises(limits.TooManyLabs, match="LAB_MAX_LABS_PER_INSTRUCTOR"):
        create_lab(admin, "Lab 3")


def test_a_lab_an_instructor_makes_for_a_student_counts_for_the_student() -> None:
    _instructor()
    ada = make_user("ada")
    create_lab(ada, "Mine")
    create_lab(ada, "Made for ada by prof")  # create_lab(owner=ada), as the API's owner field does
    with pytest.raises(limits.TooManyLabs, match="ada has 2 labs already"):
        create_lab(ada, "One more for ada")


def test_the_server_is_full_at_its_cap_whoever_asks(settings: Settings) -> None:
    settings.LAB_MAX_LIVE_LABS = 3
    students = [make_user(n) for n in ("ada", "bob")]
    for n, who in enumerate([*students, students[0]]):
        create_lab(who, f"Lab {n}")
    with pytest.raises(limits.ServerFull) as full:
        create_lab(students[1], "One too many")
    assert full.value.name == "POLICY_VIOLATION"
    assert full.value.message == (
        "The class server is full (3 labs running, the most it takes: LAB_MAX_LIVE_LABS); ask your instructor."
    )
    with pytest.raises(limits.ServerFull):
        create_lab(_instructor(), "Not even the instructor's")
    assert Lab.objects.count() == 3


def test_a_person_at_their_own_limit_hears_about_theirs_first(settings: Settings) -> None:
    settings.LAB_MAX_LIVE_LABS = 2
    ada = make_user("ada")
    create_lab(ada, "One")
    create_lab(ada, "Two")
    with pytest.raises(limits.TooManyLabs):  # the server is full too, but ada can only fix her own
        create_lab(ada, "Three")


def test_what_each_person_is_told() -> None:
    ada, prof = make_user("ada"), _instructor()
    too_many = limits.TooManyLabs(owner="ada", has=2, most=2, instructor=False)
    assert too_many.tell(ada) == (
        "You have 2 labs already, the most a student may have: "
        "delete one you no longer need (Your labs, on the home page) first."
    )
    assert too_many.tell(prof) == too_many.message  # an instructor acting for ada hears about ada
    assert too_many.reason == "2 labs already, the most a student may have"
    full = limits.ServerFull(labs=40)
    assert full.tell(ada) == full.message
    assert "ask your instructor" in full.tell(ada)
    assert full.tell(prof).startswith("The class server is full (40 labs running, the most it takes): delete")
    assert "LAB_MAX_LIVE_LABS" in full.tell(prof)
    assert full.reason == "the class server is full (40 labs running)"


def test_standing_counts_the_persons_labs_and_the_servers() -> None:
    ada, prof = make_user("ada"), _instructor()
    create_lab(ada, "One")
    create_lab(prof, "Demo")
    assert limits.standing(ada) == limits.Standing(has=1, most=2, server_labs=2, server_most=6)
    assert limits.standing(prof).most == 3
    assert not limits.standing(ada).server_full


@pytest.mark.django_db(transaction=True)
def test_the_check_refuses_to_run_outside_the_transaction_that_makes_the_lab() -> None:
    with pytest.raises(RuntimeError, match="inside the transaction"):
        limits.take_a_place(make_user())
    with transaction.atomic():
        limits.take_a_place(make_user("bob"))


# ---------------------------------------------------------------------------- requests racing


def _slow_counts(execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any) -> Any:
    """Every COUNT answers, then waits: without the lock, all racers would count before any inserts."""
    result = execute(sql, params, many, context)
    if "COUNT(" in sql.upper():
        time.sleep(0.05)
    return result


def _race(makers: list[tuple[Any, str]]) -> list[str]:
    """Make the labs all at once, one thread (and database connection) each; what each got, in words."""
    start = threading.Barrier(len(makers))

    def attempt(owner: Any, name: str) -> str:
        try:
            with connection.execute_wrapper(_slow_counts):
                start.wait(10)
                create_lab(owner, name)
            return "made"
        except limits.LabLimitReached as refused:
            return type(refused).__name__
        finally:
            connections.close_all()

    with ThreadPoolExecutor(len(makers)) as pool:
        return list(pool.map(lambda m: attempt(*m), makers))


@pytest.mark.django_db(transaction=True)
def test_four_requests_at_once_for_the_last_place_of_a_person_make_one_lab(settings: Settings) -> None:
    settings.LAB_MAX_LABS_PER_USER = 1
    ada = make_user("ada")
    got = _race([(ada, "Same name")] * 4)
    assert sorted(got) == ["TooManyLabs"] * 3 + ["made"], got
    assert Lab.objects.filter(owner=ada).count() == 1


@pytest.mark.django_db(transaction=True)
def test_four_people_at_once_for_the_servers_last_two_places_make_two_labs(settings: Settings) -> None:
    settings.LAB_MAX_LIVE_LABS = 3
    create_lab(make_user("first"), "Already here")
    people = [make_user(n) for n in ("ada", "bob", "cy", "dee")]
    got = _race([(p, f"{p.get_username()}'s lab") for p in people])  # type: ignore[attr-defined]
    assert sorted(got) == ["ServerFull"] * 2 + ["made"] * 2, got
    assert Lab.objects.count() == 3
    assert len(set(Lab.objects.values_list("slug", flat=True))) == 3
