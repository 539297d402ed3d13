"""AlterUserScramCredentials and DescribeUserScramCredentials over the wire, in virtual time."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator

import pytest
from kio.schema.errors import ErrorCode

from lab.engine.cluster import Cluster
from tests.engine.helpers import checked_cluster
from tests.wire.harness import WireClient
from tests.wire.scram_client import ScramClient

DESCRIBE, ALTER = 50, 51
SHA256, SHA512 = 1, 2
SALT = b"0123456789abcdef"


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    with checked_cluster(3) as c:
        c.run_until_true(lambda: c.controller_id() is not None, 10_000)
        yield c


def upsertion(name: str, password: str, mechanism: int = SHA256, iterations: int = 4096) -> dict:
    digest = "sha256" if mechanism == SHA256 else "sha512"
    return {
        "name": name,
        "mechanism": mechanism,
        "iterations": iterations,
        "salt": SALT,
        "salted_password": hashlib.pbkdf2_hmac(digest, password.encode(), SALT, max(iterations, 1)),
    }


def controller(cluster: Cluster) -> WireClient:
    assert cluster.controller_id() is not None
    return WireClient(cluster, cluster.controller_id())


def test_credentials_are_upserted_described_and_deleted(cluster: Cluster) -> None:
    altered = controller(cluster).ask(
        ALTER,
        0,
        {"deletions": [], "upsertions": [upsertion("alice", "s3cret"), upsertion("bob", "pw", SHA512, 8192)]},
    )
    assert [(r.user, r.error_code) for r in altered.results] == [
        ("alice", ErrorCode.none),
        ("bob", ErrorCode.none),
    ]
    raw = json.loads(cluster.scram(lambda s: s._zk.get("/config/users/bob"))[0])  # type: ignore[attr-defined]
    assert raw["config"]["SCRAM-SHA-512"].endswith("iterations=8192")
    other = next(b for b in cluster.broker_ids if b != cluster.controller_id())
    described = WireClient(cluster, other).ask(DESCRIBE, 0, {"users": None})
    assert described.error_code == ErrorCode.none
    assert {
        (r.user, tuple((c.mechanism, c.iterations) for c in r.credential_infos)) for r in described.results
    } == {
        ("alice", ((SHA256, 4096),)),
        ("bob", ((SHA512, 8192),)),
    }
    # What was stored authenticates: SCRAM with the password the client salted.
    client = WireClient(cluster, other, listener="SASL_PLAINTEXT")
    assert client.ask(17, 1, {"mechanism": "SCRAM-SHA-256"}).error_code == ErrorCode.none
    scram = ScramClient("SCRAM-SHA-256", "alice", "s3cret")
    first = client.ask(36, 2, {"auth_bytes": scram.first()})
    final = client.ask(36, 2, {"auth_bytes": scram.final(first.auth_bytes)})
    assert final.error_code == ErrorCode.none
    assert client.conn.principal == "User:alice"
    deleted = controller(cluster).ask(
        ALTER, 0, {"deletions": [{"name": "alice", "mechanism": SHA256}], "upsertions": []}
    )
    assert deleted.results[0].error_code == ErrorCode.none
    gone = WireClient(cluster, other).ask(DESCRIBE, 0, {"users": [{"name": "alice"}]})
    assert gone.results[0].error_code == ErrorCode.resource_not_found


def test_bad_input_fails_per_user_with_kafkas_errors(cluster: Cluster) -> None:
    altered = controller(cluster).ask(
        ALTER,
        0,
        {
            "deletions": [{"name": "carol", "mechanism": SHA256}, {"name": "dave", "mechanism": SHA256}],
            "upsertions": [
                upsertion("erin", "pw", mechanism=9),
                upsertion("frank", "pw", iterations=100),
                upsertion("dave", "pw"),
                upsertion("gina", "pw"),
            ],
        },
    )
    assert {r.user: r.error_code for r in altered.results} == {
        "carol": ErrorCode.resource_not_found,
        "dave": ErrorCode.duplicate_resource,
        "erin": ErrorCode.unsupported_sasl_mechanism,
        "frank": ErrorCode.unacceptable_credential,
        "gina": ErrorCode.none,
    }
    assert cluster.scram(lambda s: s.users()) == ["gina"]
    twice = controller(cluster).ask(DESCRIBE, 0, {"users": [{"name": "gina"}, {"name": "gina"}]})
    assert twice.error_code == ErrorCode.duplicate_resource


def test_only_the_controller_alters_credentials(cluster: Cluster) -> None:
    other = next(b for b in cluster.broker_ids if b != cluster.controller_id())
    answer = WireClient(cluster, other).ask(
        ALTER, 0, {"deletions": [], "upsertions": [upsertion("alice", "pw")]}
    )
    assert answer.results[0].error_code == ErrorCode.not_controller
    assert cluster.scram(lambda s: s.users()) == []
