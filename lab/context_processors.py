"""What every template may ask: is the person looking an instructor? (Set by RoleMiddleware.) And the lab's
limits, so a form's ``max`` and ``maxlength`` are the ones the server checks."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from django.utils.deprecation import MiddlewareMixin

from lab.engine import limits as lab_limits


def people(request: HttpRequest) -> dict[str, Any]:
    return {"is_instructor": bool(getattr(request, "is_instructor", False))}


def limits(request: HttpRequest) -> dict[str, Any]:
    return {"limits": lab_limits}


class RoleMiddleware(MiddlewareMixin):
    """Reads the person's role once per request, where the database may be used (async views' templates
    render in an event loop, where it may not). Sync and async: under daphne the read is a short hop to
    a thread, not the whole request held on asgiref's one thread for sync code (lab.request_size)."""

    def process_request(self, request: HttpRequest) -> None:
        from lab.access import is_instructor

        request.is_instructor = is_instructor(request.user)  # type: ignore[attr-defined]
