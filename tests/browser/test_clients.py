"""The Clients view in real Chromium, on a phone (390 px) and a laptop (1440 px).

Real clients (kafka-python) connect to a lab served with listeners; the view the lab's driver built
for them is rendered by the page's own templates and stylesheet. The lab page served by the site
shows the panel and its one-line empty state. Screenshots go to test-artifacts/clients-*.png.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kafka import KafkaConsumer, KafkaProducer
from playwright.sync_api import Page, expect

from lab.cluster import ServedCluster, free_ports, serve
from lab.labs import TemplateRenderer
from tests.browser.helpers import OVERFLOWING, VIEWPORTS, log_in
from tests.lab_server import REPO, LabServer
from tests.processes import wait_until

pytestmark = pytest.mark.long(70)

STYLESHEET = (REPO / "lab" / "static" / "lab.css").read_text()
EMPTY = re.compile(
    r"^(No real client is connected\. Point one at bootstrap\.servers=\S+, e\.g\. kcat -b \S+ -L\."
    r"|This lab has no Kafka listeners, so real clients cannot connect to it\.)$"
)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[ServedCluster]:
    with serve(brokers=3, port=free_ports(3), data_dir=tmp_path, topics=[]) as cluster:
        yield cluster


def test_the_lab_page_has_the_clients_view_with_a_one_line_empty_state(
    screen: tuple[str, Page], live_lab: LabServer, artifacts: Path
) -> None:
    name, page = screen
    log_in(page, live_lab)
    page.goto(live_lab.url + "/labs/demo/")
    expect(page.locator("#live-status")).to_have_text("● live")
    page.get_by_role("link", name="Clients", exact=True).click()
    panel = page.locator("#view-clients")
    expect(panel.get_by_role("heading", name="Clients")).to_be_in_viewport()
    empty = panel.locator("#wire-clients p.empty")
    expect(empty).to_have_count(1)
    expect(empty).to_have_text(EMPTY)
    assert page.evaluate(OVERFLOWING, "#view-clients") == []
    panel.screenshot(path=artifacts / f"clients-empty-{name}.png")


def test_connected_clients_are_listed_and_fit_the_screen(
    screen: tuple[str, Page], served: ServedCluster, artifacts: Path
) -> None:
    name, page = screen
    producer = KafkaProducer(bootstrap_servers=served.bootstrap_servers, client_id="checkout", acks="all")
    consumer = KafkaConsumer(
        bootstrap_servers=served.bootstrap_servers,
        client_id="billing-reader-with-a-long-name",
        group_id="billing",
        auto_offset_reset="earliest",
    )
    try:
        for i in range(20):
            producer.send("orders", value=b"order-%d" % i)  # auto-created on first use
        producer.flush(30)
        consumer.subscribe(["orders"])
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not consumer.poll(timeout_ms=200):
            pass

        def view() -> object:
            return served.lab.frame.views.get("wire-clients")

        assert wait_until(
            lambda: {r.client_id for r in view().rows} >= {"checkout", "billing-reader-with-a-long-name"}, 15
        )  # type: ignore[attr-defined]
        fragment = TemplateRenderer("cluster").fragment("wire-clients", served.lab.frame.views)
    finally:
        producer.close()
        consumer.close()
    page.set_content(
        f"<!doctype html><html><head><meta name=viewport content='width=device-width'><style>{STYLESHEET}</style></head>"
        f"<body><main class='wide'><div class='lab'><div class='board'><div class='col-main'>"
        f"<section class='panel' id='view-clients'>{fragment}</section></div>"
        "<div class='col-side'><section class='panel'>the timeline's column</section></div></div></div>"
        "</main></body></html>"
    )
    table = page.locator("#wire-clients")
    rows = table.locator("tr.wire-client")
    assert rows.count() >= 2
    checkout = table.locator("tr.wire-client[data-client-id='checkout']").first
    expect(checkout).to_contain_text("kafka-python")
    expect(checkout).to_contain_text(re.compile(r"127\.0\.0\.1:\d+"))
    expect(checkout).to_contain_text(re.compile(r"broker [123]"))
    for label in ("Requests/s", "In flight", "Last error", "Connected since"):
        cell = checkout.locator(f"td[data-label='{label}']")
        expect(cell).to_be_visible()
    expect(table.locator(".wire-head")).to_contain_text("bootstrap.servers=" + served.bootstrap_servers)
    page.screenshot(path=artifacts / f"clients-{name}.png", full_page=True)
    assert page.evaluate(OVERFLOWING, "#view-clients") == []
    assert int(page.evaluate("document.scrollingElement.scrollWidth")) <= VIEWPORTS[name][0]
    if name == "laptop":  # beside the timeline's column, the table still fits its panel: no scrolling
        assert page.evaluate(
            "(el => el.scrollWidth <= el.clientWidth)(document.getElementById('wire-clients'))"
        )
    page.screenshot(path=artifacts / f"clients-{name}.png", full_page=True)


def test_the_timelines_real_clients_filter_shows_what_they_did(
    page: Page, served: ServedCluster, artifacts: Path
) -> None:
    producer = KafkaProducer(bootstrap_servers=served.bootstrap_servers, client_id="checkout", acks="all")
    for i in range(50):
        producer.send("payments", value=b"p-%d" % i)  # created by asking for its metadata
    producer.flush(30)
    producer.close()

    def summed_up() -> bool:
        events = served.lab.frame.views["timeline"].events  # type: ignore[attr-defined]
        return any(e.kind in ("client_activity", "client_errors") for e in events)

    # The producer's summary comes 5 s of virtual time after its first record, then a frame shows it.
    assert wait_until(summed_up, 15)
    renderer = TemplateRenderer("cluster")
    views = served.lab.frame.views
    script = (REPO / "lab" / "static" / "lab.js").read_text()
    page.set_content(
        f"<!doctype html><html><head><style>{STYLESHEET}</style></head><body>"
        f"<div class='lab' data-lab='cluster'>{renderer.fragment('timeline-filters', views)}"
        f"{renderer.fragment('timeline', views)}</div><script>{script}</script></body></html>"
    )
    page.get_by_role("button", name="Real clients").click()
    shown = page.locator("#timeline .ev:visible")
    expect(shown.first).to_be_visible()
    kinds = shown.evaluate_all("rows => rows.map(r => r.dataset.kind)")
    assert set(kinds) <= {
        "client_connected",
        "client_closed",
        "client_activity",
        "client_errors",
        "topic_auto_created",
    }
    assert {"client_connected", "topic_auto_created"} <= set(kinds)
    # Its first Metadata answers were LEADER_NOT_AVAILABLE (the topic had no leader yet): named too.
    expect(shown.filter(has_text="(client.id checkout) produced 50 records to payments")).to_have_count(1)
    expect(page.locator("#timeline .ev[data-kind='broker_registered']").first).to_be_hidden()
    page.screenshot(path=artifacts / "clients-timeline.png", full_page=True)
