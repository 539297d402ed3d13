"""The People page in real Chromium: the instructor `make run` creates adds a student, who logs in with
the password shown once; a new password locks the old one out.

Screenshots go to test-artifacts/ (people-*.png).
"""

from __future__ import annotations

import secrets
from pathlib import Path

from playwright.sync_api import Browser, Page, expect

from tests.browser.helpers import log_in
from tests.lab_server import LabServer


def test_the_instructor_adds_a_student_who_logs_in_with_the_password_shown_once(
    page: Page, browser: Browser, live_lab: LabServer, artifacts: Path
) -> None:
    log_in(page, live_lab)
    page.get_by_role("link", name="Account").click()
    page.get_by_role("link", name="People").first.click()
    expect(page.get_by_role("heading", level=1)).to_have_text("People")
    name = f"pupil-{secrets.token_hex(3)}"
    form = page.locator("#form-add-people")
    form.get_by_label("User names").fill(f"{name}\n")
    form.get_by_role("button", name="Add").click()
    row = page.locator(f'#made tr[data-new="{name}"]')
    password = row.locator("input").input_value()
    assert len(password) >= 12
    expect(page.locator(f'#people tr[data-person="{name}"]')).to_have_attribute("data-role", "student")
    page.screenshot(path=artifacts / "people-added.png", full_page=True)

    context = browser.new_context()
    student = context.new_page()
    student.set_default_timeout(15_000)
    try:
        student.goto(live_lab.url + "/accounts/login/")
        student.get_by_label("User name").fill(name)
        student.get_by_label("Password").fill(password)
        student.get_by_role("button", name="Log in").click()
        expect(student).to_have_url(live_lab.url + "/")
        expect(student.locator(".who")).to_contain_text(name)

        # A new password: the old one no longer works, and the student's open session ends.
        page.goto(live_lab.url + "/people/")
        page.locator(f'#people tr[data-person="{name}"]').get_by_role("button", name="New password").click()
        fresh = page.locator(f'#made tr[data-new="{name}"] input').input_value()
        assert fresh != password
        student.goto(live_lab.url + "/account/")
        expect(student).to_have_url(live_lab.url + "/accounts/login/?next=/account/")
        student.get_by_label("User name").fill(name)
        student.get_by_label("Password").fill(password)
        student.get_by_role("button", name="Log in").click()
        expect(student.locator("#login-error")).to_contain_text("do not match")
    finally:
        context.close()
