"""A body too large to read gets the lab's answer (413, with the sizes), never Django's error page."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync, iscoroutinefunction
from django.test import AsyncClient, Client
from pytest_django.fixtures import Settings

from lab.labs import live_of
from lab.models import Lab
from lab.request_size import RequestSizeMiddleware
from tests.labhelpers import make_lab, make_user

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("stop_labs")]

HUGE = "x" * 3_000_000  # over Django's 2.5 MB


@pytest.fixture
def lab(settings: Settings) -> Lab:
    settings.LAB_ZOOKEEPER = ""
    made = make_lab(make_user("ada"))
    live_of(made).ready.result(30)
    return made


def _browser(lab: Lab, page: str) -> tuple[Client, dict[str, str]]:
    """The owner's browser: the CSRF check enforced (it is where Django reads the form), the token in
    the header as htmx sends it."""
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(lab.owner)
    assert browser.get(page).status_code == 200
    return browser, {"HX-Request": "true", "X-CSRFToken": browser.cookies["csrftoken"].value}


def test_the_dashboards_produce_control_answers_with_a_toast(lab: Lab) -> None:
    browser, headers = _browser(lab, f"/labs/{lab.slug}/")
    answer = browser.post(f"/labs/{lab.slug}/act/produce/", {"topic": "orders", "key": HUGE}, headers=headers)
    assert answer.status_code == 413
    text = answer.content.decode()
    assert "INVALID_REQUEST: The request (2.9 MB) is over the 2.5 MB the lab reads" in text
    assert "its key 1000" in text


def test_any_other_form_gets_the_same_words(lab: Lab) -> None:
    browser, headers = _browser(lab, f"/labs/{lab.slug}/admin/")
    answer = browser.post(
        f"/labs/{lab.slug}/admin/create/", {"name": "big", "retention.ms": HUGE}, headers=headers
    )
    assert answer.status_code == 413
    assert "is over the 2.5 MB the lab reads" in answer.content.decode()
    plain = browser.post(
        f"/labs/{lab.slug}/admin/create/",
        {"name": "big", "retention.ms": HUGE},
        headers={"X-CSRFToken": headers["X-CSRFToken"]},
    )
    assert plain.status_code == 413
    assert "<title>Too large</title>" in plain.content.decode()


def test_the_csrf_check_still_applies(lab: Lab) -> None:
    browser, _ = _browser(lab, f"/labs/{lab.slug}/")
    answer = browser.post(f"/labs/{lab.slug}/act/produce/", {"topic": "orders", "key": HUGE})
    assert answer.status_code == 403  # no token in the header, and the form was not read


def test_under_asgi_the_same_answer_comes_without_a_thread(lab: Lab) -> None:
    # daphne runs the middleware in its loop: the check is a coroutine there, not a hop to a thread.
    browser, headers = _browser(lab, f"/labs/{lab.slug}/admin/")
    served = AsyncClient(enforce_csrf_checks=True)
    served.cookies = browser.cookies
    middleware = RequestSizeMiddleware(_async_view)
    assert iscoroutinefunction(middleware.process_view)
    answer = async_to_sync(served.post)(
        f"/labs/{lab.slug}/admin/create/", {"name": "big", "retention.ms": HUGE}, headers=headers
    )
    assert answer.status_code == 413
    assert "is over the 2.5 MB the lab reads" in answer.content.decode()


async def _async_view(request: object) -> None:
    return None
