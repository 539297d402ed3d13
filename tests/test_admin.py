"""The admin's page of labs (lab/admin.py): labs are listed and edited there, never made there."""

from __future__ import annotations

import pytest
from django.test import Client

from lab.models import Lab
from tests.labhelpers import make_lab, make_user

pytestmark = pytest.mark.django_db


def test_staff_list_labs_but_make_them_where_the_limits_are_checked() -> None:
    staff = make_user("root")
    staff.is_staff = staff.is_superuser = True  # type: ignore[attr-defined]
    staff.save()  # type: ignore[attr-defined]
    make_lab(make_user("ada"), "Ada's")
    client = Client()
    client.force_login(staff)  # type: ignore[arg-type]
    listing = client.get("/admin/lab/lab/")
    assert listing.status_code == 200
    assert "Ada&#x27;s" in listing.content.decode()
    assert "/admin/lab/lab/add/" not in listing.content.decode()
    assert client.get("/admin/lab/lab/add/").status_code == 403
    made = client.post("/admin/lab/lab/add/", {"name": "Sneaked in", "slug": "sneaked", "owner": staff.pk})  # type: ignore[attr-defined]
    assert made.status_code == 403
    assert not Lab.objects.filter(slug="sneaked").exists()
