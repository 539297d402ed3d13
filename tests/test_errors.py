"""Friendly error pages: with DEBUG off (a classroom) a person reads what happened and where to go,
never Django's bare pages, a traceback or the site's list of URLs."""

from __future__ import annotations

from typing import Any

import pytest
from django.http import HttpRequest, HttpResponse
from django.test import Client
from django.urls import path
from pytest_django.fixtures import Settings

from lab import urls as lab_urls
from tests.labhelpers import make_user

pytestmark = pytest.mark.django_db


def boom(request: HttpRequest) -> HttpResponse:
    raise RuntimeError("secret internals: /srv/lab/settings.py line 12")


# This module is also the URLconf of the 500 test: the lab's URLs and a view that fails.
urlpatterns = [*lab_urls.urlpatterns, path("boom/", boom)]
handler400, handler403 = lab_urls.handler400, lab_urls.handler403
handler404, handler500 = lab_urls.handler404, lab_urls.handler500


def _friendly(response: Any, status: int) -> str:
    page = response.content.decode()
    assert response.status_code == status
    assert f'id="error-page" data-status="{status}"' in page
    assert 'href="/">Your labs</a>' in page  # a way back
    for debug in ("Traceback", "URLconf", "Request Method", "settings.py", "secret internals"):
        assert debug not in page, debug
    return page


def _logged_in(name: str = "ada") -> Client:
    client = Client()
    client.force_login(make_user(name))  # type: ignore[arg-type]
    return client


def test_a_page_that_does_not_exist_is_a_friendly_404(settings: Settings) -> None:
    settings.DEBUG = False
    page = _friendly(Client().get("/no/such/page/"), 404)
    assert "Page not found" in page
    assert "<code>/no/such/page/</code>" in page
    page = _friendly(_logged_in().get("/labs/nobodys-lab/"), 404)
    assert "No such lab." in page


def test_a_404_answers_htmx_with_a_toast(settings: Settings) -> None:
    settings.DEBUG = False
    response = _logged_in().get("/labs/nobodys-lab/", headers={"HX-Request": "true"})
    assert response.status_code == 404
    assert response.content.decode().startswith('<div class="toast bad"')
    assert "No such lab." in response.content.decode()


def test_a_student_on_an_instructor_page_gets_a_friendly_403_with_the_reason() -> None:
    page = _friendly(_logged_in().get("/classroom/"), 403)
    assert "Only instructors can do this." in page
    toast = _logged_in("grace").get("/classroom/", headers={"HX-Request": "true"})
    assert toast.status_code == 403
    assert "Only instructors can do this." in toast.content.decode()
    assert "<html" not in toast.content.decode()


def test_a_form_without_its_csrf_token_gets_a_friendly_403() -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(make_user())  # type: ignore[arg-type]
    page = _friendly(client.post("/labs/new/", {"name": "x"}), 403)
    assert "CSRF" in page
    assert "reload the page" in page


def test_an_unexpected_error_is_a_friendly_500_without_the_traceback(settings: Settings) -> None:
    settings.DEBUG = False
    settings.ROOT_URLCONF = __name__
    client = Client(raise_request_exception=False)
    page = _friendly(client.get("/boom/"), 500)
    assert "Something went wrong" in page


def test_a_host_the_lab_does_not_serve_is_named_with_how_to_allow_it(settings: Settings) -> None:
    settings.DEBUG = False
    settings.ALLOWED_HOSTS = ["127.0.0.1"]
    page = _friendly(Client().get("/", HTTP_HOST="teacher-laptop.example:8000"), 400)
    assert "does not answer to the name <code>teacher-laptop.example:8000</code>" in page
    assert "DJANGO_ALLOWED_HOSTS=teacher-laptop.example:8000" in page
