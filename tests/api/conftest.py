"""Fixtures for the API tests: users with tokens, and labs on the memory store (fast, no ZooKeeper)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pytest_django.fixtures import Settings

from lab.accounts.models import Role, set_role
from lab.labs import live_of
from lab.models import Lab
from tests.api.helpers import Api
from tests.labhelpers import make_lab, make_user


@pytest.fixture
def memory(settings: Settings, tmp_path: Path) -> None:
    """Labs on the memory store, their logs in this test's own directory (a lab's slug is reused)."""
    settings.LAB_ZOOKEEPER = ""
    settings.LAB_DATA_DIR = tmp_path


@pytest.fixture
def ada(db: None, memory: None) -> Api:
    return Api(make_user("ada"))


@pytest.fixture
def grace(db: None, memory: None) -> Api:
    return Api(make_user("grace"))


@pytest.fixture
def teacher(db: None, memory: None) -> Api:
    user = make_user("teacher")
    set_role(user, Role.INSTRUCTOR)
    return Api(user)


@pytest.fixture
def lab(ada: Api, stop_labs: None) -> Lab:
    """Ada's lab: 3 brokers, topic orders (3 partitions, RF 3), running."""
    row = make_lab(ada.user, "Failover")
    live = live_of(row)
    live.ready.result(30)
    return row


def running(lab: Lab) -> Any:
    live = live_of(lab)
    live.ready.result(30)
    return live
