"""Failed logins and join-code guesses, throttled per client address and per account.

Past a limit of failures within a window, the next attempt is refused (even with the right password
or code) with how long to wait: until the oldest failure counted leaves the window. Failures are rows
in the database, so the limit holds across restarts and processes. Limits are generous for a class
on one network (students mistype) and hopeless for guessing: a join code is one of 32^6.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.utils import timezone

from lab.accounts.models import FailedAttempt


@dataclass(frozen=True, slots=True, kw_only=True)
class Limit:
    action: str
    per_address: int  # failures from one client address within the window
    per_account: int  # failures on one account within the window
    window_s: int


LOGIN = Limit(action="login", per_address=30, per_account=5, window_s=300)
JOIN = Limit(action="join", per_address=30, per_account=10, window_s=60)


def now() -> datetime:
    """The throttle's clock (tests move it)."""
    return timezone.now()


class TooManyAttempts(Exception):
    def __init__(self, retry_after_s: int) -> None:
        super().__init__(retry_after_s)
        self.retry_after_s = retry_after_s

    @property
    def message(self) -> str:
        return f"Too many failed attempts: try again in {self.retry_after_s} s."


def client_address(request: HttpRequest) -> str:
    """The client's address; behind a proxy (DJANGO_BEHIND_PROXY), the one the proxy saw, which it
    adds last to X-Forwarded-For (what comes before, the client wrote itself)."""
    if getattr(settings, "SECURE_PROXY_SSL_HEADER", None):
        forwarded = [part.strip() for part in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")]
        if forwarded[-1]:
            return forwarded[-1][:100]
    return str(request.META.get("REMOTE_ADDR", ""))[:100]


def _keys(limit: Limit, request: HttpRequest, account: str) -> list[tuple[str, int]]:
    return [
        (f"address:{client_address(request)}", limit.per_address),
        (f"account:{account.strip().lower()[:150]}", limit.per_account),
    ]


def check(limit: Limit, request: HttpRequest, account: str) -> None:
    """Raise TooManyAttempts if the address or the account is past its limit."""
    at = now()
    since = at - timedelta(seconds=limit.window_s)
    wait = 0.0
    for key, most in _keys(limit, request, account):
        recent = FailedAttempt.objects.filter(action=limit.action, key=key, at__gt=since).order_by("-at")
        times = list(recent.values_list("at", flat=True)[:most])
        if len(times) >= most:
            # Enough failures leave the window when the most-th newest one does.
            wait = max(wait, (times[most - 1] - since).total_seconds())
    if wait > 0:
        raise TooManyAttempts(max(1, math.ceil(wait)))


def failed(limit: Limit, request: HttpRequest, account: str) -> None:
    at = now()
    FailedAttempt.objects.filter(action=limit.action, at__lte=at - timedelta(seconds=limit.window_s)).delete()
    FailedAttempt.objects.bulk_create(
        FailedAttempt(action=limit.action, key=key, at=at) for key, _ in _keys(limit, request, account)
    )


def forget_account(limit: Limit, account: str) -> None:
    """After a success: the account's failures no longer count (its address's still do)."""
    FailedAttempt.objects.filter(action=limit.action, key=f"account:{account.strip().lower()[:150]}").delete()


def refused(response: HttpResponse, error: TooManyAttempts) -> HttpResponse:
    """``response`` as the answer to an attempt past the limit: 429 Too Many Requests, Retry-After."""
    response.status_code = 429
    response["Retry-After"] = str(error.retry_after_s)
    return response
