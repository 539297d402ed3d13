"""The classroom in real Chromium: a student's exercise graded live, and a demo a student follows.

Screenshots go to test-artifacts/ (classroom-*.png).
"""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser.helpers import log_in, new_lab
from tests.lab_server import REPO, LabServer

pytestmark = pytest.mark.long(135)

# Every control a viewer could press, if the page showed it.
CONTROLS = ".lab .act button, .lab .control-form, .lab .clock-controls button, .lab .player-controls button"


def add_student(server: LabServer, name: str) -> str:
    """A student account in the running server's database; returns its password."""
    password = secrets.token_urlsafe(12)
    code = (
        "from django.contrib.auth import get_user_model; import sys; "
        "get_user_model().objects.create_user(sys.argv[1], password=sys.argv[2])"
    )
    env = {**os.environ, "LAB_DATA_DIR": str(server.data_dir), "DJANGO_SETTINGS_MODULE": "lab.settings"}
    env.pop("LAB_ZOOKEEPER", None)
    subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); {code}", name, password],
        cwd=REPO,
        env=env,
        check=True,
        timeout=60,
        capture_output=True,
    )
    return password


def log_in_as(page: Page, server: LabServer, name: str, password: str) -> None:
    page.goto(server.url + "/accounts/login/")
    page.get_by_label("User name").fill(name)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    expect(page).to_have_url(server.url + "/")


def test_a_student_does_an_exercise_and_the_check_turns_green_without_a_reload(
    page: Page, live_lab: LabServer, artifacts: Path
) -> None:
    name = f"student-{secrets.token_hex(3)}"
    log_in_as(page, live_lab, name, add_student(live_lab, name))
    page.goto(live_lab.url + "/exercises/")
    item = page.locator('[data-exercise="1-partitions-and-offsets"]')
    expect(item).to_have_attribute("data-status", "not-started")
    page.screenshot(path=artifacts / "classroom-exercises.png", full_page=True)
    item.get_by_role("link", name="Partitions and offsets").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Partitions and offsets")
    page.screenshot(path=artifacts / "classroom-exercise-page.png", full_page=True)
    page.get_by_role("button", name=re.compile("Start: make my lab")).click()
    expect(page).to_have_url(re.compile(r"/labs/[a-z0-9-]+/$"))
    expect(page.locator("#live-status")).to_have_text("● live", timeout=20_000)
    checks = page.locator("#exercise-checks")
    expect(checks).to_have_attribute("data-phase", "grading", timeout=30_000)
    check = checks.locator('.check[data-check="0"]')
    expect(check).to_have_attribute("data-passed", "false")
    expect(check).to_contain_text("not yet")

    # Predict first: the explanation shows once the answer is in.
    question = page.locator("#question-0")
    question.get_by_label("clicks-3").check()
    question.get_by_role("button", name="Lock in my prediction").click()
    expect(page.locator("#question-0 .verdict")).to_have_text("✓ You predicted it.")
    expect(page.locator("#question-0 .explain")).to_contain_text("murmur2")

    # A mark that a reload would wipe out.
    page.evaluate("window.__notReloaded = true")
    form = page.locator("#form-produce")
    form.get_by_label("Topic").fill("clicks")
    form.get_by_label("Records").fill("5")
    form.get_by_label("Key").fill("abc")
    form.get_by_role("button", name="Produce").click()
    expect(page.locator("#toast")).to_contain_text("5 of 5 record(s) acknowledged")
    expect(check).to_have_attribute("data-passed", "true", timeout=10_000)
    expect(check).to_contain_text("passed")
    expect(checks).to_have_attribute("data-complete", "true")
    expect(checks.locator(".exercise-done")).to_contain_text("Exercise complete")
    assert page.evaluate("window.__notReloaded === true"), "the page was reloaded"
    page.screenshot(path=artifacts / "classroom-exercise-passed.png", full_page=True)
    checks.screenshot(path=artifacts / "classroom-exercise-checks.png")

    # Progress is saved: the list says so.
    page.goto(live_lab.url + "/exercises/")
    expect(page.locator('[data-exercise="1-partitions-and-offsets"]')).to_have_attribute(
        "data-status", "complete", timeout=10_000
    )


def console_errors(tab: Page) -> list[str]:
    """Every error the page's console shows (htmx's among them) and every uncaught exception."""
    errors: list[str] = []
    tab.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    tab.on("pageerror", lambda error: errors.append(f"uncaught: {error}"))
    return errors


def failed_load(status: int) -> str:
    """Chromium's console line for a request answered with ``status`` (one the test makes on purpose)."""
    reasons = {400: "Bad Request", 403: "Forbidden"}
    return f"Failed to load resource: the server responded with a status of {status} ({reasons[status]})"


def test_a_student_follows_an_instructors_demo_read_only(
    page: Page, browser: Browser, live_lab: LabServer, artifacts: Path
) -> None:
    presenter_errors = console_errors(page)
    # The instructor (the demo user) makes a lab and runs it as a demo, in presenter mode.
    log_in(page, live_lab)
    lab_url = new_lab(page, live_lab, "Class demo", session_timeout_ms=1000)
    page.get_by_role("button", name="Run this lab as a demo").click()
    expect(page).to_have_url(re.compile(r"/labs/[a-z0-9-]+/\?present=1$"))
    code = page.locator("#join-code").inner_text().strip()
    assert re.fullmatch(r"[A-Z2-9]{6}", code), code
    expect(page.locator("#live-status")).to_have_text("● live")
    # This lab listens on loopback only: the panel says students cannot reach it, and how to fix that,
    # rather than showing them an address that is this machine only.
    expect(page.locator("#join-unreachable")).to_contain_text("make run HOST=0.0.0.0")
    expect(page.locator("#join-url")).to_have_count(0)

    # A student joins with the code, from another browser.
    name = f"viewer-{secrets.token_hex(3)}"
    password = add_student(live_lab, name)
    context = browser.new_context(viewport={"width": 1200, "height": 800})
    student = context.new_page()
    student.set_default_timeout(15_000)
    student_errors = console_errors(student)
    student_sockets: list[str] = []
    student.on("websocket", lambda socket: student_sockets.append(socket.url))
    try:
        log_in_as(student, live_lab, name, password)
        student.goto(live_lab.url + "/exercises/")
        join = student.locator("#form-join")
        wrong = "ZZZZZZ" if code != "ZZZZZZ" else "YYYYYY"
        join.get_by_label("Join code").fill(wrong)
        join.get_by_role("button", name="Join").click()
        expect(student.locator("#join-error")).to_contain_text(f"No demo has the code {wrong}")
        expect(student.locator("#form-join input[name=code]")).to_have_attribute("aria-invalid", "true")
        join = student.locator("#form-join")
        join.get_by_label("Join code").fill(code.lower())
        join.get_by_role("button", name="Join").click()
        expect(student).to_have_url(page.url.split("?")[0])
        expect(student.locator("#readonly-note")).to_contain_text("You are following demo's demo, read-only.")
        expect(student.locator("#live-status")).to_have_text("● live", timeout=20_000)
        expect(student.locator("#broker-1")).to_have_attribute("data-state", "alive")
        # No working control: none is shown, and a POST is refused.
        expect(student.locator("#cluster-map th.broker")).to_have_count(3)
        assert (
            student.locator(CONTROLS).evaluate_all("els => els.filter(e => e.offsetParent !== null).length")
            == 0
        )
        status = student.evaluate(
            """async (url) => (await fetch(url, {method: 'POST', headers: {'X-CSRFToken':
                document.body.getAttribute('hx-headers').match(/"X-CSRFToken": "([^"]+)"/)[1]},
                body: new URLSearchParams({broker: '2'})})).status""",
            page.url.split("?")[0] + "act/kill/",
        )
        assert status == 403
        student.bring_to_front()
        student.screenshot(path=artifacts / "classroom-demo-student.png", full_page=True)

        # The instructor sees the viewer, then kills broker 1; the student's page shows it, live.
        page.bring_to_front()
        expect(page.locator("#demo-viewers .viewers")).to_have_attribute("data-count", "1", timeout=10_000)
        page.locator("#broker-1 button[data-action=kill]").click()
        expect(page.locator("#toast")).to_contain_text("Broker 1 killed.")
        expect(student.locator("#broker-1")).to_have_attribute("data-state", "killed", timeout=5000)
        expect(student.locator("#timeline .ev[data-kind=broker_killed]").first).to_be_attached()
        assert (
            student.locator(CONTROLS).evaluate_all("els => els.filter(e => e.offsetParent !== null).length")
            == 0
        )
        page.screenshot(path=artifacts / "classroom-demo-presenter.png", full_page=True)
        student.bring_to_front()
        student.screenshot(path=artifacts / "classroom-demo-student-after-kill.png", full_page=True)

        # The instructor ends the demo: the student's open page says so at once and stops following.
        page.bring_to_front()
        page.get_by_role("button", name="End the demo").click()
        expect(page).to_have_url(lab_url)
        expect(page.locator("#live-status")).to_have_text("● live")
        ended = student.locator("#access-ended")
        expect(ended).to_contain_text("The demo has ended.")
        expect(ended).to_be_visible()
        expect(student.locator("#live-status")).to_have_text("■ ended")
        expect(ended.get_by_role("link", name="Exercises and demos")).to_be_visible()
        student.bring_to_front()
        student.screenshot(path=artifacts / "classroom-demo-ended-live.png", full_page=True)
        assert len(student_sockets) == 1, student_sockets  # it does not knock again
        expected = {failed_load(400), failed_load(403)}  # the wrong code and the refused kill, above
        assert [e for e in student_errors if e not in expected] == []
        # A reload shows a page that says so, not a bare 404.
        assert student.reload().status == 410  # type: ignore[union-attr]
        expect(student.get_by_role("heading", level=1)).to_have_text("The demo has ended")
        expect(student.get_by_role("link", name="Exercises, or join another demo")).to_be_visible()
        student.screenshot(path=artifacts / "classroom-demo-ended-reload.png", full_page=True)
    finally:
        context.close()
    # The presenter's page (in presenter mode and after the end) showed no error at all.
    assert presenter_errors == []


def test_a_scenario_opens_as_a_lab_and_plays_with_its_table_updating_live(
    page: Page, live_lab: LabServer, artifacts: Path
) -> None:
    name = f"player-{secrets.token_hex(3)}"
    log_in_as(page, live_lab, name, add_student(live_lab, name))
    page.goto(live_lab.url + "/scenarios/")
    item = page.locator('[data-scenario="consumer-rewind"]')
    expect(item).to_contain_text("A consumer rewinds and reads again")
    item.get_by_role("button", name="Open as a lab").click()
    expect(page).to_have_url(re.compile(r"/labs/[a-z0-9-]+/$"))
    expect(page.locator("#live-status")).to_have_text("● live", timeout=20_000)
    player = page.locator("#scenario-player")
    expect(player).to_have_attribute("data-status", "ready", timeout=20_000)
    rows = player.locator("tr.step")
    expect(rows).to_have_count(9)
    page.locator("button[data-player=step]").click()
    expect(page.locator("#player-toast")).to_contain_text("Step 1: create topic events")
    expect(rows.nth(0)).to_have_attribute("data-state", "passed", timeout=10_000)
    expect(rows.nth(1)).to_have_attribute("data-state", "pending")
    expect(player).to_have_attribute("data-mode", "paused")
    page.locator("button[data-player=play]").click()
    expect(player).to_have_attribute("data-status", "passed", timeout=30_000)
    expect(player.locator('tr.step[data-state="passed"]')).to_have_count(9)
    expect(page.locator("#plog-events")).to_be_attached()
    page.screenshot(path=artifacts / "classroom-scenario-player.png", full_page=True)
    player.screenshot(path=artifacts / "classroom-scenario-table.png")


def test_a_scenario_is_cancelled_from_its_page(page: Page, live_lab: LabServer, artifacts: Path) -> None:
    name = f"cancel-{secrets.token_hex(3)}"
    log_in_as(page, live_lab, name, add_student(live_lab, name))
    page.goto(live_lab.url + "/scenarios/")
    page.locator('[data-scenario="leader-failover"]').get_by_role("button", name="Open as a lab").click()
    expect(page).to_have_url(re.compile(r"/labs/[a-z0-9-]+/$"))
    expect(page.locator("#live-status")).to_have_text("● live", timeout=20_000)
    player = page.locator("#scenario-player")
    expect(player).to_have_attribute("data-status", "ready", timeout=20_000)
    cancel = page.locator("button[data-player=cancel]")
    expect(cancel).to_be_disabled()  # nothing to cancel before the first step
    page.locator("button[data-player=step]").click()
    rows = player.locator("tr.step")
    expect(rows.nth(0)).to_have_attribute("data-state", "passed", timeout=10_000)
    expect(player).to_have_attribute("data-mode", "paused")
    page.once("dialog", lambda dialog: dialog.accept())
    page.locator("button[data-player=cancel]").click()
    expect(page.locator("#player-toast")).to_contain_text("Scenario cancelled before step 2")
    expect(player).to_have_attribute("data-status", "cancelled", timeout=10_000)
    expect(player.locator('tr.step[data-state="skipped"]')).to_have_count(rows.count() - 1)
    expect(page.locator("button[data-player=play]")).to_be_disabled()
    expect(page.locator("button[data-player=cancel]")).to_be_disabled()
    player.screenshot(path=artifacts / "classroom-scenario-cancelled.png")
