"""Friendly error pages (``handler400`` ... ``handler500`` in lab/urls.py).

With DEBUG off (always, for a class: lab.settings) a person sees what happened in words and where to
go next, never a traceback or the list of URLs. An htmx request gets the same sentence as a toast,
since htmx swaps a 4xx answer into the control's target. A 403 comes here even with DEBUG on.
"""

from __future__ import annotations

import logging

from django.core.exceptions import DisallowedHost
from django.http import HttpRequest, HttpResponse
from django.template.loader import render_to_string
from django.urls import Resolver404


def _message(exception: BaseException | None) -> str:
    """The sentence a view raised with, if it raised one (a resolver's 404 carries its URL table)."""
    if exception is None or isinstance(exception, Resolver404) or not exception.args:
        return ""
    first = exception.args[0]
    return first if isinstance(first, str) else ""


def _answer(request: HttpRequest, template: str, status: int, text: str, **context: object) -> HttpResponse:
    if request.headers.get("HX-Request"):
        html = render_to_string("lab/_toast.html", {"ok": False, "text": text})
    else:
        html = render_to_string(template, {"request_path": request.path, **context}, request=request)
    return HttpResponse(html, status=status)


def bad_request(request: HttpRequest, exception: BaseException | None = None) -> HttpResponse:
    if isinstance(exception, DisallowedHost):
        # Rendering with the request would ask for the host again (and raise): render without it.
        host = request.META.get("HTTP_HOST", "")[:100]
        html = render_to_string("400.html", {"unknown_host": host})
        return HttpResponse(html, status=400)
    return _answer(request, "400.html", 400, "The lab could not understand that request.")


def permission_denied(request: HttpRequest, exception: BaseException | None = None) -> HttpResponse:
    message = _message(exception)
    return _answer(request, "403.html", 403, message or "Not allowed.", message=message)


def page_not_found(request: HttpRequest, exception: BaseException | None = None) -> HttpResponse:
    message = _message(exception)
    return _answer(request, "404.html", 404, message or "Not found.", message=message)


def server_error(request: HttpRequest) -> HttpResponse:
    # No request context: whatever failed (the database, a context processor) must not fail again here.
    return HttpResponse(render_to_string("500.html"), status=500)


class WithoutTraceback(logging.Filter):
    """A request for a host the lab does not serve is the visitor's mistake, not the lab's: one line
    in the console (Django's message names the host), no traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.exc_info = None
        record.exc_text = None
        return True
