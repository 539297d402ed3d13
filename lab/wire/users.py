"""AlterUserScramCredentials and DescribeUserScramCredentials: the users' SCRAM credentials over the wire.

An upsertion carries the salted password (the client salts and hashes it), never the password; the
broker keeps the salt, StoredKey and ServerKey in ``/config/users/<name>``. Kafka's checks and errors
per user (UNSUPPORTED_SASL_MECHANISM for an unknown mechanism code, UNACCEPTABLE_CREDENTIAL,
DUPLICATE_RESOURCE, RESOURCE_NOT_FOUND); only the controller alters them (NOT_CONTROLLER elsewhere).
"""

from __future__ import annotations

from typing import Any

from lab.engine.errors import KafkaError
from lab.engine.scram import ScramCredential
from lab.engine.scram_admin import (
    AlterScramRequest,
    AlterScramResponse,
    DescribeScramRequest,
    DescribeScramResponse,
    UserResult,
)
from lab.engine.scram_store import MECHANISM_CODES, check_iterations, mechanism_of
from lab.wire.codec import Request
from lab.wire.connection import Connection
from lab.wire.registry import serves
from lab.wire.shape import make


@serves(51, "AlterUserScramCredentials", 0, 0)
async def alter_user_scram_credentials(conn: Connection, request: Request) -> Any:
    body = request.body
    refused: dict[str, KafkaError] = {}
    deletions: list[tuple[str, str]] = []
    upsertions: list[tuple[str, ScramCredential]] = []
    for d in body.deletions:
        try:
            deletions.append((d.name, mechanism_of(d.mechanism)))
        except KafkaError as error:
            refused.setdefault(d.name, error)
    for u in body.upsertions:
        try:
            mechanism = mechanism_of(u.mechanism)
            check_iterations(mechanism, u.iterations)
            credential = ScramCredential.from_salted_password(
                mechanism, bytes(u.salted_password), bytes(u.salt), u.iterations
            )
            upsertions.append((u.name, credential))
        except KafkaError as error:
            refused.setdefault(u.name, error)
    results = {user: UserResult(user=user, error=e.name, message=e.message) for user, e in refused.items()}
    deletions = [(user, m) for user, m in deletions if user not in refused]
    upsertions = [(user, c) for user, c in upsertions if user not in refused]
    if deletions or upsertions:
        answer: AlterScramResponse = await conn.call(
            AlterScramRequest(deletions=tuple(deletions), upsertions=tuple(upsertions))
        )
        results.update({r.user: r for r in answer.results})
    return make(
        request.response_schema,
        {
            "throttle_time": 0,
            "results": [
                {"user": r.user, "error_code": r.error, "error_message": r.message or None}
                for _, r in sorted(results.items())
            ],
        },
    )


@serves(50, "DescribeUserScramCredentials", 0, 0)
async def describe_user_scram_credentials(conn: Connection, request: Request) -> Any:
    named = request.body.users
    users = None if named is None or len(named) == 0 else tuple(u.name for u in named)
    answer: DescribeScramResponse = await conn.call(DescribeScramRequest(users=users))
    results: list[dict[str, Any]] = []
    for user, found in answer.users.items():
        if isinstance(found, UserResult):
            results.append(
                {
                    "user": user,
                    "error_code": found.error,
                    "error_message": found.message,
                    "credential_infos": [],
                }
            )
        else:
            results.append(
                {
                    "user": user,
                    "error_code": None,
                    "error_message": None,
                    "credential_infos": [
                        {"mechanism": MECHANISM_CODES[m], "iterations": n} for m, n in found
                    ],
                }
            )
    return make(
        request.response_schema,
        {
            "throttle_time": 0,
            "error_code": answer.error,
            "error_message": answer.message or None,
            "results": results,
        },
    )
