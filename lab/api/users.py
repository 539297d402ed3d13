"""SASL users: their SCRAM credentials in ZooKeeper, which the lab's SASL listeners check (PLAIN too).

``kafka-configs.sh --alter --add-config 'SCRAM-SHA-256=[password=...]' --entity-type users``, over
HTTP: the password is salted and hashed here (4096 iterations, a fresh salt per mechanism) and only
what Kafka stores travels on and is kept; the lab's journal never sees the password.
"""

from __future__ import annotations

import asyncio
from typing import Any, Literal

from django.http import HttpRequest
from ninja import Query, Router, Schema, Status
from pydantic import Field

from lab.api import driver
from lab.api.errors import ERRORS
from lab.api.schemas import In, MessageOut, path, text, whole
from lab.engine import limits
from lab.engine.scram import MIN_ITERATIONS
from lab.runtime.commands.users import credentials, upsert_args

router = Router(tags=["users"])

Mechanism = Literal["SCRAM-SHA-256", "SCRAM-SHA-512"]
MECHANISMS: tuple[Mechanism, ...] = ("SCRAM-SHA-256", "SCRAM-SHA-512")
UserName = path(limits.USER_NAME)


class UserIn(In):
    name: text(limits.USER_NAME) = Field(description="the user's name: its principal is User:<name>")  # type: ignore[valid-type]
    password: text(limits.PASSWORD) = Field(description="never stored: only its SCRAM credentials are")  # type: ignore[valid-type]
    mechanisms: list[Mechanism] = Field(
        default_factory=lambda: list(MECHANISMS),
        min_length=1,
        max_length=2,
        description="the SCRAM mechanisms to give the user a credential for (both by default)",
    )
    iterations: int = whole(limits.SCRAM_ITERATIONS, MIN_ITERATIONS, description="Kafka's: 4096 to 16384")


class CredentialOut(Schema):
    mechanism: Mechanism
    iterations: int


class UserOut(Schema):
    user: str
    credentials: list[CredentialOut]


class UsersOut(Schema):
    users: list[UserOut]
    complete: bool = Field(description="false: ZooKeeper had not answered in time (the lab's clock paused?)")


@router.get("/labs/{slug}/users", response={200: UsersOut, **ERRORS}, summary="SASL users")
async def list_users(request: HttpRequest, slug: str) -> Any:
    """Who has SCRAM credentials (``/config/users``), by mechanism, never the secrets."""
    return await driver.read(request, slug, "users")


@router.post("/labs/{slug}/users", response={201: MessageOut, **ERRORS}, summary="Create or change a user")
async def upsert_user(request: HttpRequest, slug: str, body: UserIn) -> Any:
    """Give ``name`` a SCRAM credential for each mechanism (replacing one it had), as
    AlterUserScramCredentials does: a client can then log in over SASL_PLAINTEXT or SASL_SSL with
    SCRAM-SHA-256/512, or PLAIN, with this password."""
    made = await asyncio.to_thread(credentials, body.password, sorted(set(body.mechanisms)), body.iterations)
    said = [
        await driver.act(request, slug, "user-upsert", upsert_args(body.name, c), save=True) for c in made
    ]
    return Status(201, {"message": " ".join(s["message"] + "." for s in said)})


@router.delete("/labs/{slug}/users/{user}", response={200: MessageOut, **ERRORS}, summary="Remove a user")
async def delete_user(
    request: HttpRequest,
    slug: str,
    user: str = UserName,
    mechanism: Mechanism | None = Query(None, description="only this mechanism's credential"),  # type: ignore[arg-type]  # noqa: B008
) -> Any:
    """Remove the user's credentials (or one mechanism's): its next login fails with
    SASL_AUTHENTICATION_FAILED; a connection already logged in stays, as in Kafka. RESOURCE_NOT_FOUND
    (a 404) when it has none."""
    return await driver.act(request, slug, "user-delete", {"user": user, "mechanism": mechanism}, save=True)
