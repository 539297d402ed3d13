"""Fixtures shared by the whole suite."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings as hypothesis_settings

from lab.zookeeper_server import ENV_VAR, ManagedZooKeeper
from tests.zkoutage import HeldRestart, KillableZooKeeper

# `make test` tries the same generated examples every run (Hypothesis seeds each test from its own
# name), so a red CI run means the code changed, not the dice. Generated examples found stop 20's
# and stop 19's CI failures one run in a few: exploring is `make fuzz`'s job (new examples each run),
# and what it finds becomes an @example.
hypothesis_settings.register_profile("suite", derandomize=True)
hypothesis_settings.register_profile("fuzz", derandomize=False)
hypothesis_settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "suite"))


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Long modules first, longest first; then the rest, most tests first (pytest-xdist's own order).

    `make test` hands whole modules to two processes (``--dist loadfile --no-loadscope-reorder``) in
    this order, each taking the next when it is nearly done: a long module handed out last would keep
    one process busy while the other has finished. A module says it is long, and about how long on
    the 2-core machine, with ``pytestmark = pytest.mark.long(seconds)``. Tests keep their order within
    a module."""
    counts: dict[Path, int] = {}
    seconds: dict[Path, float] = {}
    for item in items:
        counts[item.path] = counts.get(item.path, 0) + 1
        marker = item.get_closest_marker("long")
        if marker is not None:
            seconds[item.path] = float(marker.args[0])
    items.sort(key=lambda item: (-seconds.get(item.path, 0.0), -counts[item.path]))


@pytest.fixture(scope="session")
def zookeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The hosts string ("127.0.0.1:port") of one real ZooKeeper for the whole session.

    With LAB_ZOOKEEPER set, that ensemble is used and nothing is started. Otherwise
    a managed server (tickTime 200 ms, sessions from 400 ms to 60 s) runs on a free
    loopback port with its data in a temporary directory, and stops when the session
    ends. Tests that share it should use their own chroot or unique paths.
    """
    configured = os.environ.get(ENV_VAR, "").strip()
    if configured:
        yield configured
        return
    server = ManagedZooKeeper(tmp_path_factory.mktemp("zookeeper"))
    try:
        yield server.start(timeout_s=60)
    finally:
        server.stop()


@pytest.fixture(scope="session")
def redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The ``redis://`` URL of one real Redis for the whole session (Debian's ``redis-server``, which
    ``make test`` installs), on a free loopback port, no persistence; or ``LAB_REDIS`` when set."""
    from lab.redis_server import ENV_VAR as REDIS_ENV_VAR
    from lab.redis_server import ManagedRedis, redis_url

    configured = os.environ.get(REDIS_ENV_VAR, "").strip()
    if configured:
        yield redis_url(configured)
        return
    server = ManagedRedis(tmp_path_factory.mktemp("redis"))
    try:
        yield server.start(timeout_s=30)
    finally:
        server.stop()


@pytest.fixture(scope="session")
def postgresql() -> Iterator[str]:
    """The ``DATABASE_URL`` of one throwaway PostgreSQL server for the whole session.

    Debian's ``postgresql`` (``make test`` installs it) runs as a child process on a free loopback
    port, with its data and socket in a temporary directory removed when the session ends; as root it
    runs as the ``postgres`` user (tests/postgres_server.py). The URL names the database ``kafka_lab``,
    whose user may create others (pytest-django makes ``test_kafka_lab``).
    """
    from tests.postgres_server import ManagedPostgres

    server = ManagedPostgres()
    try:
        yield server.start(timeout_s=120)
    finally:
        server.stop()


@pytest.fixture
def killable_zookeeper(tmp_path: Path) -> Iterator[KillableZooKeeper]:
    """A real ZooKeeper of this test's own, to kill -9: its supervisor starts it again (same port, same
    data) only once the test calls ``back()``. Labs the test started are stopped before it."""
    held = HeldRestart()
    server = ManagedZooKeeper(tmp_path / "zookeeper", restart_backoff_s=(0.5, 2.0), report=held)
    server.start(timeout_s=60)
    try:
        yield KillableZooKeeper(server, held)
    finally:
        from lab.runtime.manager import runtime

        runtime.stop_all()
        held.release()
        server.stop()


@pytest.fixture
def stop_labs() -> Iterator[None]:
    """Stop every live lab the test started (the runtime is one per process)."""
    yield
    from lab.runtime.manager import runtime

    runtime.stop_all()


@pytest.fixture(autouse=True)
def own_data_dir(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Each test's labs live in a directory of their own: two tests that both make a lab called
    "Failover" must not find each other's logs on disk."""
    if "settings" not in request.fixturenames and not request.node.get_closest_marker("django_db"):
        from django.conf import settings as django_settings

        if not django_settings.configured:
            yield
            return
    from django.test import override_settings

    with override_settings(LAB_DATA_DIR=tmp_path_factory.mktemp("lab-data")):
        yield
