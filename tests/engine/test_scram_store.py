"""SCRAM credentials in ZooKeeper (memory store and a real server), as Kafka keeps them under /config/users."""

from __future__ import annotations

import json

import pytest

from lab.engine.errors import (
    DuplicateResource,
    ResourceNotFound,
    UnacceptableCredential,
    UnsupportedSaslMechanism,
)
from lab.engine.scram import ScramCredential
from lab.engine.scram_store import ScramStore, mechanism_of
from tests.engine.metadata.conftest import Harness

SALT = b"0123456789abcdef"


def cred(
    mechanism: str = "SCRAM-SHA-256", password: str = "alice-secret", iterations: int = 4096
) -> ScramCredential:
    return ScramCredential.make(mechanism, password, SALT, iterations)


def test_an_upsert_writes_kafkas_json_and_a_change_notification(harness: Harness) -> None:
    session = harness.open("admin").session
    store = ScramStore(session)
    harness.run(store.upsert("alice", cred()))
    harness.run(store.upsert("alice", cred("SCRAM-SHA-512")))
    data, _ = harness.wait(session.get("/config/users/alice"))
    doc = json.loads(data)
    assert doc["version"] == 1
    assert set(doc["config"]) == {"SCRAM-SHA-256", "SCRAM-SHA-512"}
    text = doc["config"]["SCRAM-SHA-256"]
    assert text.startswith("salt=")
    assert ",stored_key=" in text
    assert text.endswith(",iterations=4096")
    assert "alice-secret" not in data.decode()
    changes = harness.wait(session.get_children("/config/changes"))
    assert len(changes) == 2
    assert all(c.startswith("config_change_") for c in changes)
    note, _ = harness.wait(session.get(f"/config/changes/{sorted(changes)[0]}"))
    assert json.loads(note) == {"version": 2, "entity_path": "users/alice"}
    assert harness.run(store.credentials("alice"))["SCRAM-SHA-256"] == cred()


def test_delete_removes_one_mechanism_and_keeps_other_config(harness: Harness) -> None:
    session = harness.open("admin").session
    harness.wait(
        session.create(
            "/config/users/bob", b'{"version":1,"config":{"producer_byte_rate":"1024"}}', make_parents=True
        )
    )
    store = ScramStore(session)
    harness.run(store.upsert("bob", cred()))
    assert harness.run(store.users()) == ["bob"]
    harness.run(store.delete("bob", "SCRAM-SHA-256"))
    data, _ = harness.wait(session.get("/config/users/bob"))
    assert json.loads(data) == {"version": 1, "config": {"producer_byte_rate": "1024"}}
    assert harness.run(store.users()) == []
    with pytest.raises(ResourceNotFound, match="does not exist: bob SCRAM-SHA-256"):
        harness.run(store.delete("bob", "SCRAM-SHA-256"))


def test_names_are_sanitized_as_kafka_does(harness: Harness) -> None:
    session = harness.open("admin").session
    store = ScramStore(session)
    harness.run(store.upsert("CN=a b/c*", cred()))
    assert harness.wait(session.get_children("/config/users")) == ["CN%3Da%20b%2Fc%2A"]
    assert harness.run(store.users()) == ["CN=a b/c*"]
    assert set(harness.run(store.describe(["CN=a b/c*"]))["CN=a b/c*"]) == {"SCRAM-SHA-256"}


def test_bad_input_is_refused_with_kafkas_errors_and_nothing_written(harness: Harness) -> None:
    session = harness.open("admin").session
    store = ScramStore(session)
    with pytest.raises(UnacceptableCredential, match="Username must not be empty"):
        harness.run(store.upsert("", cred()))
    with pytest.raises(UnacceptableCredential, match="more than the maximum 16384"):
        harness.run(store.upsert("carol", cred(iterations=20_000)))
    with pytest.raises(UnsupportedSaslMechanism):
        harness.run(store.delete("carol", "SCRAM-MD5"))
    with pytest.raises(UnsupportedSaslMechanism, match="Unknown SCRAM mechanism"):
        mechanism_of(7)
    with pytest.raises(ResourceNotFound, match="does not exist: carol"):
        harness.run(store.describe(["carol"]))
    with pytest.raises(DuplicateResource):
        harness.run(store.describe(["carol", "carol"]))
    assert harness.run(store.users()) == []
