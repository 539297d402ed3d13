"""``lab.api.driver`` with the labs on a lab worker: an API call asks the lab's owner once.

The worker here is the lab's side of the real protocol (a courier on the real Redis layer, registered
in the real ZooKeeper, answering with a real lab's answer and ``lab.worker.status_of``), so what the
web process sends it can be counted: a call that woke the lab first and then asked its question
(two round trips, and a frame drawn for the wake) shows as two messages.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.test import AsyncClient
from pytest_django.fixtures import Settings

from lab import remote
from lab.labs import spec_of
from lab.models import Lab
from lab.runtime.courier import Courier
from lab.runtime.live import LiveLab
from lab.runtime.ownership import Ownership
from lab.runtime.redis_layer import LabRedisChannelLayer
from lab.worker import status_of
from tests.api.helpers import Api
from tests.labhelpers import make_lab


def _courier(redis: str, name: str) -> Courier:
    return Courier(LabRedisChannelLayer(hosts=[{"address": redis, "socket_timeout": 30}]), name=name)


@pytest.fixture
def owned(
    ada: Api, settings: Settings, zookeeper: str, redis: str, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Lab, list[str]]]:
    """Ada's lab, run by a worker this test watches: the ops it was sent, in order."""
    install = f"tests-driver-{time.time_ns()}"
    settings.LAB_WORKERS = 1
    settings.LAB_ZOOKEEPER = zookeeper
    row = make_lab(ada.user, "On a worker")
    live = LiveLab(spec_of(row), zookeeper=None).start()
    live.ready.result(30)
    web, worker = _courier(redis, "web"), _courier(redis, "worker")
    web_zk, worker_zk = Ownership(zookeeper, install), Ownership(zookeeper, install)
    monkeypatch.setattr(remote, "_courier", web)
    monkeypatch.setattr(remote, "_ownership", web_zk)
    asked: list[str] = []

    async def handle(message: dict[str, Any]) -> None:
        asked.append(str(message["op"]))
        if "mute" in asked:
            return  # alive, holding its lease, answering nothing
        if message["op"] == "act":
            result = await asyncio.wrap_future(live.act(str(message["name"]), dict(message["args"])))
            await worker.reply(message, result={"result": result, "status": status_of(live, "1")})
        else:
            await worker.reply(message, result=status_of(live, "1"))

    worker.serve(handle)
    worker_zk.register("1", worker.channel, cap=10)
    try:
        yield row, asked
    finally:
        live.stop()
        for closing in (web_zk, worker_zk):
            closing.close()
        web.close()
        worker.close()


def test_reading_a_lab_on_a_worker_asks_its_owner_once(ada: Api, owned: tuple[Lab, list[str]]) -> None:
    row, asked = owned
    answer = ada.get(f"/labs/{row.slug}")
    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert body["state"] == "running"  # the status came with the snapshot's answer
    assert set(body["snapshot"]["topics"]) >= {"orders"}
    assert asked == ["act"]


def test_a_command_to_a_lab_on_a_worker_asks_its_owner_once(
    ada: Api, owned: tuple[Lab, list[str]], tmp_path: Path
) -> None:
    row, asked = owned
    answer = ada.post(f"/labs/{row.slug}/topics", {"name": "audit", "partitions": 1, "replication_factor": 3})
    assert answer.status_code == 201, answer.content
    assert asked == ["act"]
    assert [t.name for t in spec_of(Lab.objects.get(slug=row.slug)).topics] == ["orders", "audit"]


def test_an_owner_that_does_not_answer_is_a_504_that_says_so(
    ada: Api, owned: tuple[Lab, list[str]], settings: Settings
) -> None:
    row, asked = owned
    settings.LAB_WORKER_TIMEOUT_S = 1
    asked.append("mute")
    answer = ada.get(f"/labs/{row.slug}")
    assert answer.status_code == 504, answer.content
    assert "the lab's worker did not answer within 1 s" in answer.json()["message"]


def test_an_answer_after_the_caller_gave_up_is_dropped_quietly(
    owned: tuple[Lab, list[str]], settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    row, asked = owned
    settings.LAB_WORKER_TIMEOUT_S = 0.5
    asked.append("mute")
    future = remote.RemoteLab(row.slug, None).act("snapshot", {})
    future.cancel()  # the view's own deadline came first (lab.api.driver.run)
    time.sleep(1.5)  # the worker's deadline passes too: the courier fails its request
    assert not [r for r in caplog.records if "exception calling callback" in r.getMessage()]


def test_a_request_waiting_for_its_labs_worker_holds_up_no_other_request(
    ada: Api, owned: tuple[Lab, list[str]], settings: Settings
) -> None:
    # A sync-only middleware ran the rest of a request, its wait for the worker included, on a thread
    # for sync code: daphne made each request a thread and held it that long (a quarter of the web
    # process's GIL samples in a class), and where requests share that thread (Django's test client
    # does), the others waited for it.
    row, asked = owned
    settings.LAB_WORKER_TIMEOUT_S = 5
    asked.append("mute")
    headers = {"Authorization": f"Bearer {ada.secret}"}
    finished: list[tuple[str, int]] = []

    async def run() -> None:
        client = AsyncClient()

        async def waiting() -> None:
            answer = await client.get(f"/api/labs/{row.slug}", headers=headers)
            finished.append(("the lab", answer.status_code))

        async def another() -> None:
            while "act" not in asked:  # until the first request waits for the lab's worker
                await asyncio.sleep(0.01)
            answer = await client.get("/api/labs", headers=headers)
            finished.append(("the list", answer.status_code))

        await asyncio.gather(waiting(), another())

    async_to_sync(run)()
    assert finished == [("the list", 200), ("the lab", 504)]
