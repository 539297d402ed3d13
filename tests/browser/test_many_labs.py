"""Ten labs open at once in one browser, as a class's first minute looks from one server: every page
connects, and every one shows what its own lab then does (issue 11)."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser.helpers import log_in
from tests.lab_server import LabServer

pytestmark = pytest.mark.long(90)

LABS = 10
RECORDS = 3


class Api:
    def __init__(self, server: LabServer) -> None:
        self.url = server.url + "/api"
        self.token = server.manage("createtoken", "demo", "ten-labs").strip().splitlines()[-1]

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        request = urllib.request.Request(
            self.url + path,
            method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as answer:
                return answer.status, json.loads(answer.read() or b"null")
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"null")


@pytest.fixture(scope="module")
def server(zookeeper: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    """A server of its own: the shared one's demo user has labs of the other tests, near its limit."""
    served = LabServer(tmp_path_factory.mktemp("ten-labs"), zookeeper=zookeeper)
    served.start()
    yield served
    assert served.stop() == 0, served.output()


@pytest.fixture
def ten_labs(server: LabServer) -> tuple[Api, list[str]]:
    api = Api(server)
    slugs: list[str] = []
    for n in range(LABS):
        status, lab = api.call("POST", "/labs", {"name": f"Ten at once {n}", "brokers": 3})
        assert status == 201, lab
        slugs.append(lab["slug"])
    for slug in slugs:
        status, topic = api.call(
            "POST", f"/labs/{slug}/topics", {"name": "orders", "partitions": 1, "replication_factor": 3}
        )
        assert status == 201, topic
    return api, slugs


def test_ten_labs_opened_at_once_each_show_their_own_live_frames(
    browser: Browser, server: LabServer, ten_labs: tuple[Api, list[str]]
) -> None:
    api, slugs = ten_labs
    context = browser.new_context(viewport={"width": 1200, "height": 800})
    try:
        first = context.new_page()
        log_in(first, server)
        pages: list[Page] = [context.new_page() for _ in slugs]
        for page, slug in zip(pages, slugs, strict=True):
            page.set_default_timeout(60_000)
            page.goto(f"{server.url}/labs/{slug}/", wait_until="commit")  # all ten load together
        for page in pages:
            expect(page.locator("#live-status")).to_have_text("● live")
        # Each lab gets its own number of records, so a page showing another lab's frame would fail.
        for n, slug in enumerate(slugs):
            records = [{"value": f"record {i}"} for i in range(RECORDS + n)]
            status, answer = api.call("POST", f"/labs/{slug}/topics/orders/records", {"records": records})
            assert status == 200, answer
        for n, page in enumerate(pages):
            replicas = page.locator("#plog-orders-0 .rlog")
            expect(replicas).to_have_count(3)
            for r in range(3):
                expect(replicas.nth(r)).to_have_attribute("data-hw", str(RECORDS + n))
    finally:
        context.close()
