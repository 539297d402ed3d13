"""The person's role on every request (RoleMiddleware), under WSGI and under ASGI as daphne serves it."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.conf import settings
from django.contrib.sessions.backends.db import SessionStore
from django.http import HttpRequest, HttpResponse
from django.test import RequestFactory

from lab.accounts.models import Role, set_role
from lab.context_processors import RoleMiddleware
from tests.labhelpers import make_user

pytestmark = pytest.mark.django_db


def _request(user: Any | None) -> HttpRequest:
    """A request as the session and authentication middlewares leave it (with its session's cookie)."""
    from django.contrib.auth import login
    from django.contrib.auth.models import AnonymousUser

    request = RequestFactory().get("/")
    request.session = SessionStore()
    request.user = AnonymousUser()
    if user is not None:
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        request.session.save()
        request.COOKIES[settings.SESSION_COOKIE_NAME] = request.session.session_key or ""
    return request


def _seen(request: HttpRequest) -> bool:
    return bool(request.is_instructor)  # type: ignore[attr-defined]


def test_an_instructor_a_student_and_a_script_under_wsgi_and_asgi() -> None:
    teacher, student = make_user("teacher"), make_user("student")
    set_role(teacher, Role.INSTRUCTOR)

    def sync_view(request: HttpRequest) -> HttpResponse:
        return HttpResponse()

    async def async_view(request: HttpRequest) -> HttpResponse:
        return HttpResponse()

    for who, expected in ((teacher, True), (student, False), (None, False)):
        request = _request(who)
        RoleMiddleware(sync_view)(request)
        assert _seen(request) is expected
        request = _request(who)
        async_to_sync(RoleMiddleware(async_view))(request)  # type: ignore[arg-type]
        assert _seen(request) is expected
