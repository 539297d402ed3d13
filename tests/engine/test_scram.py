"""SCRAM as the broker runs it: RFC 7677's own exchange, Kafka's credential text, and refusals."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json

import pytest

from lab.engine.errors import SaslAuthenticationFailed
from lab.engine.scram import ScramCredential, ServerExchange, decode_user, encode_user, user_path

# RFC 7677, section 3: user "user", password "pencil".
SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
CLIENT_FIRST = b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
SERVER_FIRST = b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
CLIENT_FINAL = b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="


def pencil() -> ScramCredential:
    return ScramCredential.make("SCRAM-SHA-256", "pencil", SALT, 4096)


def test_rfc_7677s_exchange_passes_word_for_word() -> None:
    exchange = ServerExchange("SCRAM-SHA-256", {"user": pencil()}.get, SERVER_NONCE)
    assert exchange.first(CLIENT_FIRST) == SERVER_FIRST
    assert exchange.final(CLIENT_FINAL) == SERVER_FINAL
    assert exchange.done
    assert exchange.user == "user"


def client_final(password: str, mechanism: str, server_first: bytes, client_first_bare: bytes) -> bytes:
    """The client's side, from RFC 5802's formulas (independent of the server's code)."""
    digest = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}[mechanism]
    attrs = dict(part.split("=", 1) for part in server_first.decode().split(","))
    salted = hashlib.pbkdf2_hmac(digest, password.encode(), base64.b64decode(attrs["s"]), int(attrs["i"]))
    client_key = hmac.digest(salted, b"Client Key", digest)
    without_proof = f"c=biws,r={attrs['r']}"
    auth = client_first_bare + b"," + server_first + b"," + without_proof.encode()
    signature = hmac.digest(hashlib.new(digest, client_key).digest(), auth, digest)
    proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
    return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_the_right_password_passes_and_a_wrong_one_fails_with_kafkas_error(mechanism: str) -> None:
    stored = {"alice": ScramCredential.make(mechanism, "alice-secret", b"0123456789abcdef", 8192)}
    for password, ok in (("alice-secret", True), ("wrong", False)):
        exchange = ServerExchange(mechanism, stored.get, "servernonce")
        server_first = exchange.first(b"n,,n=alice,r=clientnonce")
        final = client_final(password, mechanism, server_first, b"n=alice,r=clientnonce")
        if ok:
            assert exchange.final(final).startswith(b"v=")
        else:
            with pytest.raises(
                SaslAuthenticationFailed, match=f"invalid credentials with SASL mechanism {mechanism}"
            ):
                exchange.final(final)
            assert not exchange.done


@pytest.mark.parametrize(
    ("first", "message"),
    [
        (b"garbage", "starts with 'n,,'"),
        (b"n,,r=only-a-nonce", r"names the user \(n=\) and a nonce"),
        (b"n,,n=mallory,r=x", "invalid credentials"),  # unknown user: the same words as a wrong password
        (b"n,,n=alice,r", "malformed SCRAM message"),
    ],
)
def test_a_bad_first_message_or_an_unknown_user_fails_the_authentication(first: bytes, message: str) -> None:
    stored = {"alice": pencil()}
    with pytest.raises(SaslAuthenticationFailed, match=message):
        ServerExchange("SCRAM-SHA-256", stored.get, "n").first(first)


def test_a_final_message_with_another_nonce_fails() -> None:
    exchange = ServerExchange("SCRAM-SHA-256", {"user": pencil()}.get, SERVER_NONCE)
    exchange.first(CLIENT_FIRST)
    with pytest.raises(SaslAuthenticationFailed, match="does not match the exchange"):
        exchange.final(CLIENT_FINAL.replace(b"$k0", b"$k1"))


def test_librdkafkas_doubled_nonce_passes_as_on_kafka_3_9() -> None:
    """librdkafka before 2.6.1 (Debian's kcat) sends its own nonce again before the joined one; Kafka
    3.8.1 to 3.9 check only that the nonce ends with the exchange's, and the proof is over what it sent."""
    exchange = ServerExchange("SCRAM-SHA-256", {"user": pencil()}.get, SERVER_NONCE)
    server_first = exchange.first(CLIENT_FIRST)
    joined = server_first.decode().split(",")[0][2:]
    without_proof = f"c=biws,r=rOprNGfwEbeRWgbNEkqO{joined}"
    salted = hashlib.pbkdf2_hmac("sha256", b"pencil", SALT, 4096)
    client_key = hmac.digest(salted, b"Client Key", "sha256")
    auth = b"n=user,r=rOprNGfwEbeRWgbNEkqO," + server_first + b"," + without_proof.encode()
    signature = hmac.digest(hashlib.sha256(client_key).digest(), auth, "sha256")
    proof = base64.b64encode(bytes(a ^ b for a, b in zip(client_key, signature, strict=True))).decode()
    assert exchange.final(f"{without_proof},p={proof}".encode()).startswith(b"v=")
    assert exchange.done


def test_credentials_are_kafkas_user_znode() -> None:
    credential = pencil()
    data = encode_user({"SCRAM-SHA-256": credential})
    assert json.loads(data) == {
        "version": 1,
        "config": {
            "SCRAM-SHA-256": "salt=W22ZaJ0SNY7soEsUEjb6gQ==,"
            f"stored_key={base64.b64encode(credential.stored_key).decode()},"
            f"server_key={base64.b64encode(credential.server_key).decode()},iterations=4096"
        },
    }
    assert decode_user(data) == {"SCRAM-SHA-256": credential}
    assert user_path("alice") == "/config/users/alice"
    with pytest.raises(ValueError, match="at least 4096"):
        ScramCredential.make("SCRAM-SHA-256", "pw", SALT, 1000)
