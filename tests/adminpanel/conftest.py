"""Fixtures for the admin panel's view tests: a running memory-store lab, its owner, and others."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from html import unescape
from typing import Any

import pytest
from django.test import Client
from pytest_django.fixtures import Settings

from lab.accounts.models import Role, set_role
from lab.engine.errors import CoordinatorNotAvailable
from lab.labs import live_of
from lab.models import Lab
from lab.runtime.live import LiveLab
from tests.labhelpers import make_lab, make_user

HTMX = {"HX-Request": "true"}


@pytest.fixture
def lab(settings: Settings, stop_labs: None) -> Lab:
    """Ada's lab on the memory store (fast), running, with orders: 3 partitions, RF 3."""
    settings.LAB_ZOOKEEPER = ""
    return running(make_lab(make_user("ada")))


def running(lab: Lab) -> Lab:
    """Start ``lab`` afresh (labs of earlier tests had the same slug, so the same data dir) and wait for its topics."""
    shutil.rmtree(lab.data_dir, ignore_errors=True)
    live = live_of(lab)
    live.ready.result(30)
    live.wait_for_frame(lambda f: all(f"plog:{t['name']}" in f.views for t in lab.settings["topics"]))
    return lab


@pytest.fixture
def owner(lab: Lab) -> Client:
    client = Client()
    client.force_login(lab.owner)
    return client


@pytest.fixture
def viewer(lab: Lab) -> Client:
    """An instructor: sees every lab, changes only their own (this one is read-only to them)."""
    user = make_user("grace")
    set_role(user, Role.INSTRUCTOR)
    client = Client()
    client.force_login(user)  # type: ignore[arg-type]
    return client


@pytest.fixture
def stranger(lab: Lab) -> Client:
    """A student who does not own the lab: it does not exist for them."""
    client = Client()
    client.force_login(make_user("mallory"))  # type: ignore[arg-type]
    return client


def on_driver(lab: Lab, fn: Callable[[LiveLab], Any], timeout_s: float = 20.0) -> Any:
    """Run ``fn`` on the lab's driver thread (to set things up, or to look at the cluster)."""
    return live_of(lab).submit(fn).result(timeout_s)


def snapshot(lab: Lab) -> dict[str, Any]:
    return on_driver(lab, lambda live: live.cluster.snapshot())  # type: ignore[no-any-return]


def produce(lab: Lab, topic: str, records: list[tuple[str | None, str]], partition: int = 0) -> None:
    """Write records to one partition with acks=all and wait for them (driving the engine)."""

    def run(live: LiveLab) -> None:
        producer = live.cluster.producer(acks="all")
        futures = [producer.send(topic, v, key=k, partition=partition) for k, v in records]
        producer.flush(30_000)
        for f in futures:
            f.result()
        producer.close()

    on_driver(lab, run)


def fast_forward(lab: Lab, ms: int) -> None:
    """Run the lab's engine ``ms`` of virtual time now (the live clock re-anchors after it)."""
    on_driver(lab, lambda live: live.cluster.run_for(ms, pace=False))


def replicas(lab: Lab, topic: str) -> dict[int, list[int]]:
    parts = snapshot(lab)["topics"][topic]["partitions"]
    return {p["partition"]: p["replicas"] for p in parts}


def field_error(html: str, field: str, prefix: str = "id_") -> str:
    """The error shown beside ``field`` (its control's id is <prefix><field>), "" if none."""
    found = re.findall(
        rf'<span class="field-error" id="{prefix}{re.escape(field)}-error" role="alert">(.*?)</span>', html
    )
    return " ".join(unescape(f) for f in found)


def form_errors(html: str) -> str:
    """Errors about a form as a whole (not one field)."""
    found = re.findall(
        r'<p class="banner bad form-error" role="alert"><span aria-hidden="true">✕</span> (.*?)</p>', html
    )
    return " ".join(unescape(f) for f in found)


def commit(lab: Lab, group: str, offsets: dict[tuple[str, int], int]) -> None:
    """Commit ``offsets`` for ``group`` from a consumer that then leaves: an inactive group with offsets."""

    def run(live: LiveLab) -> None:
        consumer = live.cluster.consumer(group)
        consumer.assign(list(offsets))
        for _ in range(50):  # the lab's first group creates __consumer_offsets: retry, as clients do
            try:
                consumer.commit(offsets)
                break
            except CoordinatorNotAvailable:
                live.cluster.run_for(200, pace=False)
        consumer.close()

    on_driver(lab, run)
