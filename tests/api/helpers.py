"""A script's view of the API: JSON in and out with a bearer token, through Django's test client."""

from __future__ import annotations

import json
from typing import Any

from django.test import Client

from lab.accounts.models import ApiToken


class Api:
    def __init__(self, user: Any, client: Client | None = None, *, secret: str | None = None) -> None:
        self.user = user
        self.client = client or Client()
        self.secret = secret if secret is not None else ApiToken.issue(user, "tests")[1]

    def call(self, method: str, path: str, body: Any = None, **query: Any) -> Any:
        headers = {"Authorization": f"Bearer {self.secret}"} if self.secret else {}
        if body is None and method in ("GET", "DELETE"):
            return self.client.generic(method, "/api" + path, headers=headers, QUERY_STRING=_query(query))
        data = json.dumps(body if body is not None else {})
        return self.client.generic(
            method, "/api" + path, data, content_type="application/json", headers=headers
        )

    def get(self, path: str, **query: Any) -> Any:
        return self.call("GET", path, **query)

    def post(self, path: str, body: Any = None) -> Any:
        return self.call("POST", path, body)

    def patch(self, path: str, body: Any) -> Any:
        return self.call("PATCH", path, body)

    def delete(self, path: str) -> Any:
        return self.call("DELETE", path)


def _query(query: dict[str, Any]) -> str:
    from urllib.parse import urlencode

    return urlencode({k: v for k, v in query.items() if v is not None})


def ok(response: Any, status: int = 200) -> Any:
    """The JSON of a response that must have ``status`` (the error it carried otherwise, in the assert)."""
    assert response.status_code == status, (response.status_code, response.content[:2000])
    return response.json() if response.content else None


def error(response: Any, status: int, name: str) -> dict[str, Any]:
    assert response.status_code == status, (response.status_code, response.content[:2000])
    body: dict[str, Any] = response.json()
    assert body["error"] == name, body
    assert body["message"], body
    return body
