"""What every template may ask: is the person looking an instructor? (Set by RoleMiddleware.)"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponse


def people(request: HttpRequest) -> dict[str, Any]:
    return {"is_instructor": bool(getattr(request, "is_instructor", False))}


class RoleMiddleware:
    """Reads the person's role once per request, where the database may be used (async views' templates
    render in an event loop, where it may not)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        from lab.access import is_instructor

        request.is_instructor = is_instructor(request.user)  # type: ignore[attr-defined]
        return self.get_response(request)
