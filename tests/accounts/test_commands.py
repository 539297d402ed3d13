"""``manage.py adduser`` and ``manage.py createtoken``."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from django.contrib.auth import authenticate, get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError

from lab.accounts.models import ApiToken, Role, role_of
from tests.labhelpers import make_user

pytestmark = pytest.mark.django_db


def _run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_adduser_with_a_generated_password_printed_once(db: None) -> None:
    out = _run("adduser", "ada", "--role", "instructor")
    assert "User ada added, role instructor." in out
    password = out.split("Password (shown once, keep it): ")[1].strip()
    assert len(password) >= 16
    user = authenticate(username="ada", password=password)
    assert user is not None
    assert role_of(user) == Role.INSTRUCTOR


def test_adduser_reads_the_password_from_a_file(tmp_path: Path) -> None:
    secret = tmp_path / "password"
    secret.write_text("correct horse battery staple\n")
    out = _run("adduser", "grace", "--password-file", str(secret))
    assert "role student" in out
    assert "Password" not in out  # never echoed
    user = authenticate(username="grace", password="correct horse battery staple")
    assert user is not None
    assert role_of(user) == Role.STUDENT


def test_adduser_refuses_bad_input_and_makes_nobody(tmp_path: Path) -> None:
    make_user("ada")
    with pytest.raises(CommandError, match="there is a user 'ada' already"):
        _run("adduser", "ada")
    weak = tmp_path / "weak"
    weak.write_text("123\n")
    with pytest.raises(CommandError, match="too short"):
        _run("adduser", "bob", "--password-file", str(weak))
    with pytest.raises(CommandError, match="cannot read"):
        _run("adduser", "bob", "--password-file", str(tmp_path / "missing"))
    with pytest.raises(CommandError, match="invalid choice"):
        _run("adduser", "bob", "--role", "admin")
    with pytest.raises(CommandError, match="Enter a valid username"):
        _run("adduser", "bad name!")
    assert list(get_user_model().objects.values_list("username", flat=True)) == ["ada"]


def test_createtoken_prints_the_secret_once_and_stores_its_hash(db: None) -> None:
    ada = make_user("ada")
    out = _run("createtoken", "ada", "failover script")
    lines = out.strip().splitlines()
    assert lines[0] == "Token 'failover script' for ada (shown once, keep it):"
    secret = lines[1]
    assert secret.startswith("klab_")
    token = ApiToken.objects.get(user=ada)
    assert token.name == "failover script"
    assert secret not in (token.digest, token.prefix)
    assert ApiToken.authenticate(secret) == ada


def test_createtoken_refuses_unknown_or_inactive_users_and_empty_names(db: None) -> None:
    with pytest.raises(CommandError, match="there is no user 'nobody'"):
        _run("createtoken", "nobody", "x")
    ada = make_user("ada")
    with pytest.raises(CommandError, match="needs a name"):
        _run("createtoken", "ada", "  ")
    ada.is_active = False  # type: ignore[attr-defined]
    ada.save()  # type: ignore[attr-defined]
    with pytest.raises(CommandError, match="inactive"):
        _run("createtoken", "ada", "x")
    assert not ApiToken.objects.exists()
