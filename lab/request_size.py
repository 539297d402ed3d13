"""A request body larger than the lab reads (``DATA_UPLOAD_MAX_MEMORY_SIZE``) gets an answer, not a crash.

Django refuses to read such a body (``RequestDataTooBig``), and it finds out where the CSRF check
reads the form, before any view runs: the person would get Django's error page. This middleware
(placed before the CSRF middleware) looks at the declared size first. A view marked
``@reads_too_large`` goes on with an empty form and ``request.too_large`` set to the body's size,
so it can say so beside the field (the topic admin's produce form, the dashboard's controls); any
other view is answered 413 with the same words. Views exempt from CSRF read their own bodies (the
API answers 413 in JSON).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from asgiref.sync import iscoroutinefunction
from django.conf import settings
from django.http import HttpRequest, HttpResponse, QueryDict
from django.utils.datastructures import MultiValueDict
from django.utils.deprecation import MiddlewareMixin
from django.utils.html import escape

from lab.engine import limits

View = TypeVar("View", bound=Callable[..., Any])


def declared_size(request: HttpRequest) -> int:
    try:
        return int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return 0


def too_large_message(size: int) -> str:
    """Why a body was not read: its size, the most the lab reads, and what a record may hold."""
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    told = f"{size / 2**20:.1f} MB" if size else "too large"
    return (
        f"The request ({told}) is over the {limit / 2**20:.1f} MB the lab reads "
        f"(DATA_UPLOAD_MAX_MEMORY_SIZE), so none of it was used: a record's value holds at most "
        f"{limits.VALUE.max_length} characters and its key {limits.KEY.max_length}."
    )


def reads_too_large(view: View) -> View:
    """Mark a view that answers an over-large POST itself (it sees ``request.too_large``)."""
    view.reads_too_large = True  # type: ignore[attr-defined]
    return view


def too_large(request: HttpRequest) -> int:
    """The size of the body this request came with, when it was too large to read (0 otherwise)."""
    return int(getattr(request, "too_large", 0))


class RequestSizeMiddleware(MiddlewareMixin):
    """Sync and async: under daphne a sync-only middleware runs the rest of the request, the view's
    waits included, on asgiref's one thread for sync code, and every other request or websocket
    handshake that needs that thread waits for it."""

    def __init__(self, get_response: Callable[[HttpRequest], Any]) -> None:
        super().__init__(get_response)
        if iscoroutinefunction(get_response):  # no thread for a check that reads no database

            async def process_view_async(
                request: HttpRequest, view: Callable[..., Any], args: Any, kwargs: Any
            ) -> HttpResponse | None:
                return self.check(request, view)

            self.process_view = process_view_async  # type: ignore[method-assign]

    def process_view(
        self, request: HttpRequest, view: Callable[..., Any], args: Any, kwargs: Any
    ) -> HttpResponse | None:
        return self.check(request, view)

    def check(self, request: HttpRequest, view: Callable[..., Any]) -> HttpResponse | None:
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        size = declared_size(request)
        if request.method != "POST" or limit is None or size <= limit or getattr(view, "csrf_exempt", False):
            return None
        if getattr(view, "reads_too_large", False):
            # An empty form in place of the unread one: the CSRF check then reads htmx's header.
            request._post = QueryDict()  # type: ignore[attr-defined]
            request._files = MultiValueDict()  # type: ignore[attr-defined]
            request.too_large = size  # type: ignore[attr-defined]
            return None
        text = escape(too_large_message(size))
        if request.headers.get("HX-Request"):
            return HttpResponse(f'<p class="banner bad" role="alert">{text}</p>', status=413)
        return HttpResponse(f"<!doctype html><title>Too large</title><p>{text}</p>", status=413)
