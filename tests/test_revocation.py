"""When someone loses access to a lab, the lab's page they have open stops streaming: the websocket says
why (the demo ended, the account was deactivated, ...) and closes. Real websockets (channels'
communicator on the ASGI app daphne serves) on the real channel layer, driven by the real pages."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.testing import WebsocketCommunicator
from django.test import Client
from pytest_django.fixtures import Settings

from lab.accounts.models import Role, set_role
from lab.asgi import application
from lab.classroom.models import Demo
from lab.consumers import ACCESS_ENDED, NOT_YOURS
from lab.labs import live_of
from lab.models import Lab
from tests.labhelpers import make_lab, make_user

# Transactions: the pages' changes are committed before the sockets are told to check again.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("stop_labs")]


@pytest.fixture(autouse=True)
def memory_store(settings: Settings) -> None:
    settings.LAB_ZOOKEEPER = ""


def _client(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _instructor(name: str) -> Any:
    user = make_user(name)
    set_role(user, Role.INSTRUCTOR)
    return user


def _running(lab: Lab) -> None:
    live = live_of(lab)
    live.ready.result(30)
    live.wait_for_frame(lambda f: "plog:orders" in f.views)
    # Something happens all the time, so frames keep coming (a lab where nothing changes sends none).
    live.act("client-producer", {"topic": "orders", "rate": "20", "name": "feeder"}).result(30)


class Page:
    """A lab page's websocket: connected, past its full state."""

    def __init__(self, lab: Lab, client: Client) -> None:
        cookie = f"sessionid={client.cookies['sessionid'].value}".encode()
        headers = [(b"origin", b"http://127.0.0.1"), (b"host", b"127.0.0.1"), (b"cookie", cookie)]
        self.socket = WebsocketCommunicator(application, f"/ws/labs/{lab.slug}/", headers=headers)

    async def open(self) -> Page:
        connected, code = await self.socket.connect(timeout=10)
        assert connected, code
        assert 'id="cluster-map"' in await self.socket.receive_from(timeout=10)
        return self

    async def until_closed(self, timeout_s: float = 10.0) -> tuple[str, int]:
        """What the page last showed and the close code, frames in between skipped."""
        last = ""
        while True:
            message = await self.socket.receive_output(timeout=timeout_s)
            if message["type"] == "websocket.close":
                return last, int(message.get("code", 1000))
            last = message.get("text", "")

    async def still_streaming(self) -> None:
        """Frames keep coming (the feeder writes, so a frame comes every 100 ms or so)."""
        for _ in range(3):
            message = await self.socket.receive_output(timeout=10)
            assert message["type"] == "websocket.send", message

    async def closed_quietly(self) -> None:
        assert await self.socket.receive_nothing(timeout=0.3)


def _watch(body: Callable[[], Awaitable[None]]) -> None:
    async def run() -> None:
        await asyncio.wait_for(body(), 60)

    async_to_sync(run)()


def test_a_demo_ending_closes_its_followers_pages_and_says_so() -> None:
    prof = _instructor("prof")
    lab = make_lab(prof, "Class demo")
    _running(lab)
    teacher = _client(prof)
    teacher.post(f"/classroom/labs/{lab.slug}/demo/")
    code = Demo.objects.get(lab=lab).join_code
    sam = _client(make_user("sam"))
    sam.post("/demos/join/", {"code": code})

    async def body() -> None:
        follower = await Page(lab, sam).open()
        presenter = await Page(lab, teacher).open()
        await follower.still_streaming()
        ended = await sync_to_async(teacher.post)(f"/classroom/labs/{lab.slug}/demo/end/")
        assert ended.status_code == 302
        shown, close = await follower.until_closed()
        assert close == ACCESS_ENDED
        assert 'id="access-ended" hx-swap-oob="true"' in shown
        assert "The demo has ended." in shown
        assert 'data-live="ended"' in shown
        await follower.closed_quietly()
        await presenter.still_streaming()  # the instructor's own page goes on
        await presenter.socket.disconnect()
        # Coming back is refused, as for anyone who may not see the lab.
        again = WebsocketCommunicator(
            application, f"/ws/labs/{lab.slug}/", headers=follower.socket.scope["headers"]
        )
        assert await again.connect(timeout=10) == (False, NOT_YOURS)

    _watch(body)


def test_leaving_the_demo_in_another_tab_closes_this_one() -> None:
    prof = _instructor("prof")
    lab = make_lab(prof, "Class demo")
    _running(lab)
    _client(prof).post(f"/classroom/labs/{lab.slug}/demo/")
    code = Demo.objects.get(lab=lab).join_code
    sam = _client(make_user("sam"))
    sam.post("/demos/join/", {"code": code})

    async def body() -> None:
        follower = await Page(lab, sam).open()
        await sync_to_async(sam.post)(f"/demos/{code}/leave/")
        shown, close = await follower.until_closed()
        assert close == ACCESS_ENDED
        assert "You left the demo." in shown

    _watch(body)


def test_a_deactivated_account_stops_watching_at_once() -> None:
    prof = _instructor("prof")
    ada = make_user("ada")
    lab = make_lab(ada, "Ada lab")
    _running(lab)
    own, instructor = _client(ada), _client(prof)

    async def body() -> None:
        page = await Page(lab, own).open()
        await page.still_streaming()
        await sync_to_async(instructor.post)("/people/ada/active/", {"active": "0"})
        shown, close = await page.until_closed()
        assert close == ACCESS_ENDED
        assert "Your account is no longer active." in shown

    _watch(body)


def test_an_instructor_made_a_student_stops_watching_other_peoples_labs() -> None:
    head = _instructor("head")
    ta = _instructor("ta")
    ada = make_user("ada")
    lab = make_lab(ada, "Ada lab")
    own_lab = make_lab(ta, "TA lab")
    _running(lab)
    _running(own_lab)
    assistant, ada_client, head_client = _client(ta), _client(ada), _client(head)

    async def body() -> None:
        watching = await Page(lab, assistant).open()  # an instructor sees every lab
        theirs = await Page(own_lab, assistant).open()
        owner = await Page(lab, ada_client).open()
        await sync_to_async(head_client.post)("/people/ta/role/", {"role": "student"})
        shown, close = await watching.until_closed()
        assert close == ACCESS_ENDED
        assert "You no longer have access to this lab." in shown
        await theirs.still_streaming()  # their own lab is still theirs
        await owner.still_streaming()  # and nobody else's page is touched
        await theirs.socket.disconnect()
        await owner.socket.disconnect()

    _watch(body)


def test_a_deleted_lab_closes_every_page_watching_it() -> None:
    prof = _instructor("prof")
    ada = make_user("ada")
    lab = make_lab(ada, "Ada lab")
    _running(lab)
    ada_client, prof_client = _client(ada), _client(prof)

    async def body() -> None:
        owner = await Page(lab, ada_client).open()
        instructor = await Page(lab, prof_client).open()
        await sync_to_async(Lab.objects.filter(pk=lab.pk).delete)()
        for page in (owner, instructor):
            shown, close = await page.until_closed()
            assert close == ACCESS_ENDED
            assert "This lab was deleted." in shown

    _watch(body)


def test_a_new_password_ends_the_sessions_that_had_the_old_one() -> None:
    prof = _instructor("prof")
    ada = make_user("ada")
    lab = make_lab(ada, "Ada lab")
    _running(lab)
    ada_client, prof_client = _client(ada), _client(prof)

    async def body() -> None:
        page = await Page(lab, ada_client).open()
        await sync_to_async(prof_client.post)("/people/ada/password/")
        shown, close = await page.until_closed()
        assert close == ACCESS_ENDED
        assert "Your password was changed." in shown

    _watch(body)


def test_logging_out_closes_that_sessions_pages_only() -> None:
    ada = make_user("ada")
    lab = make_lab(ada, "Ada lab")
    _running(lab)
    laptop, tablet = _client(ada), _client(ada)

    async def body() -> None:
        on_laptop = await Page(lab, laptop).open()
        on_tablet = await Page(lab, tablet).open()
        await sync_to_async(laptop.post)("/accounts/logout/")
        shown, close = await on_laptop.until_closed()
        assert close == ACCESS_ENDED
        assert "You were logged out" in shown
        await on_tablet.still_streaming()
        await on_tablet.socket.disconnect()

    _watch(body)


def test_changing_your_own_password_ends_your_other_sessions_pages() -> None:
    ada = make_user("ada", "first-password-7")
    lab = make_lab(ada, "Ada lab")
    _running(lab)
    laptop, tablet = _client(ada), _client(ada)

    async def body() -> None:
        on_tablet = await Page(lab, tablet).open()
        changed = await sync_to_async(laptop.post)(
            "/account/password/",
            {
                "old_password": "first-password-7",
                "new_password1": "second-pass-8x",
                "new_password2": "second-pass-8x",
            },
        )
        assert changed.status_code == 302
        shown, close = await on_tablet.until_closed()
        assert close == ACCESS_ENDED
        assert "Your password was changed." in shown
        # The laptop changed it: it stays logged in and watches on.
        on_laptop = await Page(lab, laptop).open()
        await on_laptop.still_streaming()
        await on_laptop.socket.disconnect()

    _watch(body)
