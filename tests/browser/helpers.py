"""Logging in and making labs the way a person does, for the browser tests."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from tests.lab_server import LabServer

VIEWPORTS = {"phone": (390, 844), "laptop": (1440, 900)}
# The elements below ``selector`` that reach past the viewport's right edge (a view must fit the phone).
OVERFLOWING = """(selector) => Array.from(document.querySelectorAll(selector + ' *'))
  .filter(el => el.getBoundingClientRect().right > document.documentElement.clientWidth + 0.5)
  .map(el => el.className || el.tagName)"""


def log_in(page: Page, server: LabServer) -> None:
    password = (server.data_dir / "demo-password").read_text().strip()
    page.goto(server.url + "/accounts/login/")
    page.get_by_label("User name").fill("demo")
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    expect(page).to_have_url(server.url + "/")


def new_lab(page: Page, server: LabServer, name: str, *, session_timeout_ms: int) -> str:
    """Create a 3-broker lab from the home page's form; return its page URL (the browser is on it)."""
    page.goto(server.url + "/")
    form = page.locator("#form-new-lab")
    form.get_by_label("Name").fill(name)
    form.get_by_label("Brokers").fill("3")
    form.get_by_label("zookeeper.session.timeout.ms").fill(str(session_timeout_ms))
    form.get_by_role("button", name="Create lab").click()
    expect(page).to_have_url(re.compile(r"/labs/[a-z0-9-]+/$"))
    expect(page.locator("#live-status")).to_have_text("● live")
    return page.url


def create_topic(page: Page, name: str, partitions: int, rf: int) -> None:
    form = page.locator("#form-topic")
    form.get_by_label("Name").fill(name)
    form.get_by_label("Partitions").fill(str(partitions))
    form.get_by_label("Replication factor").fill(str(rf))
    form.get_by_role("button", name="Create topic").click()
    expect(page.locator("#toast")).to_contain_text(f"Topic {name} created")
    for p in range(partitions):
        expect(page.locator(f"#map-{name}-{p}")).to_have_attribute("data-leader", re.compile(r"^\d+$"))
