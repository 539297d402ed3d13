"""The lab page's "Connect your own Kafka client" panel in real Chromium, on a phone (390 px) and a
laptop (1440 px): bootstrap.servers copied with one click, the snippets readable without widening
the page, each broker's listener following the broker live, and the clock's warning for real clients.
Screenshots go to test-artifacts/listeners-*.png."""

from __future__ import annotations

import re
import socket
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser.helpers import log_in, new_lab
from tests.lab_server import LabServer

PANEL_OVERFLOW = """() => {
  const panel = document.querySelector('#view-connect').getBoundingClientRect();
  const out = Array.from(document.querySelectorAll('#view-connect *')).filter(el => {
    if (el.closest('pre')) return false;  // code scrolls inside its own box
    const r = el.getBoundingClientRect();
    return r.width > 0 && (r.left < panel.left - 0.5 || r.right > panel.right + 0.5);
  }).map(el => el.className || el.tagName);
  return {left: panel.left, right: panel.right, out};
}"""


def _demo_bootstrap(server: LabServer) -> str:
    found = re.search(r"Kafka clients: the demo lab's bootstrap.servers=(\S+)", server.output())
    assert found, server.output()
    return found.group(1)


@pytest.mark.parametrize("width", [390, 1440])
def test_the_panel_fits_and_copies_bootstrap_servers(
    browser: Browser, live_lab: LabServer, artifacts: Path, width: int
) -> None:
    context = browser.new_context(viewport={"width": width, "height": 900})
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_lab.url)
    page = context.new_page()
    page.set_default_timeout(15_000)
    try:
        log_in(page, live_lab)
        page.goto(live_lab.url + "/labs/demo/")
        expect(page.locator("#live-status")).to_have_text("● live")
        bootstrap = _demo_bootstrap(live_lab)
        panel = page.locator("#view-connect")
        expect(panel).to_be_visible()
        expect(panel.get_by_role("textbox", name="bootstrap.servers")).to_have_value(bootstrap)
        expect(panel.locator(".listener[data-state=open]")).to_have_count(3)

        panel.get_by_role("button", name="Copy bootstrap.servers").click()
        expect(panel.get_by_role("button", name="Copy bootstrap.servers")).to_have_text("Copied")
        assert page.evaluate("navigator.clipboard.readText()") == bootstrap

        panel.locator("summary").click()
        for name in ("kcat", "kafka-python", "confluent-kafka"):
            code = panel.locator(f"#snippet-{name}")
            expect(code).to_be_visible()
            expect(code).to_contain_text(bootstrap)
        panel.get_by_role("button", name="Copy the kafka-python snippet").click()
        copied = page.evaluate("navigator.clipboard.readText()")
        assert copied.startswith("from kafka import KafkaConsumer, KafkaProducer")
        assert f'bootstrap_servers="{bootstrap}"' in copied

        assert int(page.evaluate("document.scrollingElement.scrollWidth")) <= width
        box = page.evaluate(PANEL_OVERFLOW)
        assert box["out"] == [], box
        assert box["right"] <= width
        panel.screenshot(path=artifacts / f"listeners-{width}.png")
    finally:
        context.close()


def test_a_killed_brokers_listener_closes_on_the_page_and_a_paused_clock_warns(
    page: Page, live_lab: LabServer, artifacts: Path
) -> None:
    log_in(page, live_lab)
    new_lab(page, live_lab, "Own clients", session_timeout_ms=6000)
    chip = page.locator("#view-connect .listener[data-broker='2']")
    expect(chip).to_have_attribute("data-state", "open")
    port = int((chip.locator("code").text_content() or "").rpartition(":")[2])
    # The page was drawn as the new lab started: its bootstrap.servers were there all the same.
    servers = page.locator("#view-connect").get_by_role("textbox", name="bootstrap.servers")
    expect(servers).to_have_value(re.compile(rf"^127\.0\.0\.1:\d+,127\.0\.0\.1:{port},127\.0\.0\.1:\d+$"))

    page.locator("#broker-2 button[data-action=kill]").click()
    expect(chip).to_have_attribute("data-state", "closed")  # live, over the websocket
    expect(chip).to_contain_text("closed")
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
    page.locator("#view-connect").screenshot(path=artifacts / "listeners-killed.png")
    page.locator("#broker-2 button[data-action=restart]").click()
    expect(chip).to_have_attribute("data-state", "open")

    note = page.locator("#view-connect [data-clock-note]")
    expect(note).to_have_count(0)
    page.locator("#clock-controls button[data-action=clock-pause]").click()
    expect(note).to_contain_text("still run in wall time")
    page.locator("#clock-controls button[data-action=clock-resume]").click()
    expect(note).to_have_count(0)
