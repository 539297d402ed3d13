"""The People page: an instructor adds students, resets a password, sets a role and deactivates an
account, without the Django admin; administrators' accounts and their own are not theirs to change."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from pytest_django.fixtures import Settings

from lab import labs
from lab.accounts.models import Role, role_of, set_role
from tests.labhelpers import make_user

pytestmark = pytest.mark.django_db

User = get_user_model()


def _client(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _instructor(name: str = "prof") -> Any:
    user = make_user(name)
    set_role(user, Role.INSTRUCTOR)
    return user


def _logs_in(username: str, password: str) -> bool:
    client = Client()
    client.post("/accounts/login/", {"username": username, "password": password})
    return "_auth_user_id" in client.session


def _passwords(page: str) -> dict[str, str]:
    """The one-time passwords a page shows, by user name."""
    return dict(re.findall(r'<tr data-new="([^"]+)">.*?<input[^>]*value="([^"]+)"', page, re.S))


def test_the_instructor_make_run_creates_manages_people_from_the_account_page(settings: Settings) -> None:
    demo, _ = labs.ensure_demo_user()
    client = _client(demo)
    account = client.get("/account/").content.decode()
    assert 'href="/people/"' in account
    # Every page the account page sends an instructor to lets them in (the admin, for exercises, too).
    for link in set(re.findall(r'href="(/[^"]*)"', account)) - {"/static/lab.css"}:
        assert client.get(link).status_code == 200, link
    assert "/admin/" in account
    admin = client.get("/admin/").content.decode()
    assert "Exercise definitions" in admin
    assert "Users" not in admin  # accounts are the People page's: the admin's user form makes superusers
    assert client.get("/admin/auth/user/").status_code == 403
    page = client.get("/people/")
    assert page.status_code == 200
    assert "<h1>People</h1>" in page.content.decode()
    assert 'href="/people/"' in client.get("/").content.decode()  # in the site's menu
    student = _client(make_user("ada"))
    assert student.get("/people/").status_code == 403
    assert 'href="/people/"' not in student.get("/account/").content.decode()


def test_an_instructor_adds_a_class_and_each_password_is_shown_once() -> None:
    client = _client(_instructor())
    response = client.post("/people/add/", {"names": "ada\ngrace, alan\n\n  linus ", "role": "student"})
    assert response.status_code == 201
    assert "no-store" in response["Cache-Control"]
    page = response.content.decode()
    shown = _passwords(page)
    assert sorted(shown) == ["ada", "alan", "grace", "linus"]
    assert "shown once" in page
    assert "They log in at <code>http://testserver/accounts/login/</code>" in page
    for name, password in shown.items():
        assert len(password) >= 12
        assert _logs_in(name, password), name
        assert role_of(User.objects.get(username=name)) == Role.STUDENT
    again = client.get("/people/").content.decode()
    assert not any(password in again for password in shown.values())
    for name in shown:
        assert f'data-person="{name}"' in again


def test_an_instructor_can_add_instructors() -> None:
    client = _client(_instructor())
    shown = _passwords(client.post("/people/add/", {"names": "ta", "role": "instructor"}).content.decode())
    assert role_of(User.objects.get(username="ta")) == Role.INSTRUCTOR
    assert _logs_in("ta", shown["ta"])


@pytest.mark.parametrize(
    ("names", "role", "message"),
    [
        ("", "student", "Type at least one user name"),
        ("ada\nbad name!", "student", "bad name! is not a user name"),
        ("ada\nprof", "student", "prof already has an account"),
        ("ada\nADA", "student", "ADA is listed twice"),
        ("ada", "admin", "The role must be student or instructor"),
        ("x" * 151, "student", "is longer than 150 characters"),
    ],
)
def test_bad_input_is_named_and_adds_nobody(names: str, role: str, message: str) -> None:
    client = _client(_instructor())
    before = User.objects.count()
    response = client.post("/people/add/", {"names": names, "role": role})
    assert response.status_code == 400
    page = response.content.decode()
    assert message in page, page
    assert 'aria-invalid="true"' in page
    assert User.objects.count() == before


def test_a_password_reset_shows_the_new_one_once_and_logs_the_student_out() -> None:
    client = _client(_instructor())
    make_user("ada", "old-password-1")
    logged_in = Client()
    logged_in.post("/accounts/login/", {"username": "ada", "password": "old-password-1"})
    assert logged_in.get("/account/").status_code == 200
    response = client.post("/people/ada/password/")
    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]
    new = _passwords(response.content.decode())["ada"]
    assert not _logs_in("ada", "old-password-1")
    assert _logs_in("ada", new)
    assert logged_in.get("/account/").status_code == 302  # the old session ended with the old password


def test_roles_are_set_and_an_unknown_role_changes_nothing() -> None:
    client = _client(_instructor())
    ada = make_user("ada")
    assert client.post("/people/ada/role/", {"role": "instructor"}).status_code == 302
    assert role_of(ada) == Role.INSTRUCTOR
    assert client.post("/people/ada/role/", {"role": "student"}).status_code == 302
    assert role_of(ada) == Role.STUDENT
    refused = client.post("/people/ada/role/", {"role": "root"})
    assert refused.status_code == 400
    assert "The role must be student or instructor" in refused.content.decode()
    assert role_of(ada) == Role.STUDENT


def test_a_deactivated_account_cannot_log_in_until_reactivated() -> None:
    client = _client(_instructor())
    make_user("ada", "a-password-9")
    assert client.post("/people/ada/active/", {"active": "0"}).status_code == 302
    assert not _logs_in("ada", "a-password-9")
    page = client.get("/people/").content.decode()
    assert re.search(r'data-person="ada"[^>]*data-active="false"', page)
    assert client.post("/people/ada/active/", {"active": "1"}).status_code == 302
    assert _logs_in("ada", "a-password-9")


def test_administrators_and_the_instructor_themself_are_not_theirs_to_change() -> None:
    prof = _instructor()
    client = _client(prof)
    root = make_user("root")
    root.is_staff = root.is_superuser = True  # type: ignore[attr-defined]
    root.save()  # type: ignore[attr-defined]
    for who in ("root", "prof"):
        for action, data in (("password", {}), ("role", {"role": "student"}), ("active", {"active": "0"})):
            response = client.post(f"/people/{who}/{action}/", data)
            assert response.status_code == 403, (who, action)
    prof.refresh_from_db()
    root.refresh_from_db()
    assert prof.is_active
    assert root.is_active
    assert role_of(prof) == Role.INSTRUCTOR
    assert client.post("/people/nobody/role/", {"role": "student"}).status_code == 404
    page = client.get("/people/").content.decode()
    assert "managed in the Django admin" in page  # what the page says beside an administrator
    # A student may not touch anyone.
    student = _client(make_user("ada"))
    make_user("grace")
    assert student.post("/people/grace/password/").status_code == 403
    assert student.post("/people/add/", {"names": "mallory"}).status_code == 403


def test_everyone_changes_their_own_password_on_the_account_page() -> None:
    ada = make_user("ada", "first-password-7")
    client = _client(ada)
    assert 'href="/account/password/"' in client.get("/account/").content.decode()
    wrong = client.post(
        "/account/password/",
        {"old_password": "nope", "new_password1": "second-pass-8x", "new_password2": "second-pass-8x"},
    )
    assert wrong.status_code == 200
    assert "incorrectly" in wrong.content.decode()
    done = client.post(
        "/account/password/",
        {
            "old_password": "first-password-7",
            "new_password1": "second-pass-8x",
            "new_password2": "second-pass-8x",
        },
    )
    assert done.status_code == 302
    assert client.get("/account/").status_code == 200  # still logged in
    assert _logs_in("ada", "second-pass-8x")
