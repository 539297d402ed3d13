"""SCRAM credentials in ZooKeeper, written and read as Kafka's broker does in ZooKeeper mode.

A user's credentials live in its config znode, ``/config/users/<name>``
(``{"version":1,"config":{"SCRAM-SHA-256":"salt=...,stored_key=...,server_key=...,iterations=4096"}}``),
beside whatever else Kafka keeps there (quotas), which a change here leaves as it was. Each change is
written with a conditional set on the znode's version and announced as Kafka's AdminZkClient does, by a
sequential ``/config/changes/config_change_<seq>`` holding ``{"version":2,"entity_path":"users/<name>"}``.
A user whose last credential is removed keeps its znode with an empty config, as Kafka leaves it.
The checks and errors are those of Kafka's AlterUserScramCredentials and DescribeUserScramCredentials.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol
from urllib.parse import unquote

from lab.engine import limits
from lab.engine.errors import (
    DuplicateResource,
    ResourceNotFound,
    UnacceptableCredential,
    UnsupportedSaslMechanism,
)
from lab.engine.metadata import paths
from lab.engine.metadata.store import BadVersion, NodeExists, NoNode, Stat
from lab.engine.scram import MECHANISMS, MIN_ITERATIONS, USERS, ScramCredential, user_path
from lab.engine.tasks import Pending

MAX_ITERATIONS = limits.SCRAM_ITERATIONS.high  # Kafka refuses more
RETRIES = 10  # conditional writes lost to another writer before giving up
# Kafka's ScramMechanism codes, as AlterUserScramCredentials and DescribeUserScramCredentials carry them.
MECHANISM_CODES: Mapping[str, int] = {"SCRAM-SHA-256": 1, "SCRAM-SHA-512": 2}


class ScramSession(Protocol):
    def create(
        self, path: str, data: bytes = b"", *, sequential: bool = False, make_parents: bool = False
    ) -> Pending[str]: ...
    def get(self, path: str) -> Pending[tuple[bytes, Stat]]: ...
    def get_children(self, path: str) -> Pending[list[str]]: ...
    def set(self, path: str, data: bytes, version: int = -1) -> Pending[Stat]: ...


def mechanism_of(code: int) -> str:
    """Kafka's mechanism name for a wire code; UNSUPPORTED_SASL_MECHANISM for any other."""
    for name, known in MECHANISM_CODES.items():
        if known == code:
            return name
    raise UnsupportedSaslMechanism("Unknown SCRAM mechanism")


def check_user(user: str) -> str:
    if not user:
        raise UnacceptableCredential("Username must not be empty")
    return user


def check_mechanism(mechanism: str) -> str:
    if mechanism not in MECHANISMS:
        raise UnsupportedSaslMechanism(
            f"Unknown SCRAM mechanism {mechanism!r}; Kafka's are {', '.join(MECHANISMS)}"
        )
    return mechanism


def check_iterations(mechanism: str, iterations: int) -> int:
    if iterations < MIN_ITERATIONS:
        raise UnacceptableCredential(
            f"Iterations {iterations} is less than the minimum {MIN_ITERATIONS} required for {mechanism}"
        )
    if iterations > MAX_ITERATIONS:
        raise UnacceptableCredential(
            f"Iterations {iterations} is more than the maximum {MAX_ITERATIONS} allowed for {mechanism}"
        )
    return iterations


def check_unique(users: Sequence[str]) -> None:
    """Kafka refuses a request that names one user twice (DUPLICATE_RESOURCE)."""
    seen: set[str] = set()
    for user in users:
        if user in seen:
            raise DuplicateResource(f"Cannot alter or describe user {user!r} twice in one request")
        seen.add(user)


CredentialChanged = Callable[[str, str, ScramCredential | None], None]  # (user, mechanism, None: removed)


class ScramStore:
    """Upsert, delete and read users' SCRAM credentials over one ZooKeeper session. ``on_change`` hears
    of each credential written or removed, once ZooKeeper has it."""

    def __init__(self, session: ScramSession, on_change: CredentialChanged | None = None) -> None:
        self._zk = session
        self._on_change = on_change

    async def credentials(self, user: str) -> dict[str, ScramCredential]:
        """The user's credentials by mechanism (none: an empty dict)."""
        config, _ = await self._read(user)
        found: dict[str, ScramCredential] = {}
        for mechanism, text in config.items():
            if mechanism in MECHANISMS:
                try:
                    found[mechanism] = ScramCredential.from_text(mechanism, str(text))
                except (KeyError, ValueError):
                    continue  # a znode written by hand, not in Kafka's form: no credential, as Kafka reads it
        return found

    async def users(self) -> list[str]:
        """Every user that has at least one SCRAM credential, by name."""
        try:
            names = await self._zk.get_children(USERS)
        except NoNode:
            return []
        users = sorted(unquote(name) for name in names)
        return [user for user in users if await self.credentials(user)]

    async def describe(self, users: Sequence[str] | None = None) -> dict[str, dict[str, ScramCredential]]:
        """``users``' credentials (every user's when None); a named user with none: RESOURCE_NOT_FOUND."""
        if users is None:
            return {u: await self.credentials(u) for u in await self.users()}
        check_unique(users)
        found: dict[str, dict[str, ScramCredential]] = {}
        for user in users:
            credentials = await self.credentials(check_user(user))
            if not credentials:
                raise ResourceNotFound(f"Attempt to describe a user credential that does not exist: {user}")
            found[user] = credentials
        return found

    async def upsert(self, user: str, credential: ScramCredential) -> None:
        check_user(user)
        check_mechanism(credential.mechanism)
        check_iterations(credential.mechanism, credential.iterations)
        await self._update(user, lambda config: {**config, credential.mechanism: credential.to_text()})
        if self._on_change is not None:
            self._on_change(user, credential.mechanism, credential)

    async def delete(self, user: str, mechanism: str) -> None:
        """Remove one credential: RESOURCE_NOT_FOUND when the user has none for ``mechanism``."""
        check_user(user)
        check_mechanism(mechanism)

        def without(config: dict[str, Any]) -> dict[str, Any]:
            if mechanism not in config:
                raise ResourceNotFound(
                    f"Attempt to delete a user credential that does not exist: {user} {mechanism}"
                )
            return {k: v for k, v in config.items() if k != mechanism}

        await self._update(user, without)
        if self._on_change is not None:
            self._on_change(user, mechanism, None)

    # ------------------------------------------------------------------ znodes

    async def _read(self, user: str) -> tuple[dict[str, Any], int]:
        """The user's whole config and its znode's version (-1: no znode)."""
        try:
            data, stat = await self._zk.get(user_path(user))
        except NoNode:
            return {}, -1
        config = json.loads(data.decode() or "{}").get("config") or {}
        return dict(config), stat.version

    async def _update(self, user: str, change: Any) -> None:
        path = user_path(user)
        for _ in range(RETRIES):
            config, version = await self._read(user)
            wanted = change(config)
            data = json.dumps({"version": 1, "config": dict(sorted(wanted.items()))}, separators=(",", ":"))
            try:
                if version < 0:
                    await self._zk.create(path, data.encode(), make_parents=True)
                else:
                    await self._zk.set(path, data.encode(), version)
            except (BadVersion, NodeExists, NoNode):
                continue  # another writer was first: read again
            await self._zk.create(
                paths.CONFIG_CHANGE_PREFIX,
                paths.encode_config_change(f"users/{user}"),
                sequential=True,
                make_parents=True,
            )
            return
        raise BadVersion(f"{path} kept changing under {RETRIES} writes")
