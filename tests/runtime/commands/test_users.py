"""SASL users' commands: the credential Kafka stores is what travels and what ZooKeeper keeps, never
the password; bad input is refused where it arrives and changes nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lab.engine.errors import IllegalArgument, ResourceNotFound
from lab.runtime.commands.users import credentials, upsert_args
from tests.walltime import advance, still_lab, until_done


def test_users_are_created_listed_and_removed_and_the_password_is_nowhere(tmp_path: Path) -> None:
    lab, wall = still_lab(tmp_path, "users")
    try:
        for credential in credentials("alice-secret"):
            answer = until_done(lab, wall, lab.act("user-upsert", upsert_args("alice", credential)))
            assert (
                answer["message"] == f"User alice has a {credential.mechanism} credential (4096 iterations)"
            )
        listed = until_done(lab, wall, lab.act("users", {}))
        assert listed == {
            "users": [
                {
                    "user": "alice",
                    "credentials": [
                        {"mechanism": "SCRAM-SHA-256", "iterations": 4096},
                        {"mechanism": "SCRAM-SHA-512", "iterations": 4096},
                    ],
                }
            ],
            "complete": True,
        }
        tree = lab.submit(lambda live: live.cluster.zookeeper_tree("/config/users")).result(10)
        stored = next(n for n in tree if n["path"] == "/config/users/alice")
        assert set(json.loads(stored["data"])["config"]) == {"SCRAM-SHA-256", "SCRAM-SHA-512"}
        journal = (tmp_path / "users" / "commands.jsonl").read_text()
        assert "alice-secret" not in journal
        assert "alice-secret" not in stored["data"]
        until_done(lab, wall, lab.act("user-delete", {"user": "alice"}))
        assert until_done(lab, wall, lab.act("users", {}))["users"] == []
        with pytest.raises(ResourceNotFound, match="does not exist: alice"):
            until_done(lab, wall, lab.act("user-delete", {"user": "alice"}))
    finally:
        lab.stop()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"user": "", "mechanism": "SCRAM-SHA-256", "credential": "x"}, "user is required"),
        ({"user": "bob", "mechanism": "MD5", "credential": "x"}, "mechanism must be one of"),
        ({"user": "bob", "mechanism": "SCRAM-SHA-256", "credential": "salt=1"}, "Kafka's form of a SCRAM"),
        ({"user": "\x00", "mechanism": "SCRAM-SHA-256", "credential": "x"}, "printable"),
    ],
)
def test_bad_input_is_refused_where_it_arrives(tmp_path: Path, args: dict, message: str) -> None:
    lab, _ = still_lab(tmp_path, "bad-users")
    try:
        future = lab.act("user-upsert", args)
        assert future.done()
        with pytest.raises(IllegalArgument, match=message):
            future.result()
    finally:
        lab.stop()


def test_a_password_is_checked_before_anything_is_made() -> None:
    with pytest.raises(IllegalArgument, match="a password cannot be empty"):
        credentials("")


def test_the_users_are_kept_in_the_spec_and_come_back_after_a_reset(tmp_path: Path) -> None:
    lab, wall = still_lab(tmp_path, "kept-users")
    try:
        for credential in credentials("alice-secret"):
            until_done(lab, wall, lab.act("user-upsert", upsert_args("alice", credential)))
        until_done(lab, wall, lab.act("user-upsert", upsert_args("bob", credentials("pw")[0])))
        until_done(lab, wall, lab.act("user-delete", {"user": "bob"}))
        assert set(lab.spec.users) == {"alice"}
        assert set(lab.spec.users["alice"]) == {"SCRAM-SHA-256", "SCRAM-SHA-512"}
        assert "alice-secret" not in json.dumps(lab.spec.settings())
        until_done(lab, wall, lab.act("clock-reset", {}))
        listed = until_done(lab, wall, lab.act("users", {}))
        assert [u["user"] for u in listed["users"]] == ["alice"]
    finally:
        lab.stop()


def test_a_password_utf8_cannot_write_is_refused() -> None:
    with pytest.raises(IllegalArgument, match="UTF-8"):
        credentials("\ud800")


def test_with_the_clock_paused_the_answer_says_the_write_waits_for_it(tmp_path: Path) -> None:
    lab, wall = still_lab(tmp_path, "paused-users")
    try:
        until_done(lab, wall, lab.act("clock-pause", {}))
        (credential,) = credentials("pw", ["SCRAM-SHA-256"])
        answer = until_done(lab, wall, lab.act("user-upsert", upsert_args("alice", credential)))
        assert answer["message"] == (
            "User alice has a SCRAM-SHA-256 credential (4096 iterations): asked for; "
            "ZooKeeper answers when the lab's clock runs again"
        )
        until_done(lab, wall, lab.act("clock-resume", {}))
        advance(lab, wall, 1.0)  # a second of the lab's time: the write's round trips to ZooKeeper land
        assert [u["user"] for u in until_done(lab, wall, lab.act("users", {}))["users"]] == ["alice"]
    finally:
        lab.stop()
