"""The lab on PostgreSQL (``DATABASE_URL``): migrations, the models, and the lab limits under racing requests.

Django's settings are made once per process, so the lab's tests run on PostgreSQL in a child pytest
with ``DATABASE_URL`` pointing at the session's throwaway server (the ``postgresql`` fixture); what
an operator runs, ``manage.py migrate`` on ``lab.settings``, runs there too. The server itself is
checked as well: unprivileged, on loopback only, and gone without a trace when stopped.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit
from xml.etree import ElementTree

import psycopg
import pytest

from tests.postgres_server import DATABASE, ManagedPostgres
from tests.processes import alive, group_members, wait_until

pytestmark = [pytest.mark.postgresql, pytest.mark.long(30)]

REPO = Path(__file__).resolve().parent.parent

# What runs on PostgreSQL: the models, the limits and the ports (their race tests above all), and the paths that
# make labs through the database (the home page, createlab).
ON_POSTGRESQL = [
    "tests/test_models.py",
    "tests/test_limits.py",
    "tests/test_ports.py",
    "tests/management/commands/test_createlab.py",
]
RACE_TESTS = {
    "test_four_requests_at_once_for_the_last_place_of_a_person_make_one_lab",
    "test_four_people_at_once_for_the_servers_last_two_places_make_two_labs",
    "test_four_labs_made_at_once_get_twelve_different_ports",
}


def _with_database(url: str, name: str) -> str:
    return urlsplit(url)._replace(path=f"/{name}").geturl()


def _env(url: str, data_dir: Path) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("LAB_", "DJANGO_", "DATABASE_URL"))}
    return {**clean, "DATABASE_URL": url, "LAB_DATA_DIR": str(data_dir)}


def _migrations_on_disk() -> set[tuple[str, str]]:
    from django.db.migrations.loader import MigrationLoader

    return set(MigrationLoader(None, ignore_no_migrations=True).disk_migrations)


def test_the_labs_tests_pass_on_postgresql_with_every_migration_applied(
    postgresql: str, tmp_path: Path
) -> None:
    junit = tmp_path / "child.xml"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-q",
            "--reuse-db",  # keep test_kafka_lab at the end, to look into it below
            f"--junitxml={junit}",
            *ON_POSTGRESQL,
        ],
        cwd=REPO,
        env=_env(postgresql, tmp_path / "data"),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    suite = ElementTree.parse(junit).getroot().find("testsuite")
    assert suite is not None
    assert int(suite.get("tests", "0")) >= 15, done.stdout[-2000:]
    assert (suite.get("failures"), suite.get("errors"), suite.get("skipped")) == ("0", "0", "0")
    ran = {case.get("name") for case in suite.iter("testcase")}
    assert ran >= RACE_TESTS

    # The test database the child made is on this server, built by every migration the lab has.
    with psycopg.connect(_with_database(postgresql, f"test_{DATABASE}")) as db:
        applied = set(db.execute("SELECT app, name FROM django_migrations").fetchall())
        assert db.execute("SELECT count(*) FROM pg_tables WHERE tablename = 'lab_lab'").fetchone() == (1,)
    assert _migrations_on_disk() <= applied


def test_an_operator_migrates_the_lab_onto_postgresql(postgresql: str, tmp_path: Path) -> None:
    env = {**_env(postgresql, tmp_path), "DJANGO_SETTINGS_MODULE": "lab.settings"}
    done = subprocess.run(
        [sys.executable, "manage.py", "migrate", "--no-input"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    with psycopg.connect(postgresql) as db:
        applied = set(db.execute("SELECT app, name FROM django_migrations").fetchall())
    assert _migrations_on_disk() <= applied
    assert not (tmp_path / "db.sqlite3").exists()  # nothing went to SQLite
    said = subprocess.run(
        [
            sys.executable,
            "-c",
            "import django; django.setup(); from lab.serve import _database; print(_database())",
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    port = urlsplit(postgresql).port
    assert said.stdout.strip() == f"PostgreSQL {DATABASE} on 127.0.0.1:{port}"  # what make run prints


def _uid_of(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Uid:"):
            return int(line.split()[1])
    raise AssertionError(f"no Uid line for {pid}")


def _listening(port: int) -> set[str]:
    """The local addresses (hex, as /proc shows them) listening on ``port``, IPv4 and IPv6."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            address, _, hex_port = fields[1].rpartition(":")
            if int(hex_port, 16) == port and fields[3] == "0A":  # 0A: LISTEN
                found.add(address)
    return found


def test_the_throwaway_server_runs_unprivileged_on_loopback_and_leaves_nothing_behind() -> None:
    server = ManagedPostgres()
    url = server.start(timeout_s=120)
    try:
        pid, base = server.pid, server.base_dir
        assert pid is not None
        assert base is not None
        if os.geteuid() == 0:
            assert server.account.name in ("postgres", "nobody")
            assert _uid_of(pid) == pwd.getpwnam(server.account.name).pw_uid != 0
        else:
            assert _uid_of(pid) == os.geteuid()
        assert _listening(server.port) == {"0100007F"}  # 127.0.0.1, and nothing on IPv6
        assert (base / f".s.PGSQL.{server.port}").is_socket()
        assert base.stat().st_mode & 0o777 == 0o700
        with psycopg.connect(url) as db:
            assert db.execute("SELECT current_user, current_database()").fetchone() == ("lab", DATABASE)
        with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
            psycopg.connect(url.replace(server.password, "wrong"))
    finally:
        server.stop()
    assert not alive(pid)
    assert group_members(pid) == []
    assert not base.exists()
    server.stop()  # twice is fine


def test_the_throwaway_server_dies_with_the_test_run(tmp_path: Path) -> None:
    """Even when the run is killed outright (no atexit, no stop): the kernel tells the server."""
    started = tmp_path / "started"
    code = (
        "import sys, time; from pathlib import Path; from tests.postgres_server import ManagedPostgres; "
        "s = ManagedPostgres(); s.start(timeout_s=120); "
        "Path(sys.argv[1] + '.new').write_text(f'{s.pid} {s.base_dir}'); Path(sys.argv[1] + '.new').rename(sys.argv[1]); "
        "time.sleep(600)"
    )
    run = subprocess.Popen([sys.executable, "-c", code, str(started)], cwd=REPO)
    try:
        assert wait_until(started.exists, 120)
        pid = int(started.read_text().split(" ", 1)[0])
        assert alive(pid)
        run.kill()
        run.wait(10)
        assert wait_until(lambda: not alive(pid) and group_members(pid) == [], 30)
    finally:
        run.kill()
        run.wait(10)
        if started.exists():
            shutil.rmtree(
                started.read_text().split(" ", 1)[1], ignore_errors=True
            )  # what stop() would remove
