"""Fixtures shared by the whole suite."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from lab.zookeeper_server import ENV_VAR, ManagedZooKeeper


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


@pytest.fixture
def stop_labs() -> Iterator[None]:
    """Stop every live lab the test started (the runtime is one per process)."""
    yield
    from lab.runtime.manager import runtime

    runtime.stop_all()
