"""SASL's SCRAM-SHA-256/512 (RFC 5802, 7677) as Kafka's broker runs it, and the credentials it keeps.

A credential is what Kafka stores for a user and mechanism, never the password: a salt, the
iteration count, StoredKey = H(ClientKey) and ServerKey, in ZooKeeper under ``/config/users/<name>``
(``{"version": 1, "config": {"SCRAM-SHA-256": "salt=...,stored_key=...,server_key=...,iterations=4096"}}``).
``ServerExchange`` is the broker's side of one authentication: client-first, server-first, client-final
(the proof checked against StoredKey), server-final (the server's signature, so the client knows the
broker holds the credential too). Every failure is SASL_AUTHENTICATION_FAILED, saying only what a
client may know. Randomness (salts, nonces) is given by the caller: the engine has no global random.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from urllib.parse import quote

from lab.engine.errors import SaslAuthenticationFailed

MECHANISMS = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
MIN_ITERATIONS = 4096  # Kafka refuses fewer
USERS = "/config/users"
# What the broker tells a client whose user or password is wrong (the same for both: no user leaks).
INVALID = (
    "Authentication failed during authentication due to invalid credentials with SASL mechanism {mechanism}"
)


class InvalidCredentials(SaslAuthenticationFailed):
    """A wrong password or no such user: the client hears Kafka's one sentence for both (``INVALID``);
    ``why`` says which, for the lab's timeline."""

    def __init__(self, mechanism: str, why: str) -> None:
        super().__init__(INVALID.format(mechanism=mechanism))
        self.why = why


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _unb64(text: str) -> bytes:
    return base64.b64decode(text.encode(), validate=True)


@dataclass(frozen=True, slots=True)
class ScramCredential:
    mechanism: str
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    @classmethod
    def make(
        cls, mechanism: str, password: str, salt: bytes, iterations: int = MIN_ITERATIONS
    ) -> ScramCredential:
        """What Kafka stores for ``password``: the password itself is gone once this is made."""
        if mechanism not in MECHANISMS:
            raise ValueError(f"unknown mechanism {mechanism!r}; Kafka's are {', '.join(MECHANISMS)}")
        if iterations < MIN_ITERATIONS:
            raise ValueError(f"iterations must be at least {MIN_ITERATIONS}, not {iterations}")
        salted = hashlib.pbkdf2_hmac(MECHANISMS[mechanism], password.encode(), salt, iterations)
        return cls.from_salted_password(mechanism, salted, salt, iterations)

    @classmethod
    def from_salted_password(
        cls, mechanism: str, salted: bytes, salt: bytes, iterations: int
    ) -> ScramCredential:
        """What Kafka stores from a salted password (AlterUserScramCredentials sends that, not the
        password: the client salts and hashes it, as ``kafka-configs.sh`` does)."""
        if mechanism not in MECHANISMS:
            raise ValueError(f"unknown mechanism {mechanism!r}; Kafka's are {', '.join(MECHANISMS)}")
        digest = MECHANISMS[mechanism]
        client_key = hmac.digest(salted, b"Client Key", digest)
        return cls(
            mechanism=mechanism,
            salt=salt,
            stored_key=hashlib.new(digest, client_key).digest(),
            server_key=hmac.digest(salted, b"Server Key", digest),
            iterations=iterations,
        )

    def to_text(self) -> str:
        """Kafka's form of one mechanism's credential in a user's config znode."""
        return (
            f"salt={_b64(self.salt)},stored_key={_b64(self.stored_key)},"
            f"server_key={_b64(self.server_key)},iterations={self.iterations}"
        )

    @classmethod
    def from_text(cls, mechanism: str, text: str) -> ScramCredential:
        fields = dict(part.split("=", 1) for part in text.split(","))
        return cls(
            mechanism=mechanism,
            salt=_unb64(fields["salt"]),
            stored_key=_unb64(fields["stored_key"]),
            server_key=_unb64(fields["server_key"]),
            iterations=int(fields["iterations"]),
        )


def user_path(user: str) -> str:
    """``/config/users/<name>``, the name sanitized as Kafka's ``Sanitizer`` does (URL-encoded: only
    letters, digits, ``.``, ``-`` and ``_`` stand as they are), so any name makes one znode."""
    return f"{USERS}/{quote(user, safe='').replace('~', '%7E')}"


def encode_user(credentials: Mapping[str, ScramCredential]) -> bytes:
    config = {m: c.to_text() for m, c in sorted(credentials.items())}
    return json.dumps({"version": 1, "config": config}, separators=(",", ":")).encode()


def decode_user(data: bytes) -> dict[str, ScramCredential]:
    config = json.loads(data.decode() or "{}").get("config", {})
    return {m: ScramCredential.from_text(m, t) for m, t in config.items() if m in MECHANISMS}


def _attributes(message: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in message.split(","):
        key, sep, value = part.partition("=")
        if not sep or len(key) != 1:
            raise SaslAuthenticationFailed(f"malformed SCRAM message: {message[:80]!r}")
        out[key] = value
    return out


def _username(raw: str) -> str:
    # RFC 5802: '=' and ',' in a name travel as =3D and =2C.
    return raw.replace("=2C", ",").replace("=3D", "=")


class ServerExchange:
    """One SCRAM authentication, the broker's side: ``first`` then ``final``; ``user`` once it passed."""

    def __init__(
        self,
        mechanism: str,
        lookup: Callable[[str], ScramCredential | None],
        nonce: str,
    ) -> None:
        if mechanism not in MECHANISMS:
            raise SaslAuthenticationFailed(f"unsupported SASL mechanism {mechanism}")
        self.mechanism = mechanism
        self._digest = MECHANISMS[mechanism]
        self._lookup = lookup
        self._server_nonce = nonce
        self._credential: ScramCredential | None = None
        self._client_first_bare = ""
        self._server_first = ""
        self._nonce = ""
        self.user = ""
        self.done = False

    def first(self, client_first: bytes) -> bytes:
        """client-first-message -> server-first-message (the salt, iterations and the joined nonce)."""
        text = client_first.decode(errors="replace")
        header, sep, bare = text.partition(",,")  # no channel binding, no authzid: "n,,"
        if not sep or header not in ("n", "y"):
            raise SaslAuthenticationFailed("a SCRAM client-first message starts with 'n,,'")
        attrs = _attributes(bare)
        if "n" not in attrs or "r" not in attrs:
            raise SaslAuthenticationFailed(
                "a SCRAM client-first message names the user (n=) and a nonce (r=)"
            )
        self.user = _username(attrs["n"])
        credential = self._lookup(self.user)
        if credential is None:
            raise InvalidCredentials(
                self.mechanism, f"no such user, or none with a {self.mechanism} credential"
            )
        self._credential = credential
        self._client_first_bare = bare
        self._nonce = attrs["r"] + self._server_nonce
        self._server_first = f"r={self._nonce},s={_b64(credential.salt)},i={credential.iterations}"
        return self._server_first.encode()

    def final(self, client_final: bytes) -> bytes:
        """client-final-message -> server-final-message, once the client proved it knows the password."""
        credential = self._credential
        if credential is None:
            raise SaslAuthenticationFailed("a SCRAM client-final message before the first")
        text = client_final.decode(errors="replace")
        without_proof, sep, _ = text.rpartition(",p=")
        attrs = _attributes(text)
        # Kafka 3.8.1 to 3.9 (the ZooKeeper-mode brokers the lab follows) take a nonce that ends with the
        # exchange's: librdkafka before 2.6.1 (Debian's kcat) sends its own nonce twice. Kafka 4 wants it equal.
        nonce = attrs.get("r", "")
        if not sep or not nonce.endswith(self._nonce) or attrs.get("c") not in ("biws", "eSws"):
            raise SaslAuthenticationFailed("the SCRAM client-final message does not match the exchange")
        auth_message = f"{self._client_first_bare},{self._server_first},{without_proof}".encode()
        signature = hmac.digest(credential.stored_key, auth_message, self._digest)
        try:
            proof = _unb64(attrs["p"])
        except ValueError:
            raise SaslAuthenticationFailed("the SCRAM proof is not base64") from None
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=False))
        if len(proof) != len(signature) or not hmac.compare_digest(
            hashlib.new(self._digest, client_key).digest(), credential.stored_key
        ):
            raise InvalidCredentials(self.mechanism, "wrong password")
        self.done = True
        return f"v={_b64(hmac.digest(credential.server_key, auth_message, self._digest))}".encode()
