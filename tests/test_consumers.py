"""The lab's websocket: who may watch, the full state on connect, then only what changed."""

from __future__ import annotations

import re

import pytest
from asgiref.sync import async_to_sync
from channels.testing import WebsocketCommunicator
from django.test import Client
from pytest_django.fixtures import Settings

from lab.asgi import application
from lab.consumers import NOT_LOGGED_IN, NOT_YOURS
from lab.labs import live_of
from tests.labhelpers import make_lab, make_user

# Channels closes the database connection around each of a consumer's queries, which would end a
# test's own transaction (the database is a file, as the lab's is): these tests commit their rows.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("stop_labs")]


def _headers(client: Client | None) -> list[tuple[bytes, bytes]]:
    headers = [(b"origin", b"http://127.0.0.1"), (b"host", b"127.0.0.1")]
    if client is not None:
        headers.append((b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode()))
    return headers


def _logged_in(name: str) -> tuple[Client, object]:
    user = make_user(name)
    client = Client()
    client.force_login(user)  # type: ignore[arg-type]
    return client, user


async def _refused(path: str, headers: list[tuple[bytes, bytes]]) -> tuple[bool, int | None]:
    communicator = WebsocketCommunicator(application, path, headers=headers)
    connected, code = await communicator.connect()
    await communicator.disconnect()
    return connected, code


def test_anonymous_and_other_people_are_refused(settings: Settings) -> None:
    settings.LAB_ZOOKEEPER = ""
    owner_client, owner = _logged_in("ada")
    lab = make_lab(owner)
    other_client, _ = _logged_in("grace")
    path = f"/ws/labs/{lab.slug}/"
    assert async_to_sync(_refused)(path, _headers(None)) == (False, NOT_LOGGED_IN)
    assert async_to_sync(_refused)(path, _headers(other_client)) == (False, NOT_YOURS)
    assert async_to_sync(_refused)("/ws/labs/nobody/", _headers(owner_client)) == (False, NOT_YOURS)


def test_the_owner_gets_the_full_state_then_a_partial_after_a_change(settings: Settings) -> None:
    settings.LAB_ZOOKEEPER = ""
    client, owner = _logged_in("ada")
    lab = make_lab(owner)
    live = live_of(lab)
    live.ready.result(30)
    live.wait_for_frame(lambda f: "plog:orders" in f.views)

    async def watch() -> tuple[str, str]:
        communicator = WebsocketCommunicator(application, f"/ws/labs/{lab.slug}/", headers=_headers(client))
        connected, _ = await communicator.connect()
        assert connected
        full = await communicator.receive_from(timeout=10)
        await _kill_broker_2()
        partial = ""
        for _ in range(50):  # frames keep coming while the clock runs; find the one with the kill
            partial = await communicator.receive_from(timeout=10)
            if 'data-state="killed"' in partial:
                break
        await communicator.disconnect()
        return full, partial

    async def _kill_broker_2() -> None:
        import asyncio

        await asyncio.wrap_future(live.act("kill", {"broker": "2"}))

    full, partial = async_to_sync(watch)()
    # The full state: every fragment, each out-of-band, so htmx swaps them in by id.
    for dom_id in (
        "lab-status",
        "clock-time",
        "clock-controls",
        "cluster-map",
        "plogs",
        "plog-orders",
        "groups",
        "clients",
        "zookeeper",
        "timeline",
        "charts",
        "lab-frame",
    ):
        assert f'id="{dom_id}" hx-swap-oob="true"' in full, dom_id
    # The partial: the map changed (broker 2 killed); the status did not, so it is not resent.
    assert 'id="cluster-map" hx-swap-oob="true"' in partial
    assert 'id="broker-2" class="broker state-killed" data-state="killed"' in partial
    assert 'id="lab-status"' not in partial
    assert 'id="lab-frame" hx-swap-oob="true"' in partial
    frames = [int(n) for n in re.findall(r'data-frame="(\d+)"', full + partial)]
    assert frames == sorted(frames)
    assert frames[-1] > frames[0]
    assert live.subscribers == 0  # the page left


def test_a_page_connecting_wakes_a_sleeping_lab_and_keeps_it_awake(settings: Settings) -> None:
    from tests.processes import wait_until

    settings.LAB_ZOOKEEPER = ""
    settings.LAB_SLEEP_AFTER_S = 0.001  # asleep as soon as nobody uses it
    client, owner = _logged_in("ada")
    lab = make_lab(owner)
    live = live_of(lab)
    live.ready.result(30)
    assert wait_until(lambda: live.asleep, 10)

    async def watch() -> tuple[str, str, bool]:
        communicator = WebsocketCommunicator(application, f"/ws/labs/{lab.slug}/", headers=_headers(client))
        connected, _ = await communicator.connect()
        assert connected
        full = await communicator.receive_from(timeout=10)
        # The lab woke when the page asked for it: the full state or the fresh frame right after it
        # (whichever the driver made first) says it slept.
        woke = full
        while "Slept: nobody watched" not in woke:
            woke = await communicator.receive_from(timeout=10)
        awake = not live.asleep
        await communicator.disconnect()
        return full, woke, awake

    full, woke, awake = async_to_sync(watch)()
    assert 'id="clock-time" hx-swap-oob="true"' in full
    assert 'id="lab-status" hx-swap-oob="true"' in woke
    assert "A page" in woke
    assert "woke it." in woke
    assert awake  # watched: it stays awake however short its grace period
    assert wait_until(lambda: live.asleep, 10)  # the page left: it sleeps again


def test_a_page_that_missed_a_frame_gets_the_full_state_again_and_skips_frames_it_holds(
    settings: Settings,
) -> None:
    # A full channel drops messages (channels' layers do, for groups), and a frame carries only the
    # fragments that changed: a page that missed one would keep a stale fragment. The frames a page
    # gets here are what the channel delivers after such a drop.
    from channels.layers import get_channel_layer

    from lab.runtime.broadcast import group_name

    settings.LAB_ZOOKEEPER = ""
    client, owner = _logged_in("ada")
    lab = make_lab(owner)
    live = live_of(lab)
    live.ready.result(30)
    live.wait_for_frame(lambda f: "plog:orders" in f.views)
    live.act("clock-pause", {}).result(10)  # no more frames of the lab's own: only the ones sent here
    paused = live.wait_for_frame(lambda f: f.views["clock-time"].paused)  # type: ignore[attr-defined]

    def frame(html: str, seq: int, after: int, run: str) -> dict[str, object]:
        group = group_name(lab.slug)
        return {"type": "lab.frame", "group": group, "html": html, "frame": seq, "after": after, "run": run}

    async def watch() -> tuple[str, str, str]:
        layer = get_channel_layer()
        communicator = WebsocketCommunicator(application, f"/ws/labs/{lab.slug}/", headers=_headers(client))
        connected, _ = await communicator.connect()
        assert connected
        await communicator.receive_from(timeout=10)  # the full state, as of the paused frame
        group = group_name(lab.slug)
        # A frame the full state already holds (an earlier one, late): not drawn over the newer state.
        await layer.group_send(group, frame("<p>late</p>", paused.seq, paused.seq - 1, live.run_id))
        skipped = await communicator.receive_nothing(timeout=0.5)
        assert skipped
        # The next frame: drawn, nothing asked for.
        await layer.group_send(group, frame("<p>next</p>", paused.seq + 1, paused.seq, live.run_id))
        nxt = await communicator.receive_from(timeout=10)
        # One missed (it followed frame paused.seq + 2, which never came): the full state instead, the
        # lab's latest frame drawn whole.
        await layer.group_send(group, frame("<p>gap</p>", paused.seq + 4, paused.seq + 3, live.run_id))
        after_gap = await communicator.receive_from(timeout=10)
        # A frame of another run of the lab (a worker took it over; its numbers start again): the same.
        await layer.group_send(group, frame("<p>other run</p>", 1, 0, "another-run"))
        other_run = await communicator.receive_from(timeout=10)
        nothing_more = await communicator.receive_nothing(timeout=0.5)
        await communicator.disconnect()
        assert nothing_more
        return nxt, after_gap, other_run

    nxt, after_gap, other_run = async_to_sync(watch)()
    assert nxt == "<p>next</p>"
    for full in (after_gap, other_run):
        assert 'id="cluster-map" hx-swap-oob="true"' in full  # the whole state, every fragment
        assert 'id="plogs" hx-swap-oob="true"' in full
        assert "<p>" not in full


def test_a_page_whose_lab_is_unavailable_is_closed_with_a_code_a_server_may_send_and_retries() -> None:
    from lab.consumers import UNAVAILABLE

    # daphne closes through autobahn, whose sendClose raises on any code but 1000 and 3000-4999 from a
    # server: with 1011 the close raised and the page stayed open, waiting for a full state.
    assert UNAVAILABLE == 1000 or 3000 <= UNAVAILABLE <= 4999
    assert UNAVAILABLE < 4000  # lab.js: 4000 and up is access ended (no retry); below, it connects again
