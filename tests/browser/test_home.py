"""The home page and the login in a real browser."""

from __future__ import annotations

import re
from pathlib import Path

from playwright.sync_api import Dialog, Page, expect

from tests.browser.helpers import log_in, new_lab
from tests.lab_server import LabServer


def test_a_newcomer_logs_in_and_sees_zookeeper_and_the_demo_lab(
    page: Page, live_lab: LabServer, artifacts: Path
) -> None:
    page.goto(live_lab.url + "/")
    expect(page).to_have_url(re.compile(r"/accounts/login/\?next=/$"))
    expect(page.get_by_role("heading", level=1)).to_have_text("Log in to Kafka Lab")
    expect(page.locator("#zookeeper-status")).to_contain_text("ZooKeeper answers at")
    page.screenshot(path=artifacts / "login.png", full_page=True)

    log_in(page, live_lab)
    expect(page.get_by_role("heading", level=1)).to_have_text("The lab is up")
    card = page.locator("#zookeeper-status")
    expect(card).to_contain_text("ZooKeeper answers at")
    expect(card.locator("dd").first).to_have_text(re.compile(r"^\d+\.\d+\.\d+$"))
    expect(page.get_by_role("link", name="Demo", exact=True)).to_be_visible()
    assert page.evaluate("htmx.version").startswith("2.0.")

    page.screenshot(path=artifacts / "home-light.png", full_page=True)
    page.emulate_media(color_scheme="dark")
    page.screenshot(path=artifacts / "home-dark.png", full_page=True)


def test_htmx_refreshes_the_zookeeper_card(page: Page, live_lab: LabServer) -> None:
    log_in(page, live_lab)

    with page.expect_response(lambda r: r.url.endswith("/status/zookeeper/"), timeout=15_000) as refresh:
        pass
    assert refresh.value.status == 200
    assert refresh.value.request.headers.get("hx-request") == "true"
    assert refresh.value.request.headers.get("x-csrftoken")
    expect(page.locator("#zookeeper-status")).to_contain_text("ZooKeeper answers at")


def test_a_lab_is_deleted_from_the_home_page_after_a_confirmation(page: Page, live_lab: LabServer) -> None:
    log_in(page, live_lab)
    new_lab(page, live_lab, "Short-lived", session_timeout_ms=3000)
    page.goto(live_lab.url + "/")
    count = page.locator("#lab-count")
    expect(count).to_contain_text(re.compile(r"^\d+ of your 20 labs"))
    before = int(count.inner_text().split()[0])
    row = page.locator("tr", has=page.get_by_role("link", name="Short-lived", exact=True))
    questions: list[str] = []

    def answer(dialog: Dialog) -> None:
        questions.append(dialog.message)
        if len(questions) == 1:
            dialog.dismiss()  # changed my mind: nothing happens
        else:
            dialog.accept()

    page.on("dialog", answer)
    row.get_by_role("button", name="Delete Short-lived").click()
    expect(row).to_have_count(1)
    row.get_by_role("button", name="Delete Short-lived").click()
    expect(page.get_by_role("link", name="Short-lived", exact=True)).to_have_count(0)
    expect(page).to_have_url(live_lab.url + "/")
    expect(count).to_contain_text(f"{before - 1} of your 20 labs")
    assert questions == ["Delete the lab Short-lived with its cluster and data? This cannot be undone."] * 2
    expect(page.get_by_role("link", name="Demo", exact=True)).to_be_visible()
