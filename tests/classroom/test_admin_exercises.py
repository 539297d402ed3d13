"""Instructors manage exercises in the Django admin: edit, add, hide; a broken one is refused with the reason."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from lab.accounts.models import Role, set_role
from lab.classroom import content
from lab.classroom.models import ExerciseDefinition
from tests.scenarios.helpers import alias_bomb

SHIPPED = Path(__file__).resolve().parents[2] / "fixtures" / "exercises" / "4-failover.yaml"
pytestmark = pytest.mark.django_db


@pytest.fixture(params=["administrator", "instructor"])
def admin_client(request: pytest.FixtureRequest) -> Client:
    """An administrator, or an instructor (not staff: the admin lets instructors in for exercises)."""
    if request.param == "administrator":
        user = get_user_model().objects.create_superuser("boss", password="pw-for-tests")
    else:
        user = get_user_model().objects.create_user("prof", password="pw-for-tests")
        set_role(user, Role.INSTRUCTOR)
    client = Client()
    client.force_login(user)
    return client


def test_instructors_log_in_to_the_admin_and_see_only_the_exercises(db: None) -> None:
    prof = get_user_model().objects.create_user("prof", password="pw-for-tests")
    set_role(prof, Role.INSTRUCTOR)
    client = Client()
    login = client.post("/admin/login/?next=/admin/", {"username": "prof", "password": "pw-for-tests"})
    assert login.status_code == 302
    index = client.get("/admin/").content.decode()
    assert "Exercise definitions" in index
    for hidden in ("Users", "Labs", "Demo viewers", "Exercise progresss", "Api tokens"):
        assert hidden not in index, hidden
    for refused in (
        "/admin/auth/user/",
        "/admin/lab/lab/",
        "/admin/classroom/demo/",
        "/admin/accounts/apitoken/",
    ):
        assert client.get(refused).status_code == 403, refused
    # A student is not let in, even with the right password.
    get_user_model().objects.create_user("ada", password="pw-for-tests")
    student = Client()
    student.post("/admin/login/?next=/admin/", {"username": "ada", "password": "pw-for-tests"})
    assert student.get("/admin/").status_code == 302


def test_an_admin_row_replaces_a_shipped_exercise_and_can_hide_it(admin_client: Client) -> None:
    source = SHIPPED.read_text().replace("title: Leader failover", "title: Leader failover, our way")
    response = admin_client.post(
        "/admin/classroom/exercisedefinition/add/", {"slug": "4-failover", "source": source, "enabled": "on"}
    )
    assert response.status_code == 302
    assert content.exercise("4-failover").title == "Leader failover, our way"
    ExerciseDefinition.objects.filter(slug="4-failover").update(enabled=False)
    content.definitions_changed()
    assert content.exercise("4-failover") is None
    assert len(content.exercises()) == len(list(SHIPPED.parent.glob("*.yaml"))) - 1  # every other one


def test_a_broken_exercise_is_refused_with_what_is_wrong(admin_client: Client) -> None:
    response = admin_client.post(
        "/admin/classroom/exercisedefinition/add/",
        {
            "slug": "broken",
            "source": "title: Broken\ninstructions: x\nsetup: {steps: [{kill: one}]}\nchecks: []\n",
            "enabled": "on",
        },
    )
    assert response.status_code == 200
    assert "&#x27;broker&#x27; must be an integer, not &#x27;one&#x27;" in response.content.decode()
    assert not ExerciseDefinition.objects.exists()


def test_the_copy_action_brings_the_shipped_exercises_in_for_editing(admin_client: Client) -> None:
    response = admin_client.post(
        "/admin/classroom/exercisedefinition/",
        {"action": "copy_shipped", "_selected_action": []},
        follow=True,
    )
    assert response.status_code == 200
    assert ExerciseDefinition.objects.count() == len(list(SHIPPED.parent.glob("*.yaml")))


def test_an_alias_bomb_is_refused_with_a_short_reason_and_not_saved(admin_client: Client) -> None:
    bomb = alias_bomb(6).split("steps:\n", 1)[1]
    source = (
        "title: Bomb\ninstructions: x\nsetup:\n  steps:\n"
        + "".join("  " + line + "\n" for line in bomb.splitlines())
        + "checks:\n  - description: a topic\n    all: [{topic_exists: t}]\n"
    )
    response = admin_client.post(
        "/admin/classroom/exercisedefinition/add/", {"slug": "bomb", "source": source, "enabled": "on"}
    )
    assert response.status_code == 200
    errors = re.findall(r'<ul class="errorlist[^"]*"[^>]*>(.*?)</ul>', response.content.decode(), re.S)
    assert errors, "the form names what is wrong"
    assert len("".join(errors)) < 600
    assert "exercise bomb line 7" in "".join(errors)
    assert not ExerciseDefinition.objects.exists()
