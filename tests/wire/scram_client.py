"""A SCRAM client's side (RFC 5802), written from the RFC, for tests that speak SASL without a Kafka client."""

from __future__ import annotations

import base64
import hashlib
import hmac

from lab.engine.scram import MECHANISMS


class ScramClient:
    def __init__(
        self, mechanism: str, user: str, password: str, nonce: str = "fyko+d2lbbFgONRv9qkxdawL"
    ) -> None:
        self.digest = MECHANISMS[mechanism]
        self.user = user
        self.password = password
        self.nonce = nonce
        self.bare = f"n={user.replace('=', '=3D').replace(',', '=2C')},r={nonce}"
        self.server_signature = b""

    def first(self) -> bytes:
        return f"n,,{self.bare}".encode()

    def final(self, server_first: bytes) -> bytes:
        attrs = dict(part.split("=", 1) for part in server_first.decode().split(","))
        salted = hashlib.pbkdf2_hmac(
            self.digest, self.password.encode(), base64.b64decode(attrs["s"]), int(attrs["i"])
        )
        client_key = hmac.digest(salted, b"Client Key", self.digest)
        stored_key = hashlib.new(self.digest, client_key).digest()
        without_proof = f"c=biws,r={attrs['r']}"
        auth = f"{self.bare},{server_first.decode()},{without_proof}".encode()
        signature = hmac.digest(stored_key, auth, self.digest)
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        self.server_signature = hmac.digest(
            hmac.digest(salted, b"Server Key", self.digest), auth, self.digest
        )
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def verify(self, server_final: bytes) -> bool:
        return server_final.decode() == f"v={base64.b64encode(self.server_signature).decode()}"
