"""The topic admin panel in real Chromium, on a ZooKeeper lab: create a topic with a config, produce,
browse and search, export CSV, and reset a consumer group's offsets (refused while it is active).

Screenshots of each step go to test-artifacts/adminpanel-*.png.
"""

from __future__ import annotations

import contextlib
import csv
import re
from pathlib import Path

from playwright.sync_api import APIResponse, Error, Page, Route, expect

from tests.browser.helpers import create_topic, log_in, new_lab
from tests.lab_server import LabServer


def _shot(page: Page, artifacts: Path, name: str) -> None:
    page.screenshot(path=artifacts / f"adminpanel-{name}.png", full_page=True)


def test_admin_a_topic_its_messages_and_a_groups_offsets(
    page: Page, live_lab: LabServer, artifacts: Path
) -> None:
    log_in(page, live_lab)
    lab_url = new_lab(page, live_lab, "Admin panel", session_timeout_ms=3000)
    slug = lab_url.rstrip("/").rsplit("/", 1)[1]
    page.locator("#to-admin").click()
    expect(page).to_have_url(f"{lab_url}admin/")
    expect(page.get_by_role("heading", name="Topics", exact=True)).to_be_visible()

    # A replication factor above the brokers: Kafka's error beside the field, nothing created.
    form = page.locator("#form-create")
    form.get_by_label("Name").fill("payments")
    form.get_by_label("Partitions").fill("2")
    form.get_by_label("Replication factor").fill("4")
    form.get_by_role("button", name="Create topic").click()
    error = page.locator("#id_replication_factor-error")
    expect(error).to_have_text(
        "INVALID_REPLICATION_FACTOR: Replication factor: 4 larger than available brokers: 3."
    )
    expect(page.locator("#topic-payments")).to_have_count(0)
    _shot(page, artifacts, "create-refused")

    # Now with RF 3 and two configs, their Kafka defaults shown beside the lab's.
    form = page.locator("#form-create")
    form.get_by_label("Replication factor").fill("3")
    configs = form.locator("details.configs")
    if configs.get_attribute("open") is None:  # open already after an error
        configs.locator("summary").click()
    row = form.locator('tr[data-config="retention.ms"]')
    expect(row.locator(".defaults")).to_have_text("lab 604800000 · Kafka 604800000")
    row.locator("input").fill("3600000")
    form.locator('tr[data-config="min.insync.replicas"] input').fill("2")
    _shot(page, artifacts, "create-configs")
    form.get_by_role("button", name="Create topic").click()
    expect(page.locator("#form-create .toast")).to_have_text(
        re.compile(
            r"Topic payments created: 2 partition\(s\), replication factor 3, min\.insync\.replicas=2, "
            r"retention\.ms=3600000\.$"
        )
    )
    topic_row = page.locator("#topic-payments")
    expect(topic_row).to_have_attribute("data-partitions", "2")
    expect(topic_row).to_have_attribute("data-rf", "3")
    expect(topic_row).to_have_attribute("data-under-replicated", "0")
    _shot(page, artifacts, "topics")

    # Its page: partitions with leaders and the ISR, the overrides in the config table.
    topic_row.get_by_role("link", name="Manage").click()
    expect(page.locator("#partition-0")).to_have_attribute("data-isr", re.compile(r"^\d,\d,\d$"))
    expect(page.locator('#form-config tr[data-config="min.insync.replicas"] input')).to_have_value("2")
    _shot(page, artifacts, "topic")

    # Produce to partition 0, then browse: the results refresh by themselves.
    page.get_by_role("link", name="Messages").first.click()
    produce = page.locator("#form-produce")
    produce.get_by_label("Key").fill("order-{i}")
    produce.get_by_label("Value", exact=True).fill("paid {i}")
    produce.get_by_label("Partition").fill("0")
    produce.get_by_label("Count").fill("5")
    produce.get_by_role("button", name="Produce").click()
    expect(page.locator("#form-produce .toast")).to_contain_text(
        "5 of 5 record(s) acknowledged (acks=all): payments-0 offsets 0 to 4."
    )
    produce = page.locator("#form-produce")
    produce.get_by_label("Key").fill("refund-1")
    produce.get_by_label("Value", exact=True).fill("refunded order-3")
    produce.get_by_label("Count").fill("1")
    produce.get_by_role("button", name="Produce").click()
    expect(page.locator("#form-produce .toast")).to_contain_text("payments-0 offset 5.")
    expect(page.locator("#results tr[data-offset]")).to_have_count(6)

    # Search in keys and values.
    browse = page.locator("#form-browse")
    browse.get_by_label("Search in keys and values").fill("order-3")
    browse.get_by_role("button", name="Show").click()
    expect(page.locator("#results tr[data-offset]")).to_have_count(2)
    expect(page.locator("#results mark").first).to_have_text("order-3")
    expect(page).to_have_url(re.compile(r"/messages/\?partition=0&start=offset&search=order-3&limit=50$"))
    _shot(page, artifacts, "messages-search")

    # Export what is shown as CSV.
    with page.expect_download() as download:
        page.locator("#export-csv").click()
    assert download.value.suggested_filename == f"{slug}-payments-0-offsets-2-5.csv"
    with Path(download.value.path()).open(newline="") as f:
        exported = [(r["offset"], r["key"], r["value"]) for r in csv.DictReader(f)]
    assert exported == [("2", "order-3", "paid 3"), ("5", "refund-1", "refunded order-3")]

    # The live tail shows a new record without a reload.
    browse.get_by_label("Search in keys and values").fill("")
    browse.get_by_label("Live tail").check()
    expect(page.locator("#results")).to_have_attribute("data-tail", "on")
    produce = page.locator("#form-produce")
    produce.get_by_label("Key").fill("late")
    produce.get_by_label("Value", exact=True).fill("tail me")
    produce.get_by_role("button", name="Produce").click()
    expect(page.locator('#results tr[data-offset="6"]')).to_contain_text("tail me", timeout=5000)
    _shot(page, artifacts, "messages-tail")

    # A consumer group reading payments, from the dashboard: active, so Kafka refuses a reset.
    page.goto(lab_url)
    consumer = page.locator("#form-add-consumer")
    consumer.get_by_label("Group").fill("billing")
    consumer.get_by_label("Topics").fill("payments")
    consumer.get_by_label("Name").fill("reader")
    consumer.get_by_role("button", name="Add consumer").click()
    expect(page.locator("#toast")).to_contain_text("Simulated consumer reader joins group billing")
    page.goto(f"{lab_url}admin/groups/")
    group = page.locator('article[data-group="billing"]')
    expect(group).to_have_attribute("data-state", "Stable", timeout=15_000)
    expect(group.locator('tr[data-partition="payments-0"]')).to_have_attribute(
        "data-committed", "7", timeout=15_000
    )
    reset = page.locator("#form-reset")
    reset.get_by_label("Group").fill("billing")
    reset.get_by_label("Reset to").select_option("earliest")
    reset.get_by_role("button", name="Reset offsets").click()
    expect(page.locator("#id_group-error")).to_have_text(
        "NON_EMPTY_GROUP: Assignments can only be reset if the group 'billing' is inactive, but the current "
        "state is Stable."
    )
    _shot(page, artifacts, "groups-refused")

    # Stop the consumer (it leaves the group), then rewind the group to the start.
    page.goto(lab_url)
    page.locator("#client-reader button[data-action=client-stop]").click()
    expect(page.locator("#toast")).to_contain_text("reader stopped.")
    page.goto(f"{lab_url}admin/groups/")
    expect(group).to_have_attribute("data-state", "Empty", timeout=15_000)
    reset = page.locator("#form-reset")
    reset.get_by_label("Group").fill("billing")
    reset.get_by_label("Topic").select_option("payments")
    reset.get_by_label("Reset to").select_option("earliest")
    reset.get_by_role("button", name="Reset offsets").click()
    expect(page.locator("#form-reset .toast")).to_contain_text(
        "Group billing's offsets of payments reset to the earliest offset: payments-0 → 0, payments-1 → 0."
    )
    expect(group.locator('tr[data-partition="payments-0"]')).to_have_attribute("data-lag", "7")
    expect(group).to_have_attribute("data-total-lag", "7")
    _shot(page, artifacts, "groups-reset")
    page.emulate_media(color_scheme="dark")
    page.goto(f"{lab_url}admin/topics/payments/")
    expect(page.locator("#partition-1")).to_be_visible()
    _shot(page, artifacts, "topic-dark")


def test_a_refresh_asked_for_while_another_is_in_flight_is_not_lost(page: Page, live_lab: LabServer) -> None:
    # The results refresh on each "lab-changed" and swap themselves whole (outerHTML). htmx queued a refresh asked for
    # while one was in flight on the element the first one's answer replaced, and dropped it with that element: after
    # two quick produces the browser kept the records from before the second (a browser test failed on it in CI's
    # conditions). Now the newer refresh replaces the one in flight (hx-sync="this:replace").
    log_in(page, live_lab)
    lab_url = new_lab(page, live_lab, "Refresh race", session_timeout_ms=6000)
    create_topic(page, "t", 1, 3)
    page.goto(f"{lab_url}admin/topics/t/messages/?partition=0&start=offset&limit=50")
    produce = page.locator("#form-produce")
    produce.get_by_label("Value", exact=True).fill("first")
    produce.get_by_label("Partition").fill("0")
    produce.get_by_role("button", name="Produce").click()
    expect(page.locator("#form-produce .toast")).to_contain_text("t-0 offset 0.")
    rows = page.locator("#results tr[data-offset]")
    expect(rows).to_have_count(1)

    # The next refresh's answer is read from the server now (one record) and held back, as a slow answer would be.
    held: list[tuple[Route, APIResponse]] = []

    def hold_the_first(route: Route) -> None:
        if held:
            route.continue_()
        else:
            held.append((route, route.fetch()))

    page.route(re.compile(r"/admin/topics/t/messages/records/"), hold_the_first)
    page.evaluate("htmx.trigger(document.body, 'lab-changed')")
    for _ in range(50):
        if held:
            break
        page.wait_for_timeout(100)
    assert held, "the first refresh never left the page"
    produce = page.locator("#form-produce")
    produce.get_by_label("Value", exact=True).fill("second")
    produce.get_by_label("Partition").fill("0")
    produce.get_by_role("button", name="Produce").click()
    expect(page.locator("#form-produce .toast")).to_contain_text("t-0 offset 1.")
    route, stale = held[0]
    with contextlib.suppress(Error):  # the page gave that request up: nothing to answer
        route.fulfill(response=stale)
    expect(rows).to_have_count(2)
    page.wait_for_timeout(1000)  # and the stale answer, had it been taken, would have come by now
    expect(rows).to_have_count(2)
