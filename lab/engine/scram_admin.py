"""A broker's side of SCRAM: AlterUserScramCredentials, DescribeUserScramCredentials, and the lookup a
SASL listener makes to authenticate a user.

As in Kafka's ZooKeeper mode, only the controller alters credentials (any other broker answers
NOT_CONTROLLER, and the admin client asks the controller); any broker describes them and looks them up.
A broker reads ``/config/users/<name>`` when it authenticates, so a credential changed a moment ago
counts at once (Kafka's brokers keep a cache the change notification refreshes: the same answer here).
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lab.engine.errors import DuplicateResource, KafkaError, NotController
from lab.engine.scram import ScramCredential
from lab.engine.scram_store import ScramStore, check_unique

if TYPE_CHECKING:
    from lab.engine.broker import Broker


@dataclass(frozen=True, slots=True, kw_only=True)
class AlterScramRequest:
    deletions: tuple[tuple[str, str], ...] = ()  # (user, mechanism)
    upsertions: tuple[tuple[str, ScramCredential], ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class UserResult:
    user: str
    error: str | None = None
    message: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class AlterScramResponse:
    results: tuple[UserResult, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeScramRequest:
    users: tuple[str, ...] | None = None  # None: every user


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeScramResponse:
    error: str | None = None
    message: str = ""
    # user -> (mechanism, iterations) of each credential; or the user's own error
    users: dict[str, tuple[tuple[str, int], ...] | UserResult] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class ScramLookupRequest:
    user: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ScramLookupResponse:
    credentials: dict[str, ScramCredential] = field(default_factory=dict)


Handler = Callable[[Any], Coroutine[Any, Any, Any]]


def handlers(broker: Broker, is_controller: Callable[[], bool]) -> dict[type, Handler]:
    """The engine requests a broker's AdminManager serves for SCRAM."""

    def store() -> ScramStore:
        return ScramStore(broker._zk(), broker.ctx.credential_changed)

    async def alter(req: AlterScramRequest) -> AlterScramResponse:
        users = sorted({u for u, _ in req.deletions} | {u for u, _ in req.upsertions})
        if not is_controller():
            why = f"broker {broker.id} is not the controller: SCRAM credentials are altered by the controller"
            return AlterScramResponse(
                results=tuple(UserResult(user=u, error=NotController.name, message=why) for u in users)
            )
        results: list[UserResult] = []
        changed: list[str] = []
        for user in users:
            mine = [("delete", m) for u, m in req.deletions if u == user]
            mine += [("upsert", c.mechanism) for u, c in req.upsertions if u == user]
            try:
                if len({m for _, m in mine}) != len(mine):
                    raise DuplicateResource("A user credential cannot be altered twice in the same request")
                for u, mechanism in req.deletions:
                    if u == user:
                        await store().delete(user, mechanism)
                for u, credential in req.upsertions:
                    if u == user:
                        await store().upsert(user, credential)
            except KafkaError as error:
                results.append(UserResult(user=user, error=error.name, message=error.message))
            else:
                results.append(UserResult(user=user))
                changed.append(user)
        if changed:
            broker.journal(
                "scram_credentials_altered",
                f"broker {broker.id} (the controller) altered the SCRAM credentials of {', '.join(changed)} "
                "in /config/users",
            )
        return AlterScramResponse(results=tuple(results))

    async def describe(req: DescribeScramRequest) -> DescribeScramResponse:
        out: dict[str, tuple[tuple[str, int], ...] | UserResult] = {}
        if req.users is None:
            for user, credentials in (await store().describe(None)).items():
                out[user] = tuple((m, c.iterations) for m, c in sorted(credentials.items()))
            return DescribeScramResponse(users=out)
        try:
            check_unique(req.users)
        except KafkaError as error:
            return DescribeScramResponse(error=error.name, message=error.message)
        for user in req.users:
            try:
                found = (await store().describe([user]))[user]
            except KafkaError as error:
                out[user] = UserResult(user=user, error=error.name, message=error.message)
            else:
                out[user] = tuple((m, c.iterations) for m, c in sorted(found.items()))
        return DescribeScramResponse(users=out)

    async def lookup(req: ScramLookupRequest) -> ScramLookupResponse:
        return ScramLookupResponse(credentials=await store().credentials(req.user))

    return {AlterScramRequest: alter, DescribeScramRequest: describe, ScramLookupRequest: lookup}
