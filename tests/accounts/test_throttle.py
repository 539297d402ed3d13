"""Failed logins and join-code guesses are throttled per client address and per account: past the limit
even the right password or code is refused, with how long to wait, until the window has passed."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone
from pytest_django.fixtures import Settings

from lab.accounts import throttle
from lab.accounts.models import Role, set_role
from lab.classroom.models import Demo, DemoViewer
from tests.labhelpers import make_lab, make_user

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("stop_labs")]

PASSWORD = "s3cret-enough"


class Clock:
    """The throttle's clock, moved by the test (the window is minutes long)."""

    def __init__(self) -> None:
        self.at = timezone.now()

    def __call__(self) -> datetime:
        return self.at

    def move(self, seconds: float) -> None:
        self.at += timedelta(seconds=seconds)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    moved = Clock()
    monkeypatch.setattr(throttle, "now", moved)
    return moved


def _login(username: str, password: str, address: str = "10.0.0.1") -> Any:
    client = Client(REMOTE_ADDR=address)
    response = client.post("/accounts/login/", {"username": username, "password": password})
    response.logged_in = "_auth_user_id" in client.session
    return response


def _wait_s(response: Any) -> int:
    found = re.search(r"Too many failed attempts: try again in (\d+) s\.", response.content.decode())
    assert found, response.content.decode()[:2000]
    return int(found.group(1))


def test_past_the_limit_the_right_password_is_refused_until_the_window_passes(clock: Clock) -> None:
    make_user("ada", PASSWORD)
    for _ in range(throttle.LOGIN.per_account):
        wrong = _login("ada", "wrong-password")
        assert wrong.status_code == 200
        assert not wrong.logged_in
        assert "That user name and password do not match" in wrong.content.decode()
        clock.move(10)
    refused = _login("ada", PASSWORD)
    assert refused.status_code == 429
    assert not refused.logged_in
    # The oldest failure counted leaves the window first: that is the wait.
    assert _wait_s(refused) == throttle.LOGIN.window_s - 10 * throttle.LOGIN.per_account
    assert int(refused["Retry-After"]) == _wait_s(refused)
    clock.move(throttle.LOGIN.window_s - 10 * throttle.LOGIN.per_account - 1)
    assert _login("ada", PASSWORD).status_code == 429
    clock.move(1)
    assert _login("ada", PASSWORD).logged_in


def test_the_account_limit_holds_across_addresses(clock: Clock) -> None:
    make_user("ada", PASSWORD)
    for n in range(throttle.LOGIN.per_account):
        assert not _login("ada", "wrong-password", address=f"10.0.1.{n}").logged_in
    refused = _login("ada", PASSWORD, address="10.0.2.1")
    assert refused.status_code == 429
    assert not refused.logged_in
    assert _login("ADA", PASSWORD, address="10.0.2.2").status_code == 429  # names differ only in case
    # Another account is not held back by ada's.
    make_user("grace", PASSWORD)
    assert _login("grace", PASSWORD, address="10.0.2.3").logged_in


def test_the_address_limit_holds_across_accounts(clock: Clock) -> None:
    make_user("ada", PASSWORD)
    for n in range(throttle.LOGIN.per_address):
        assert not _login(f"guess-{n}", "wrong-password", address="10.0.0.9").logged_in
    refused = _login("ada", PASSWORD, address="10.0.0.9")
    assert refused.status_code == 429
    assert _login("ada", PASSWORD, address="10.0.0.10").logged_in  # another machine is not held back


def test_a_successful_login_forgets_the_accounts_failures(clock: Clock) -> None:
    make_user("ada", PASSWORD)
    for _ in range(throttle.LOGIN.per_account - 1):
        _login("ada", "wrong-password", address="10.0.3.1")
    assert _login("ada", PASSWORD, address="10.0.3.2").logged_in
    for _ in range(throttle.LOGIN.per_account - 1):
        _login("ada", "wrong-password", address="10.0.3.3")
    assert _login("ada", PASSWORD, address="10.0.3.4").logged_in


def test_the_admins_login_is_throttled_too(clock: Clock) -> None:
    staff = make_user("root", PASSWORD)
    staff.is_staff = True  # type: ignore[attr-defined]
    staff.save()  # type: ignore[attr-defined]
    for _ in range(throttle.LOGIN.per_account):
        Client().post("/admin/login/", {"username": "root", "password": "wrong-password"})
    client = Client()
    refused = client.post("/admin/login/", {"username": "root", "password": PASSWORD})
    assert "_auth_user_id" not in client.session
    _wait_s(refused)


def test_behind_a_proxy_the_forwarded_address_is_the_clients(clock: Clock, settings: Settings) -> None:
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    make_user("ada", PASSWORD)
    for n in range(throttle.LOGIN.per_address):
        Client(REMOTE_ADDR="10.0.0.1", HTTP_X_FORWARDED_FOR="203.0.113.7").post(
            "/accounts/login/", {"username": f"guess-{n}", "password": "x"}
        )
    # Every client comes through the proxy's address: only the one guessing is held back.
    proxied = Client(REMOTE_ADDR="10.0.0.1", HTTP_X_FORWARDED_FOR="198.51.100.1, 203.0.113.8")
    proxied.post("/accounts/login/", {"username": "ada", "password": PASSWORD})
    assert "_auth_user_id" in proxied.session
    guesser = Client(REMOTE_ADDR="10.0.0.1", HTTP_X_FORWARDED_FOR="203.0.113.7")
    assert guesser.post("/accounts/login/", {"username": "ada", "password": PASSWORD}).status_code == 429


# ---------------------------------------------------------------------------- join codes


@pytest.fixture
def demo(settings: Settings) -> Demo:
    settings.LAB_ZOOKEEPER = ""
    prof = make_user("prof")
    set_role(prof, Role.INSTRUCTOR)
    return Demo.objects.create(lab=make_lab(prof, "Class demo"))


def _wrong_code(demo: Demo, n: int) -> str:
    code = f"ZZZZ{'ABCDEFGHJK'[n % 10]}{'ABCDEFGHJK'[n // 10 % 10]}"
    return code if code != demo.join_code else "YYYYYY"


def _student(name: str, address: str = "10.0.0.1") -> Client:
    client = Client(REMOTE_ADDR=address)
    client.force_login(make_user(name))  # type: ignore[arg-type]
    return client


def test_past_the_limit_the_right_join_code_is_refused_until_the_window_passes(
    clock: Clock, demo: Demo
) -> None:
    sam = _student("sam")
    for n in range(throttle.JOIN.per_account):
        guess = sam.post("/demos/join/", {"code": _wrong_code(demo, n)})
        assert guess.status_code == 400
        assert "No demo has the code" in guess.content.decode()
    refused = sam.post("/demos/join/", {"code": demo.join_code})
    assert refused.status_code == 429
    assert _wait_s(refused) == throttle.JOIN.window_s
    assert 'id="join-error"' in refused.content.decode()
    assert not DemoViewer.objects.filter(demo=demo).exists()
    clock.move(throttle.JOIN.window_s)
    joined = sam.post("/demos/join/", {"code": demo.join_code})
    assert joined.status_code == 302
    assert DemoViewer.objects.filter(demo=demo, user__username="sam").exists()


def test_join_guesses_are_counted_per_address_across_accounts(clock: Clock, demo: Demo) -> None:
    for n in range(throttle.JOIN.per_address):
        guesser = _student(f"guesser-{n}", address="10.0.0.66")
        guesser.post("/demos/join/", {"code": _wrong_code(demo, n)})
    late = _student("late", address="10.0.0.66")
    assert late.post("/demos/join/", {"code": demo.join_code}).status_code == 429
    elsewhere = _student("elsewhere", address="10.0.0.67")
    assert elsewhere.post("/demos/join/", {"code": demo.join_code}).status_code == 302


def test_an_empty_code_is_not_a_guess(clock: Clock, demo: Demo) -> None:
    sam = _student("sam")
    for _ in range(throttle.JOIN.per_account + 1):
        assert sam.post("/demos/join/", {"code": "  "}).status_code == 400
    assert sam.post("/demos/join/", {"code": demo.join_code}).status_code == 302
