"""SASL on a broker's SASL_PLAINTEXT and SASL_SSL listeners, as Kafka's SaslServerAuthenticator runs it.

A connection to a SASL listener starts unauthenticated: it may ask ApiVersions and SaslHandshake
(which names the mechanism), then only SaslAuthenticate, whose tokens run the mechanism (v0 of the
handshake sends them raw, without Kafka's headers, as Kafka 0.10.0 did). Anything else before the
end is ILLEGAL_SASL_STATE and the connection closes, as Kafka closes it. Once the mechanism
succeeds the connection's principal is ``User:<name>`` and every API is served.

PLAIN and SCRAM-SHA-256/512 are enabled (``sasl.enabled.mechanisms``; Kafka's default is GSSAPI
alone, which a lab cannot run). Both check the lab's users: the SCRAM credentials in ZooKeeper
under ``/config/users``, looked up through the connection's broker (so a dead broker cannot
authenticate anyone). PLAIN has no store of its own here (Kafka's reads a JAAS file): the password
it carries is salted and hashed with a user's SCRAM salt and iterations and must give the stored
key, so one password serves both. A failure answers SASL_AUTHENTICATION_FAILED with Kafka's
message (which never says whether the user exists) and closes the connection; the timeline says
what was wrong.
"""

from __future__ import annotations

import hmac
import secrets
from dataclasses import dataclass
from typing import Any

from lab.engine.errors import SaslAuthenticationFailed
from lab.engine.scram import INVALID, MECHANISMS, ScramCredential, ServerExchange
from lab.engine.scram_admin import ScramLookupRequest, ScramLookupResponse
from lab.wire import codec
from lab.wire.codec import Request
from lab.wire.connection import Connection
from lab.wire.registry import serves
from lab.wire.shape import make

SASL_HANDSHAKE = 17
SASL_AUTHENTICATE = 36
ENABLED = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")  # the lab's sasl.enabled.mechanisms
PLAIN_INVALID = "Authentication failed: Invalid username or password"
AFTER_SUCCESS = "SaslAuthenticate request received after successful authentication"
NOT_SASL = "the {listener} listener does not use SASL"


@dataclass(slots=True)
class SaslState:
    """Where one connection's authentication stands."""

    mechanism: str = ""  # named by SaslHandshake
    raw: bool = False  # SaslHandshake v0: the tokens come raw, without Kafka's headers
    exchange: ServerExchange | None = None
    user: str = ""
    authenticated: bool = False

    def refuses(self, api_key: int) -> str:
        """Why a request with ``api_key`` may not be served now ("" if it may), in Kafka's words."""
        if self.authenticated:
            return ""
        if not self.mechanism:
            if api_key in (codec.API_VERSIONS, SASL_HANDSHAKE):
                return ""
            return f"Unexpected Kafka request of type {api_key} during SASL handshake."
        if api_key == SASL_AUTHENTICATE:
            return ""
        return f"Unexpected Kafka request of type {api_key} during SASL authentication."


def state_for(listener: str) -> SaslState | None:
    return SaslState() if listener.startswith("SASL_") else None


async def _credentials(conn: Connection, user: str) -> dict[str, ScramCredential]:
    answer: ScramLookupResponse = await conn.call(ScramLookupRequest(user=user))
    return answer.credentials


def _scram_user(token: bytes) -> str:
    """The user a SCRAM client-first message names ("" if it names none)."""
    _, _, bare = token.decode(errors="replace").partition(",,")
    for part in bare.split(","):
        if part.startswith("n="):
            return part[2:].replace("=2C", ",").replace("=3D", "=")
    return ""


class _PlainInvalid(SaslAuthenticationFailed):
    """PLAIN's own answer to a wrong user or password, which Kafka passes to the client as it is;
    ``why`` says which, for the timeline."""

    def __init__(self, why: str) -> None:
        super().__init__(PLAIN_INVALID)
        self.why = why


async def _plain(conn: Connection, token: bytes, state: SaslState) -> str:
    parts = token.split(b"\0")
    if len(parts) != 3:
        raise SaslAuthenticationFailed(f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(parts)}")
    authzid, user, password = (p.decode(errors="replace") for p in parts)
    state.user = user  # who tried, for the timeline; the principal only once the password holds
    if not user or not password:
        raise SaslAuthenticationFailed("Authentication failed: username or password not specified")
    if authzid and authzid != user:
        raise SaslAuthenticationFailed(
            "Authentication failed: Client requested an authorization id that is different from username"
        )
    found = await _credentials(conn, user)
    for mechanism, stored in sorted(found.items()):
        given = ScramCredential.make(mechanism, password, stored.salt, stored.iterations)
        if hmac.compare_digest(given.stored_key, stored.stored_key):
            return user
    raise _PlainInvalid("wrong password" if found else "no such user")


async def step(conn: Connection, state: SaslState, token: bytes) -> bytes:
    """One token of the mechanism: the server's answer, or SaslAuthenticationFailed."""
    if state.mechanism == "PLAIN":
        state.user = await _plain(conn, token, state)
        state.authenticated = True
        return b""
    if state.exchange is None:
        user = _scram_user(token)
        found = await _credentials(conn, user) if user else {}
        mechanism = state.mechanism
        state.exchange = ServerExchange(mechanism, lambda _: found.get(mechanism), secrets.token_urlsafe(18))
        return state.exchange.first(token)
    answer = state.exchange.final(token)
    state.user = state.exchange.user
    state.authenticated = True
    return answer


def client_message(state: SaslState, error: SaslAuthenticationFailed) -> str:
    """What Kafka tells the client: PLAIN's own sentence for wrong credentials; for everything else (a
    malformed message, a wrong proof, no such user) the one sentence that gives nothing away."""
    if isinstance(error, _PlainInvalid):
        return error.message
    return INVALID.format(mechanism=state.mechanism)


def succeeded(conn: Connection, state: SaslState) -> None:
    conn.principal = f"User:{state.user}"
    conn.cluster.journal.record(
        "client_authenticated",
        f"{conn.describe()} authenticated as {conn.principal} with {state.mechanism} on broker "
        f"{conn.broker_id}'s {conn.listener} listener",
        broker=conn.broker_id,
    )


def failed(conn: Connection, state: SaslState, error: SaslAuthenticationFailed) -> str:
    """The failure in the timeline with what was really wrong (summed up: ``lab.wire.failures``); the
    sentence the connection closes with."""
    conn.server.failures.sasl_failed(
        broker=conn.broker_id,
        listener=conn.listener,
        peer=conn.peer,
        client=conn.describe(),
        mechanism=state.mechanism,
        user=state.user or _who(state),
        reason=getattr(error, "why", "") or error.message,
    )
    return f"SASL_AUTHENTICATION_FAILED with {state.mechanism}: {error.message}"


def _who(state: SaslState) -> str:
    return state.exchange.user if state.exchange is not None else ""


async def raw_token(conn: Connection, state: SaslState, token: bytes) -> bytes | None:
    """A token after SaslHandshake v0: the answer travels raw too; a failure can only close."""
    try:
        answer = await step(conn, state, token)
    except SaslAuthenticationFailed as error:
        conn.drop(failed(conn, state, error))
        return None
    if state.authenticated:
        state.raw = False
        succeeded(conn, state)
    return answer


@serves(SASL_HANDSHAKE, "SaslHandshake", 0, 1)
async def sasl_handshake(conn: Connection, request: Request) -> Any:
    state = conn.sasl
    mechanism = request.body.mechanism
    if state is None or state.authenticated:
        # Kafka's request handler answers it: the listener is not SASL's, or this connection is done.
        return make(request.response_schema, {"error_code": "ILLEGAL_SASL_STATE", "mechanisms": []})
    if mechanism not in ENABLED:
        conn.close_after_answer = (
            f"UNSUPPORTED_SASL_MECHANISM: it asked for {mechanism!r}; this broker's sasl.enabled.mechanisms "
            f"are {', '.join(ENABLED)}"
        )
        return make(
            request.response_schema, {"error_code": "UNSUPPORTED_SASL_MECHANISM", "mechanisms": list(ENABLED)}
        )
    state.mechanism = mechanism
    state.raw = request.header.api_version == 0
    return make(request.response_schema, {"error_code": None, "mechanisms": list(ENABLED)})


@serves(SASL_AUTHENTICATE, "SaslAuthenticate", 0, 2)
async def sasl_authenticate(conn: Connection, request: Request) -> Any:
    state = conn.sasl
    if state is None or state.authenticated:
        message = AFTER_SUCCESS if state is not None else NOT_SASL.format(listener=conn.listener)
        return make(
            request.response_schema,
            {"error_code": "ILLEGAL_SASL_STATE", "error_message": message, "auth_bytes": b""},
        )
    try:
        answer = await step(conn, state, request.body.auth_bytes)
    except SaslAuthenticationFailed as error:
        conn.close_after_answer = failed(conn, state, error)
        return make(
            request.response_schema,
            {
                "error_code": "SASL_AUTHENTICATION_FAILED",
                "error_message": client_message(state, error),
                "auth_bytes": b"",
            },
        )
    if state.authenticated:
        succeeded(conn, state)
    return make(request.response_schema, {"error_code": None, "error_message": None, "auth_bytes": answer})


__all__ = ["ENABLED", "MECHANISMS", "SaslState", "raw_token", "state_for"]
