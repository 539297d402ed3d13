"""``python -m lab.cluster``'s arguments for secured listeners and their users (the README runs a whole
cluster with them: tests/test_readme.py)."""

from __future__ import annotations

import argparse

import pytest

from lab.cluster import main, parse_user


def test_a_user_is_name_colon_password_and_the_password_may_hold_colons() -> None:
    assert parse_user("alice:alice-secret") == ("alice", "alice-secret")
    assert parse_user("bob:a:b") == ("bob", "a:b")
    for bad in ("alice", ":pw", "alice:", ""):
        with pytest.raises(argparse.ArgumentTypeError, match="use name:password"):
            parse_user(bad)


def test_an_unknown_listener_is_refused_before_anything_starts(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as refused:
        main(["--listener", "KERBEROS"])
    assert refused.value.code == 2
    assert "invalid choice: 'KERBEROS'" in capsys.readouterr().err
