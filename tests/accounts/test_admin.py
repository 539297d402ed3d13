"""Roles in the Django admin: set on the user's own page, listed with the users."""

from __future__ import annotations

import pytest
from django.test import Client

from lab.accounts.models import ApiToken, Role, role_of
from tests.labhelpers import make_user

pytestmark = pytest.mark.django_db


def _admin() -> Client:
    staff = make_user("root")
    staff.is_staff = staff.is_superuser = True  # type: ignore[attr-defined]
    staff.save()  # type: ignore[attr-defined]
    client = Client()
    client.force_login(staff)  # type: ignore[arg-type]
    return client


def test_an_administrator_makes_a_student_an_instructor_on_the_users_page(db: None) -> None:
    client = _admin()
    ada = make_user("ada")
    page = client.get(f"/admin/auth/user/{ada.pk}/change/")  # type: ignore[attr-defined]
    assert page.status_code == 200
    form = page.context["adminform"].form
    data = {k: v for k, v in form.initial.items() if v is not None and not isinstance(v, list | tuple)}
    data.update(
        {
            "username": "ada",
            "date_joined_0": "2025-01-01",
            "date_joined_1": "00:00:00",
            "profile-TOTAL_FORMS": "1",
            "profile-INITIAL_FORMS": "0",
            "profile-MIN_NUM_FORMS": "0",
            "profile-MAX_NUM_FORMS": "1",
            "profile-0-role": Role.INSTRUCTOR,
            "profile-0-user": str(ada.pk),  # type: ignore[attr-defined]
            "_save": "Save",
        }
    )
    data.pop("password", None)
    saved = client.post(f"/admin/auth/user/{ada.pk}/change/", data)  # type: ignore[attr-defined]
    assert saved.status_code == 302, saved.content.decode()[:3000]
    assert role_of(ada) == Role.INSTRUCTOR
    listing = client.get("/admin/auth/user/").content.decode()
    assert "instructor" in listing


def test_tokens_are_listed_and_revoked_in_the_admin_but_not_made_there(db: None) -> None:
    client = _admin()
    token, secret = ApiToken.issue(make_user("ada"), "laptop")
    assert client.get("/admin/accounts/apitoken/add/").status_code == 403
    listing = client.get("/admin/accounts/apitoken/").content.decode()
    assert token.prefix in listing
    assert secret not in listing
    client.post("/admin/accounts/apitoken/", {"action": "revoke_tokens", "_selected_action": [str(token.pk)]})
    assert ApiToken.authenticate(secret) is None
