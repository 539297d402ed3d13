"""Bearer tokens: ``Authorization: Bearer klab_...``, checked against the stored hashes."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja.security import HttpBearer

from lab.accounts.models import ApiToken


class TokenAuth(HttpBearer):
    """The token's user, or None (ninja answers 401): unknown, revoked, or its user deactivated."""

    def authenticate(self, request: HttpRequest, token: str) -> Any | None:
        if not token or len(token) > 200:
            return None
        return ApiToken.authenticate(token.strip())
