"""SASL on a SASL listener's connection, in virtual time: SaslHandshake and SaslAuthenticate with PLAIN and
SCRAM against the lab's users, Kafka's errors, and the connection closed where Kafka closes it."""

from __future__ import annotations

import struct
from collections.abc import Iterator

import pytest
from kio.schema.errors import ErrorCode

from lab.engine.cluster import Cluster
from lab.engine.scram import ScramCredential
from lab.wire.sasl import ENABLED
from tests.engine.helpers import checked_cluster
from tests.wire.harness import WireClient
from tests.wire.scram_client import ScramClient

HANDSHAKE, AUTHENTICATE, METADATA, API_VERSIONS = 17, 36, 3, 18
SALT = b"salt-of-the-lab!"


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    with checked_cluster(3) as c:
        for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
            credential = ScramCredential.make(mechanism, "alice-secret", SALT)
            c.scram(lambda store, credential=credential: store.upsert("alice", credential))
        yield c


def sasl_client(cluster: Cluster, broker: int = 1) -> WireClient:
    return WireClient(cluster, broker, listener="SASL_SSL")


def handshake(client: WireClient, mechanism: str, version: int = 1) -> object:
    return client.ask(HANDSHAKE, version, {"mechanism": mechanism})


def authenticate(client: WireClient, token: bytes, version: int = 2) -> object:
    return client.ask(AUTHENTICATE, version, {"auth_bytes": token})


def metadata(client: WireClient) -> object:
    return client.ask(
        METADATA,
        12,
        {"topics": None, "allow_auto_topic_creation": False, "include_topic_authorized_operations": False},
    )


def scram_login(client: WireClient, mechanism: str, password: str) -> object:
    assert handshake(client, mechanism).error_code == ErrorCode.none
    scram = ScramClient(mechanism, "alice", password)
    first = authenticate(client, scram.first())
    assert first.error_code == ErrorCode.none
    final = authenticate(client, scram.final(first.auth_bytes))
    if final.error_code == ErrorCode.none:
        assert scram.verify(final.auth_bytes)  # the broker proved it holds the credential too
    return final


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_authenticates_a_user_and_then_every_api_is_served(cluster: Cluster, mechanism: str) -> None:
    client = sasl_client(cluster)
    assert client.conn.principal == "User:ANONYMOUS"
    assert scram_login(client, mechanism, "alice-secret").error_code == ErrorCode.none
    assert client.conn.principal == "User:alice"
    # Metadata names the brokers at their SASL_SSL listener, the one this client came in by.
    client.server.listener_advertised["SASL_SSL"] = {1: ("127.0.0.1", 9301), 2: ("127.0.0.1", 9302)}
    assert {(b.node_id, b.port) for b in metadata(client).brokers} == {(1, 9301), (2, 9302)}
    assert any(
        e.kind == "client_authenticated" and "User:alice" in e.text and mechanism in e.text
        for e in cluster.events()
    )


def test_a_wrong_password_fails_with_kafkas_message_and_the_broker_carries_on(cluster: Cluster) -> None:
    client = sasl_client(cluster)
    final = scram_login(client, "SCRAM-SHA-256", "wrong")
    assert final.error_code == ErrorCode.sasl_authentication_failed
    assert final.error_message == (
        "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256"
    )
    cluster.run_for(10)
    assert client.closed_because is not None
    assert client.conn.principal == "User:ANONYMOUS"
    # The client hears Kafka's one sentence; the timeline says what was really wrong.
    assert [e.text for e in cluster.events() if e.kind == "client_authentication_failed"] == [
        "SASL/SCRAM-SHA-256 authentication of User:alice (a client (client.id test) at 127.0.0.1:50000) on "
        "broker 1's SASL_SSL listener failed: wrong password"
    ]
    good = sasl_client(cluster)
    assert scram_login(good, "SCRAM-SHA-256", "alice-secret").error_code == ErrorCode.none


def test_an_unknown_user_gets_the_same_answer_as_a_wrong_password(cluster: Cluster) -> None:
    client = sasl_client(cluster)
    assert handshake(client, "SCRAM-SHA-256").error_code == ErrorCode.none
    first = authenticate(client, ScramClient("SCRAM-SHA-256", "mallory", "x").first())
    assert first.error_code == ErrorCode.sasl_authentication_failed
    assert "invalid credentials with SASL mechanism SCRAM-SHA-256" in (first.error_message or "")
    (told,) = [e.text for e in cluster.events() if e.kind == "client_authentication_failed"]
    assert "authentication of User:mallory" in told
    assert told.endswith("failed: no such user, or none with a SCRAM-SHA-256 credential")


def test_an_unknown_mechanism_is_unsupported_and_closes(cluster: Cluster) -> None:
    client = sasl_client(cluster)
    answer = handshake(client, "GSSAPI")
    assert answer.error_code == ErrorCode.unsupported_sasl_mechanism
    assert list(answer.mechanisms) == list(ENABLED)
    cluster.run_for(10)
    assert "UNSUPPORTED_SASL_MECHANISM" in (client.closed_because or "")


def test_requests_before_authentication_are_an_illegal_sasl_state(cluster: Cluster) -> None:
    client = sasl_client(cluster)
    assert (
        client.ask(API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"}).error_code
        == ErrorCode.none
    )
    client.send(
        METADATA,
        12,
        {"topics": None, "allow_auto_topic_creation": False, "include_topic_authorized_operations": False},
    )
    cluster.run_for(10)
    assert client.sent == []
    assert (
        client.closed_because
        == "ILLEGAL_SASL_STATE: Unexpected Kafka request of type 3 during SASL handshake."
    )
    # After the handshake, only SaslAuthenticate.
    other = sasl_client(cluster)
    handshake(other, "PLAIN")
    other.send(API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"})
    cluster.run_for(10)
    assert "during SASL authentication" in (other.closed_because or "")


def test_a_malformed_sasl_frame_fails_authentication(cluster: Cluster) -> None:
    for mechanism, token in [("SCRAM-SHA-256", b"\xff\x00garbage"), ("PLAIN", b"no-nul-bytes")]:
        client = sasl_client(cluster)
        handshake(client, mechanism)
        answer = authenticate(client, token)
        assert answer.error_code == ErrorCode.sasl_authentication_failed
        assert answer.error_message == (
            f"Authentication failed during authentication due to invalid credentials with SASL mechanism {mechanism}"
        )
        cluster.run_for(10)
        assert client.closed_because is not None
    # A frame that is not even a request, before any handshake: the connection closes, nothing else.
    client = sasl_client(cluster)
    client.send_raw(b"\x00\x11")
    cluster.run_for(10)
    assert client.closed_because is not None
    assert scram_login(sasl_client(cluster), "SCRAM-SHA-512", "alice-secret").error_code == ErrorCode.none


def test_plain_checks_the_password_against_the_users_scram_credential(cluster: Cluster) -> None:
    client = sasl_client(cluster)
    handshake(client, "PLAIN")
    assert authenticate(client, b"\0alice\0alice-secret").error_code == ErrorCode.none
    assert client.conn.principal == "User:alice"
    bad = sasl_client(cluster)
    handshake(bad, "PLAIN")
    answer = authenticate(bad, b"\0alice\0nope")
    assert answer.error_code == ErrorCode.sasl_authentication_failed
    assert answer.error_message == "Authentication failed: Invalid username or password"


def test_handshake_v0_sends_the_tokens_raw(cluster: Cluster) -> None:
    client = sasl_client(cluster)
    assert handshake(client, "PLAIN", version=0).error_code == ErrorCode.none
    client.send_raw(b"\0alice\0alice-secret")
    assert cluster.run_until_true(lambda: bool(client.sent), 1000)
    assert client.sent.pop(0) == struct.pack(">i", 0)  # PLAIN's empty answer, raw
    assert client.conn.principal == "User:alice"
    assert metadata(client).cluster_id == cluster.cluster_id  # served: the handshake is over


def test_sasl_requests_on_a_listener_without_sasl_are_an_illegal_state(cluster: Cluster) -> None:
    client = WireClient(cluster, 1, listener="SSL")
    assert handshake(client, "PLAIN").error_code == ErrorCode.illegal_sasl_state
    answer = authenticate(client, b"\0alice\0alice-secret")
    assert answer.error_code == ErrorCode.illegal_sasl_state
    assert client.closed_because is None
    assert client.conn.principal == "User:ANONYMOUS"


def test_authenticate_after_success_is_an_illegal_state(cluster: Cluster) -> None:
    client = sasl_client(cluster)
    scram_login(client, "SCRAM-SHA-256", "alice-secret")
    answer = authenticate(client, b"\0alice\0alice-secret")
    assert answer.error_code == ErrorCode.illegal_sasl_state
    assert answer.error_message == "SaslAuthenticate request received after successful authentication"


def test_a_killed_broker_authenticates_nobody(cluster: Cluster) -> None:
    client = sasl_client(cluster, 2)
    handshake(client, "PLAIN")
    cluster.kill_broker(2)
    client.send(AUTHENTICATE, 2, {"auth_bytes": b"\0alice\0alice-secret"})
    cluster.run_for(1000)
    assert client.conn.principal == "User:ANONYMOUS"
