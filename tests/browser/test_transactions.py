"""The Transactions view and the transactional producer's form in real Chromium, at 390 px and 1440 px.

A new lab shows the view's empty state; the form then inits a transactional producer, begins, sends and
commits, and the view follows live over the websocket (the coordinator's state, the partitions, the
timeout counting down, the sequences); a commit out of order answers Kafka's ILLEGAL_STATE. Nothing is
wider than the screen. Screenshots go to test-artifacts/transactions-*.png.
"""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Page, expect

from tests.browser.helpers import OVERFLOWING, VIEWPORTS, create_topic, log_in, new_lab
from tests.lab_server import LabServer


def _fits(page: Page, name: str) -> None:
    width = VIEWPORTS[name][0]
    assert int(page.evaluate("document.scrollingElement.scrollWidth")) <= width
    assert page.evaluate(OVERFLOWING, "#view-transactions") == []


def test_a_transaction_from_the_form_shows_live_in_the_view(
    screen: tuple[str, Page], live_lab: LabServer, artifacts: Path
) -> None:
    name, page = screen
    log_in(page, live_lab)
    new_lab(page, live_lab, f"Transactions {name}", session_timeout_ms=3000)
    create_topic(page, "orders", 1, 3)
    view = page.locator("#transactions")
    expect(view.locator(".empty")).to_contain_text("No transactional id and no idempotent producer yet")
    _fits(page, name)
    page.locator("#view-transactions").screenshot(path=artifacts / f"transactions-{name}-empty.png")

    form = page.locator("#form-txn")
    form.get_by_label("Producer").fill("tp")
    form.get_by_label("transactional.id").fill("orders-tx")
    form.get_by_label("Topic").fill("orders")
    form.get_by_label("Records").fill("3")
    toast = page.locator("#txn-toast")  # the form's own answers, beside it
    form.get_by_role("button", name="Init").click()
    expect(toast).to_contain_text("init_transactions: tp (transactional.id orders-tx")
    txn = page.locator("#txn-orders-tx")
    expect(txn).to_have_attribute("data-state", "Empty")
    form.get_by_role("button", name="Commit").click()
    expect(toast).to_contain_text("ILLEGAL_STATE")
    expect(toast).to_contain_text(
        "Invalid transition attempted from state READY to state COMMITTING_TRANSACTION"
    )
    form.get_by_role("button", name="Begin").click()
    expect(toast).to_contain_text("begin_transaction")
    form.get_by_role("button", name="Send").click()
    expect(toast).to_contain_text("3 of 3 record(s) acknowledged")
    expect(txn).to_have_attribute("data-state", "Ongoing")
    expect(txn.locator(".txn-partitions")).to_contain_text("orders-0")
    expect(txn.locator(".txn-timeout")).to_contain_text("aborts in")
    expect(txn).to_contain_text("coordinator broker")
    expect(txn).to_contain_text("__transaction_state-")
    expect(txn.locator(".holder")).to_contain_text("IN_TRANSACTION")
    row = view.locator('.sequences tr[data-partition="orders-0"]')
    expect(row).to_have_attribute("data-last-sequence", "2")
    expect(row).to_contain_text("open txn")
    _fits(page, name)
    page.locator("#view-transactions").screenshot(path=artifacts / f"transactions-{name}-ongoing.png")
    # The countdown moves with the lab's clock, frame by frame.
    first = int(txn.locator(".txn-timeout").get_attribute("data-aborts-in-s") or "0")
    expect(txn.locator(".txn-timeout")).not_to_have_attribute("data-aborts-in-s", str(first))
    form.get_by_role("button", name="Commit").click()
    expect(toast).to_contain_text("commit_transaction: EndTxn answered")
    expect(txn).to_have_attribute("data-state", "CompleteCommit")
    expect(txn.locator(".txn-timeout")).to_have_count(0)
    expect(txn.locator(".holder")).to_contain_text("1 committed")
    _fits(page, name)
    form.get_by_role("button", name="Close").click()
    expect(toast).to_contain_text("tp closed.")
    expect(txn.locator(".holder")).to_have_count(0)
