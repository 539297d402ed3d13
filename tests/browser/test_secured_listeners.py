"""A lab with a SASL_SSL listener in real Chromium, end to end: made from the home page's form, its
listener and CA on the connect panel (the CA downloaded as a person would), a user added in the
topic admin's Users, then a real client logs in with that user over TLS verified by that CA.
Screenshots go to test-artifacts/secured-*.png."""

from __future__ import annotations

import re
from pathlib import Path

from confluent_kafka import Producer
from playwright.sync_api import Page, expect

from tests.browser.helpers import log_in
from tests.lab_server import LabServer


def test_a_secured_lab_from_the_form_to_a_client_that_logs_in(
    page: Page, live_lab: LabServer, artifacts: Path, tmp_path: Path
) -> None:
    log_in(page, live_lab)
    form = page.locator("#form-new-lab")
    form.get_by_label("Name").fill("Locked down")
    form.get_by_label("Brokers").fill("1")
    form.get_by_label("SASL_SSL").check()
    form.screenshot(path=str(artifacts / "secured-new-lab.png"))
    form.get_by_role("button", name="Create lab").click()
    expect(page).to_have_url(re.compile(r"/labs/[a-z0-9-]+/$"))
    expect(page.locator("#live-status")).to_have_text("● live")
    slug = page.url.rstrip("/").rsplit("/", 1)[1]

    panel = page.locator("#view-connect")
    secured = panel.get_by_role("textbox", name="SASL_SSL")
    expect(secured).to_have_value(re.compile(r"^127\.0\.0\.1:\d+$"))
    bootstrap = secured.input_value()
    expect(panel.locator('[data-listener="SASL_SSL"] .listener[data-state=open]')).to_have_count(1)
    with page.expect_download() as downloading:
        panel.get_by_role("link", name=re.compile("Download the lab's CA")).click()
    ca = tmp_path / downloading.value.suggested_filename
    downloading.value.save_as(ca)
    assert ca.name == f"{slug}-ca.pem"
    assert ca.read_bytes().startswith(b"-----BEGIN CERTIFICATE-----")
    page.screenshot(path=str(artifacts / "secured-panel.png"), full_page=True)

    page.goto(f"{live_lab.url}/labs/{slug}/admin/users/")
    users = page.locator("#form-user")
    users.get_by_label("Name").fill("alice")
    users.get_by_label("Password").fill("alice-secret")
    users.get_by_role("button", name="Save user").click()
    expect(page.locator("#form-user .toast")).to_contain_text(
        "User alice has a SCRAM-SHA-256 credential (4096 iterations). User alice has a SCRAM-SHA-512"
    )
    expect(page.locator("#form-user .toast")).not_to_contain_text("asked for")
    expect(page.locator('#users-list tr[data-user="alice"]')).to_contain_text("SCRAM-SHA-512")
    page.screenshot(path=str(artifacts / "secured-users.png"), full_page=True)

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "SCRAM-SHA-256",
            "sasl.username": "alice",
            "sasl.password": "alice-secret",
            "ssl.ca.location": str(ca),
            "message.timeout.ms": 30_000,
        }
    )
    failed: list[object] = []
    producer.produce("hello", b"from alice", on_delivery=lambda error, _: error and failed.append(error))
    assert producer.flush(45) == 0
    assert not failed
