"""SASL users: their SCRAM credentials in ZooKeeper (``/config/users/<name>``), as kafka-configs.sh writes them.

A person gives a password on the admin panel or the API; the web side turns it into the credential
Kafka stores (``credentials``: a fresh salt, 4096 iterations, StoredKey and ServerKey) before the
command is made, so the command, the lab's journal of commands and ZooKeeper hold only that, never
the password. ``user-upsert`` takes Kafka's text form of one mechanism's credential, ``user-delete``
removes one mechanism's or every one, and ``users`` lists who has which. Each write is a request in
flight on the lab's own ZooKeeper client (``Cluster.begin_scram``), answered when ZooKeeper has it,
and kept in the lab's spec (``LabSpec.users``, the credential only: ``LiveLab._credential_changed``,
whoever wrote it, AlterUserScramCredentials too) so a reset or a memory-store lab starts with the
same users, as with its topics.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from lab.engine import limits
from lab.engine.errors import IllegalArgument, ResourceNotFound
from lab.engine.scram import MECHANISMS, MIN_ITERATIONS, ScramCredential
from lab.engine.scram_store import ScramStore
from lab.engine.tasks import Pending
from lab.runtime.actions import Act, _choice, _text, in_flight, register, register_read

if TYPE_CHECKING:
    from lab.runtime.live import LiveLab

WAIT_S = 5.0
SALT_BYTES = 32
CHOICES = tuple(MECHANISMS)


def credentials(
    password: str, mechanisms: Sequence[str] = CHOICES, iterations: int = MIN_ITERATIONS
) -> list[ScramCredential]:
    """What Kafka stores for ``password`` under each mechanism, each with a salt of its own."""
    limits.PASSWORD.check(password)
    try:
        password.encode()
    except UnicodeEncodeError:
        raise IllegalArgument("a password is text UTF-8 can write (no lone surrogate)") from None
    return [
        ScramCredential.make(m, password, secrets.token_bytes(SALT_BYTES), iterations) for m in mechanisms
    ]


def upsert_args(user: str, credential: ScramCredential) -> dict[str, str]:
    """The ``user-upsert`` command's arguments for one credential."""
    return {"user": user, "mechanism": credential.mechanism, "credential": credential.to_text()}


def _user(p: Mapping[str, Any]) -> str:
    return _text(p, "user", limits.USER_NAME)


def _mechanism(p: Mapping[str, Any], *, required: bool = True) -> str:
    if not required and not str(p.get("mechanism") or "").strip():
        return ""
    return _choice(p, "mechanism", CHOICES)


def _answer(asked: Pending[Any], what: str) -> Any:
    def answer(value: object, settled: bool) -> dict[str, Any]:
        if not asked.done():  # the lab's clock is paused: the write waits for it
            return {"message": f"{what}: asked for; ZooKeeper answers when the lab's clock runs again"}
        return {"message": what}

    return answer


def _upsert(p: Mapping[str, Any]) -> Act:
    user = _user(p)
    mechanism = _mechanism(p)
    text = str(p.get("credential") or "").strip()
    try:
        credential = ScramCredential.from_text(mechanism, text)
    except (KeyError, ValueError):
        raise IllegalArgument(
            "credential is Kafka's form of a SCRAM credential: salt=...,stored_key=...,server_key=...,iterations=N"
        ) from None

    def run(lab: LiveLab) -> Any:
        asked = lab.cluster.begin_scram(
            lambda s: s.upsert(user, credential), f"{user}'s {mechanism} credential"
        )
        return in_flight(
            lab,
            asked,
            settled=lambda _: True,
            answer=_answer(
                asked, f"User {user} has a {mechanism} credential ({credential.iterations} iterations)"
            ),
            what=f"{user}'s credential",
            wait_s=WAIT_S,
        )

    return run


def _delete(p: Mapping[str, Any]) -> Act:
    user = _user(p)
    mechanism = _mechanism(p, required=False)

    async def remove(store: ScramStore) -> None:
        have = await store.credentials(user)
        if not have:
            raise ResourceNotFound(f"Attempt to delete a user credential that does not exist: {user}")
        for m in [mechanism] if mechanism else sorted(have):
            await store.delete(user, m)

    def run(lab: LiveLab) -> Any:
        asked = lab.cluster.begin_scram(remove, f"{user}'s credentials")
        what = f"User {user}'s {mechanism} credential removed" if mechanism else f"User {user} removed"
        return in_flight(
            lab,
            asked,
            settled=lambda _: True,
            answer=_answer(asked, what),
            what=f"{user}'s credentials",
            wait_s=WAIT_S,
        )

    return run


async def _describe(store: ScramStore) -> list[dict[str, Any]]:
    return [
        {
            "user": user,
            "credentials": [{"mechanism": m, "iterations": c.iterations} for m, c in sorted(found.items())],
        }
        for user, found in (await store.describe(None)).items()
    ]


def _list(p: Mapping[str, Any]) -> Act:
    def run(lab: LiveLab) -> Any:
        asked = lab.cluster.begin_scram(_describe, "the users")

        def answer(value: list[dict[str, Any]] | None, settled: bool) -> dict[str, Any]:
            return {"users": value or [], "complete": value is not None}

        return in_flight(lab, asked, settled=lambda _: True, answer=answer, what="the users", wait_s=WAIT_S)

    return run


register("user-upsert", _upsert)
register("user-delete", _delete)
register_read("users", _list)
