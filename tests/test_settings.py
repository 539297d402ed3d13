"""Settings come from the environment where it matters."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

_SHOW = (
    "import json, lab.settings as s; "
    "print(json.dumps({'data': str(s.LAB_DATA_DIR), 'db': str(s.DATABASES['default']['NAME']), "
    "'debug': s.DEBUG, 'zk': s.LAB_ZOOKEEPER, 'layer': s.CHANNEL_LAYERS['default']['BACKEND']}))"
)


def _settings(**env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("LAB_", "DJANGO_"))}
    return subprocess.run(
        [sys.executable, "-c", _SHOW],
        cwd=REPO,
        env={**clean, **env},
        capture_output=True,
        text=True,
        check=False,
    )


def test_defaults_keep_state_in_var() -> None:
    shown = json.loads(_settings().stdout)
    assert shown == {
        "data": str(REPO / "var"),
        "db": str(REPO / "var" / "db.sqlite3"),
        "debug": True,
        "zk": "",
        "layer": "lab.runtime.layers.LabChannelLayer",
    }


def test_data_dir_and_zookeeper_from_the_environment(tmp_path: Path) -> None:
    shown = json.loads(_settings(LAB_DATA_DIR=str(tmp_path), LAB_ZOOKEEPER="zk1:2181,zk2:2181").stdout)
    assert shown["db"] == str(tmp_path / "db.sqlite3")
    assert shown["zk"] == "zk1:2181,zk2:2181"


def test_production_needs_a_secret_key() -> None:
    result = _settings(DJANGO_DEBUG="0")
    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY must be set when DJANGO_DEBUG is off" in result.stderr
    assert json.loads(_settings(DJANGO_DEBUG="0", DJANGO_SECRET_KEY="s3cret").stdout)["debug"] is False


def test_a_malformed_debug_flag_is_named() -> None:
    result = _settings(DJANGO_DEBUG="maybe")
    assert "DJANGO_DEBUG must be 1/0" in result.stderr


_CLASSROOM = (
    "import json, lab.settings as s; "
    "print(json.dumps({'debug': s.DEBUG, 'classroom': s.LAB_CLASSROOM, 'secret': s.SECRET_KEY, "
    "'hosts': s.ALLOWED_HOSTS, 'redirect': s.SECURE_SSL_REDIRECT, 'cookies': s.SESSION_COOKIE_SECURE, "
    "'csrf_cookie': s.CSRF_COOKIE_SECURE, 'hsts': s.SECURE_HSTS_SECONDS, "
    "'wire': [s.LAB_WIRE_BIND_HOST, s.LAB_ADVERTISED_HOST, s.LAB_WIRE_PORTS]}))"
)


def _classroom(tmp_path: Path, **env: str) -> dict[str, object]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("LAB_", "DJANGO_"))}
    done = subprocess.run(
        [sys.executable, "-c", _CLASSROOM],
        cwd=REPO,
        env={**clean, "LAB_DATA_DIR": str(tmp_path), **env},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    shown: dict[str, object] = json.loads(done.stdout)
    return shown


def _outbound_address() -> str:
    """This machine's address on its default route, found here without the lab's code."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.connect(("192.0.2.1", 9))
        address: str = sock.getsockname()[0]
    return address


def test_serving_a_class_turns_debug_off_with_a_secret_kept_in_the_data_dir(tmp_path: Path) -> None:
    shown = _classroom(tmp_path, LAB_LISTEN="0.0.0.0:8080")
    assert shown["classroom"] is True
    assert shown["debug"] is False
    key = tmp_path / "secret-key"
    assert shown["secret"] == key.read_text().strip()
    assert len(str(shown["secret"])) >= 50
    assert "insecure" not in str(shown["secret"])
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    # The same secret next time, so sessions survive a restart; another data dir gets its own.
    assert _classroom(tmp_path, LAB_LISTEN="0.0.0.0:8080")["secret"] == shown["secret"]
    assert _classroom(tmp_path / "other", LAB_LISTEN="[::]:8080")["secret"] != shown["secret"]


def test_a_class_reaches_the_lab_by_this_machines_addresses_and_names(tmp_path: Path) -> None:
    hosts = _classroom(tmp_path, LAB_LISTEN="0.0.0.0:8080", DJANGO_ALLOWED_HOSTS="lab.school.example")[
        "hosts"
    ]
    assert isinstance(hosts, list)
    for host in (
        "127.0.0.1",
        "localhost",
        _outbound_address(),
        socket.gethostname().lower(),
        "lab.school.example",
    ):
        assert host in hosts, (host, hosts)
    # Bound to one address, that address (and the machine's names), not every other one.
    one = _classroom(tmp_path, LAB_LISTEN="10.9.8.7:8080")["hosts"]
    assert isinstance(one, list)
    assert "10.9.8.7" in one
    assert _outbound_address() not in one


def test_a_classroom_lan_is_plain_http_without_redirects_or_secure_only_cookies(tmp_path: Path) -> None:
    shown = _classroom(tmp_path, LAB_LISTEN="0.0.0.0:8080")
    assert (shown["redirect"], shown["cookies"], shown["csrf_cookie"], shown["hsts"]) == (
        False,
        False,
        False,
        0,
    )
    # Behind a TLS proxy it is production again.
    proxied = _classroom(tmp_path, LAB_LISTEN="0.0.0.0:8080", DJANGO_BEHIND_PROXY="1")
    assert (proxied["redirect"], proxied["cookies"], proxied["hsts"]) == (True, True, 31_536_000)


def test_a_class_s_kafka_clients_are_told_this_machine_s_address(tmp_path: Path) -> None:
    """make run HOST=0.0.0.0: the brokers bind every interface and advertise the address the class
    reaches; on loopback they stay on 127.0.0.1; LAB_ADVERTISED_HOST and LAB_WIRE_PORTS are the
    operator's to set."""
    assert _classroom(tmp_path, LAB_LISTEN="127.0.0.1:8000")["wire"] == [
        "127.0.0.1",
        "127.0.0.1",
        "19092-19999",
    ]
    assert _classroom(tmp_path, LAB_LISTEN="0.0.0.0:8080")["wire"][:2] == ["0.0.0.0", _outbound_address()]
    assert _classroom(
        tmp_path,
        LAB_LISTEN="0.0.0.0:8080",
        LAB_ADVERTISED_HOST="kafka.school.example",
        LAB_WIRE_PORTS="29092-29199",
    )["wire"] == ["0.0.0.0", "kafka.school.example", "29092-29199"]


def test_loopback_development_keeps_debug_and_the_operator_decides(tmp_path: Path) -> None:
    loopback = _classroom(tmp_path, LAB_LISTEN="127.0.0.1:8000")
    assert (loopback["classroom"], loopback["debug"]) == (False, True)
    assert loopback["hosts"] == ["127.0.0.1", "localhost", "[::1]"]
    assert not (tmp_path / "secret-key").exists()
    asked = _classroom(tmp_path, LAB_LISTEN="0.0.0.0:8000", DJANGO_DEBUG="1")
    assert asked["debug"] is True


_LIMITS = (
    "import json, lab.settings as s; "
    "print(json.dumps([s.LAB_MAX_LABS_PER_USER, s.LAB_MAX_LABS_PER_INSTRUCTOR, s.LAB_MAX_LIVE_LABS]))"
)


def _limits(**env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("LAB_", "DJANGO_"))}
    return subprocess.run(
        [sys.executable, "-c", _LIMITS],
        cwd=REPO,
        env={**clean, **env},
        capture_output=True,
        text=True,
        check=False,
    )


def test_lab_limits_have_defaults_and_come_from_the_environment() -> None:
    assert json.loads(_limits().stdout) == [10, 20, 40]
    changed = _limits(LAB_MAX_LABS_PER_USER="3", LAB_MAX_LABS_PER_INSTRUCTOR="5", LAB_MAX_LIVE_LABS="80")
    assert json.loads(changed.stdout) == [3, 5, 80]
    assert "LAB_MAX_LIVE_LABS must be 1 or more, not 0" in _limits(LAB_MAX_LIVE_LABS="0").stderr
    assert (
        "LAB_MAX_LABS_PER_USER must be a whole number, not 'many'"
        in _limits(LAB_MAX_LABS_PER_USER="many").stderr
    )


def test_the_database_made_by_migrate_is_sqlite_in_wal_mode(tmp_path: Path) -> None:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("LAB_", "DJANGO_", "DATABASE_URL"))}
    done = subprocess.run(
        [sys.executable, "manage.py", "migrate", "--no-input"],
        cwd=REPO,
        env={**clean, "LAB_DATA_DIR": str(tmp_path), "DJANGO_SETTINGS_MODULE": "lab.settings"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    # WAL is a property of the file: a plain connection, with none of the lab's options, finds it.
    with contextlib.closing(sqlite3.connect(tmp_path / "db.sqlite3")) as db:
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert db.execute("SELECT count(*) FROM django_migrations").fetchone()[0] > 10


@pytest.mark.django_db(transaction=True)
def test_the_labs_connections_wait_for_a_writer_and_take_the_write_lock_at_begin() -> None:
    from django.db import connection, transaction

    with connection.cursor() as cursor:
        cursor.execute("PRAGMA journal_mode")
        assert cursor.fetchone() == ("wal",)
        cursor.execute("PRAGMA busy_timeout")
        assert cursor.fetchone() == (20_000,)  # ms: a writer waits 20 s for another
    with (
        transaction.atomic(),
        contextlib.closing(sqlite3.connect(connection.settings_dict["NAME"], timeout=0)) as other,
    ):
        # This transaction has only begun, and already holds the write lock (BEGIN IMMEDIATE) ...
        with pytest.raises(sqlite3.OperationalError, match="database is locked"):
            other.execute("BEGIN IMMEDIATE")
        # ... while readers go on reading (WAL).
        assert other.execute("SELECT count(*) FROM lab_lab").fetchone() == (0,)
