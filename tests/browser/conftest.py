"""Browser tests: the real server (`python -m lab.serve`) driven by Debian's Chromium through Playwright.

Everything under tests/browser is marked ``browser``; `make test` runs these in a pytest process of
their own (`pytest -m browser tests/browser`), because an asyncio test after a sync Playwright test
in one process fails.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from tests.browser.helpers import VIEWPORTS
from tests.lab_server import REPO, LabServer
from tests.processes import pids_mentioning

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-dev-shm-usage",  # containers often have a tiny /dev/shm
]
ARTIFACTS = REPO / "test-artifacts"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(item.path).parents:
            item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="session")
def live_lab(zookeeper: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    """The lab as `make run` serves it, on a free port, with a fresh database and the session's ZooKeeper.

    ``live_lab.url`` is its base URL ("http://127.0.0.1:<port>").
    """
    data_dir = tmp_path_factory.mktemp("live-lab")
    server = LabServer(data_dir, zookeeper=zookeeper)
    server.start()
    yield server
    status = server.stop()
    assert status == 0, f"lab.serve exited with {status}:\n{server.output()}"
    assert pids_mentioning(str(data_dir)) == [], "lab.serve left a process behind"


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    """A fresh browser context and page for each test."""
    context = browser.new_context(viewport={"width": 1200, "height": 800})
    tab = context.new_page()
    tab.set_default_timeout(15_000)
    yield tab
    context.close()


@pytest.fixture(params=list(VIEWPORTS))
def screen(request: pytest.FixtureRequest, browser: Browser) -> Iterator[tuple[str, Page]]:
    """A page at each of the two widths a view must fit (the test runs once per width): its name and page."""
    width, height = VIEWPORTS[request.param]
    context = browser.new_context(viewport={"width": width, "height": height}, device_scale_factor=1)
    tab = context.new_page()
    tab.set_default_timeout(15_000)
    yield request.param, tab
    context.close()


@pytest.fixture
def artifacts() -> Path:
    """Where tests save screenshots (git-ignored)."""
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS
