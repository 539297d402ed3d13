"""A topic's ACL page in real Chromium, on a phone (390 px) and a laptop (1440 px): add an ACL, see who
may do what, a bad principal refused beside its field, delete it; nothing wider than the screen.

Screenshots go to test-artifacts/acls-*.png.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from tests.browser.helpers import log_in
from tests.lab_server import LabServer

# What spills out of its own box without scrolling (a long word, a table too wide), for the message.
WIDE = """() => Array.from(document.querySelectorAll('body *'))
  .filter(el => el.scrollWidth > el.clientWidth + 1 && getComputedStyle(el).overflowX === 'visible')
  .slice(-5).map(el => `${el.tagName}.${el.className} ${el.scrollWidth}/${el.clientWidth}`)"""


@pytest.mark.parametrize("width", [390, 1440])
def test_add_see_and_delete_an_acl(
    browser: Browser, live_lab: LabServer, artifacts: Path, width: int
) -> None:
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    try:
        log_in(page, live_lab)
        page.goto(live_lab.url + "/labs/demo/admin/topics/orders/")
        page.get_by_role("link", name="ACLs").click()
        expect(page.get_by_role("heading", name="orders: ACLs")).to_be_visible()
        expect(page.locator(".banner.warn")).to_contain_text("nobody enforces them")
        principal = f"User:w{width}"

        form = page.locator("#form-acl")
        form.get_by_label("Principal").fill("alice")  # not Type:name
        form.get_by_role("button", name="Add the ACL").click()
        expect(page.locator("#id_principal-error")).to_contain_text("is written Type:name")
        expect(page.locator('tr.acl[data-principal="alice"]')).to_have_count(0)

        form = page.locator("#form-acl")
        form.get_by_label("Principal").fill(principal)
        form.get_by_label("Operation").select_option("Write")
        form.get_by_role("button", name="Add the ACL").click()
        expect(page.locator(".toast")).to_contain_text(
            f"ACL added: ALLOW {principal} Write from * on Topic:orders"
        )
        row = page.locator(f'tr.acl[data-principal="{principal}"]')
        expect(row).to_have_count(1)
        cells = page.locator(f'.who-may tr[data-principal="{principal}"]')
        expect(cells.locator('td[data-operation="Write"]')).to_have_attribute("data-allowed", "true")
        expect(cells.locator('td[data-operation="Describe"]')).to_have_attribute("data-allowed", "true")
        expect(cells.locator('td[data-operation="Read"]')).to_have_attribute("data-allowed", "false")
        page.screenshot(path=artifacts / f"acls-{width}.png", full_page=True)
        if page.evaluate("document.scrollingElement.scrollWidth") > width:
            raise AssertionError(
                f"{page.evaluate('document.scrollingElement.scrollWidth')} px wide, not {width}: {page.evaluate(WIDE)}"
            )

        row.get_by_role("button", name="Delete").click()
        expect(page.locator(".toast")).to_contain_text(f"ACL deleted: ALLOW {principal} Write")
        expect(page.locator(f'tr.acl[data-principal="{principal}"]')).to_have_count(0)
    finally:
        context.close()
