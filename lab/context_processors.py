"""What every template may ask: is the person looking an instructor? (Set by RoleMiddleware.) And the lab's
limits, so a form's ``max`` and ``maxlength`` are the ones the server checks."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction, sync_to_async
from django.conf import settings
from django.http import HttpRequest

from lab.engine import limits as lab_limits


def people(request: HttpRequest) -> dict[str, Any]:
    return {"is_instructor": bool(getattr(request, "is_instructor", False))}


def limits(request: HttpRequest) -> dict[str, Any]:
    return {"limits": lab_limits}


class RoleMiddleware:
    """Reads the person's role once per request, where the database may be used (async views' templates
    render in an event loop, where it may not). Sync and async: under daphne a sync-only middleware
    holds a thread for the rest of the request (lab.request_size); here the read is a short hop to a
    thread, and none at all for a request with no session (the API's, with a bearer token)."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Callable[[HttpRequest], Any]) -> None:
        self.get_response = get_response
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> Any:
        if self.is_async:
            return self._acall(request)
        request.is_instructor = _is_instructor(request)  # type: ignore[attr-defined]
        return self.get_response(request)

    async def _acall(self, request: HttpRequest) -> Any:
        logged_in = settings.SESSION_COOKIE_NAME in request.COOKIES
        is_instructor = await sync_to_async(_is_instructor)(request) if logged_in else False
        request.is_instructor = is_instructor  # type: ignore[attr-defined]
        return await self.get_response(request)  # type: ignore[misc]


def _is_instructor(request: HttpRequest) -> bool:
    from lab.access import is_instructor

    return is_instructor(request.user)
