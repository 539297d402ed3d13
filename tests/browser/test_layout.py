"""Layout in real Chromium: a phone (390 px), a laptop (1440 px) and a projector in Large mode.

Every page of the site, on the demo lab `make run` makes (3 brokers, orders, a producer and a
group): nothing wider than the screen, broker headers that do not run into each other, a header
on one line, and a partition log that fills a projector. Screenshots go to test-artifacts/layout-*.png.
"""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser.helpers import log_in
from tests.lab_server import LabServer

PAGES = {
    "home": "/",
    "lab": "/labs/demo/",
    "topic-admin": "/labs/demo/admin/",
    "topic": "/labs/demo/admin/topics/orders/",
    "topic-acls": "/labs/demo/admin/topics/orders/acls/",
    "groups-admin": "/labs/demo/admin/groups/",
    "exercises": "/exercises/",
    "classroom": "/classroom/",
    "scenarios": "/scenarios/",
    "account": "/account/",
}

# Each direct child of the site header as a box; one line when every box overlaps every other vertically.
HEADER_BOXES = """() => Array.from(document.querySelector('.site-header').children)
  .filter(el => el.getClientRects().length)
  .map(el => { const r = el.getBoundingClientRect(); return {name: el.className || el.tagName, top: r.top, bottom: r.bottom}; })"""

# Broker header cells of the cluster map, and every box inside each that spills out of it.
BROKER_HEADS = """() => Array.from(document.querySelectorAll('#cluster-map th.broker')).map(th => {
  const box = th.getBoundingClientRect();
  const spills = Array.from(th.querySelectorAll('*')).filter(el => {
    const r = el.getBoundingClientRect();
    return r.width > 0 && (r.left < box.left - 0.5 || r.right > box.right + 0.5);
  }).map(el => el.className || el.tagName);
  return {id: th.id, left: box.left, right: box.right, spills};
})"""


def _open(page: Page, server: LabServer, path: str) -> None:
    page.goto(server.url + path)
    if path.startswith("/labs/") and "/admin/" not in path:
        expect(page.locator("#live-status")).to_have_text("● live")
        expect(page.locator("#cluster-map th.broker")).to_have_count(3)


def _width(page: Page) -> int:
    return int(page.evaluate("document.scrollingElement.scrollWidth"))


@pytest.fixture
def phone(browser: Browser) -> Page:
    context = browser.new_context(viewport={"width": 390, "height": 844}, device_scale_factor=1)
    tab = context.new_page()
    tab.set_default_timeout(15_000)
    return tab


@pytest.fixture
def laptop(browser: Browser) -> Page:
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    tab = context.new_page()
    tab.set_default_timeout(15_000)
    return tab


@pytest.fixture
def projector(browser: Browser) -> Page:
    context = browser.new_context(viewport={"width": 1920, "height": 1080})
    tab = context.new_page()
    tab.set_default_timeout(15_000)
    return tab


def test_at_390_px_no_page_is_wider_than_the_phone(phone: Page, live_lab: LabServer, artifacts: Path) -> None:
    log_in(phone, live_lab)
    wide = {}
    for name, path in PAGES.items():
        _open(phone, live_lab, path)
        phone.screenshot(path=artifacts / f"layout-390-{name}.png", full_page=True)
        if _width(phone) > 390:
            wide[name] = _width(phone)
    assert wide == {}, f"pages wider than 390 px: {wide}"


def test_at_390_px_the_broker_headers_do_not_run_into_each_other(
    phone: Page, live_lab: LabServer, artifacts: Path
) -> None:
    log_in(phone, live_lab)
    _open(phone, live_lab, PAGES["lab"])
    phone.locator("#view-map").screenshot(path=artifacts / "layout-390-cluster-map.png")
    heads = phone.evaluate(BROKER_HEADS)
    assert [h["spills"] for h in heads] == [[], [], []], heads
    for left, right in pairwise(heads):
        assert left["right"] <= right["left"] + 0.5, (left, right)


def test_at_1440_px_the_header_is_one_line_on_every_page(
    laptop: Page, live_lab: LabServer, artifacts: Path
) -> None:
    log_in(laptop, live_lab)
    two_lines = {}
    for name, path in PAGES.items():
        _open(laptop, live_lab, path)
        laptop.screenshot(path=artifacts / f"layout-1440-{name}.png")
        boxes = laptop.evaluate(HEADER_BOXES)
        if max(b["top"] for b in boxes) >= min(b["bottom"] for b in boxes):
            two_lines[name] = boxes
        assert _width(laptop) <= 1440, name
    assert two_lines == {}, f"headers on more than one line: {two_lines}"


def test_in_large_mode_the_partition_log_fills_the_projector(
    projector: Page, live_lab: LabServer, artifacts: Path
) -> None:
    log_in(projector, live_lab)
    _open(projector, live_lab, PAGES["lab"])
    projector.get_by_role("button", name="Large").click()
    expect(projector.get_by_role("button", name="Large")).to_have_attribute("aria-pressed", "true")
    log = projector.locator("#plog-orders .partition-log").first
    expect(log).to_be_visible()
    projector.locator("#view-log").screenshot(path=artifacts / "layout-large-partition-log.png")
    used = projector.evaluate(USED)
    assert used >= 0.6, f"the offsets use {used:.0%} of the partition log's width"
    assert _width(projector) <= 1920
    # Presenter mode (an instructor's demo on the projector) draws the log the same way.
    projector.goto(live_lab.url + PAGES["lab"] + "?present=1")
    expect(projector.locator("#presenter-mode")).to_be_attached()
    expect(projector.locator("#plog-orders .partition-log").first).to_be_visible()
    projector.locator("#view-log").screenshot(path=artifacts / "layout-presenter-partition-log.png")
    used = projector.evaluate(USED)
    assert used >= 0.6, f"in presenter mode the offsets use {used:.0%} of the partition log's width"
    assert _width(projector) <= 1920


USED = """() => {
  const part = document.querySelector('#plog-orders .partition-log');
  const cells = part.querySelector('.rlog .cells');
  return cells.getBoundingClientRect().width / part.getBoundingClientRect().width;
}"""
