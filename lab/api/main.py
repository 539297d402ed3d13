"""The API's root: /api/, its OpenAPI document (/api/openapi.json) and interactive docs (/api/docs).

Every operation needs a bearer token (``Authorization: Bearer klab_...``); the document and the docs
page do not (they hold no data, and tools fetch them without a session). The docs page is Swagger UI
from the files django-ninja ships (``ninja`` is an installed app), served by the lab itself: it works
without internet access.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from lab.accounts.models import TOKEN_PREFIX, role_of
from lab.api import acls, control, errors, groups, labs, records, scenarios, topics, transactions, users
from lab.api.auth import TokenAuth
from lab.api.openapi import LabApi
from lab.api.schemas import MeOut

api = LabApi(
    title="Kafka Lab API",
    version="1",
    description=(
        "Drive Kafka Lab's clusters from scripts: labs, topics, ACLs, records, consumer groups, faults, the clock, "
        "the journal, and scenarios. Authenticate with an API token from /account/tokens/: "
        "`Authorization: Bearer klab_...`. Errors are JSON `{error, message}` with Kafka's error names."
    ),
    auth=TokenAuth(),
    urls_namespace="api",
)
errors.install(api)


@api.get("/me", response={200: MeOut, **errors.ERRORS}, tags=["who"], summary="Who the token belongs to")
def me(request: HttpRequest) -> Any:
    user = request.auth  # type: ignore[attr-defined]
    header = request.headers.get("Authorization", "")
    secret = header.split(" ", 1)[1].strip() if " " in header else ""
    return {"username": user.get_username(), "role": role_of(user), "token": secret[: len(TOKEN_PREFIX) + 6]}


for module in (labs, topics, acls, records, groups, transactions, users, control, scenarios):
    api.add_router("/", module.router)
