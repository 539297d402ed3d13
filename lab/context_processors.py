"""What every template may ask: is the person looking an instructor? (Set by RoleMiddleware.) And the lab's
limits, so a form's ``max`` and ``maxlength`` are the ones the server checks."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponse

from lab.engine import limits as lab_limits


def people(request: HttpRequest) -> dict[str, Any]:
    return {"is_instructor": bool(getattr(request, "is_instructor", False))}


def limits(request: HttpRequest) -> dict[str, Any]:
    return {"limits": lab_limits}


class RoleMiddleware:
    """Reads the person's role once per request, where the database may be used (async views' templates
    render in an event loop, where it may not)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        from lab.access import is_instructor

        request.is_instructor = is_instructor(request.user)  # type: ignore[attr-defined]
        return self.get_response(request)
