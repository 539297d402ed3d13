"""The websocket a lab page keeps open: who asks, join the lab's group, full state, then frames.

Thin, as consumers should be: the runtime decides what changed and renders it once for
every page; this forwards it. A page that connects (or reconnects after a server restart)
gets the lab's whole state first, so it never shows a stale fragment. When access may have
ended (lab.revocation), it checks again; if it has, the page is told why and the socket closes.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.template.loader import render_to_string

from lab import access, revocation
from lab.engine.errors import KafkaError
from lab.labs import live_of, on_workers
from lab.models import Lab
from lab.relay import relay
from lab.remote import RemotePage
from lab.runtime.broadcast import broadcaster, group_name
from lab.runtime.live import LiveLab

log = logging.getLogger(__name__)

# Close codes for a refused connection (sent before the handshake is accepted, so the
# browser sees the handshake fail; tests see the code).
NOT_LOGGED_IN = 4401
NOT_YOURS = 4404
# Closed after access ended (the demo ended, ...): the page says why and does not reconnect.
ACCESS_ENDED = 4410
# The lab's worker could not run it (the class server is full, no worker) or did not answer: the page
# tries again, as after a server restart (lab.js: below 4000). Not 1011, which autobahn refuses to send
# from a server (1000 or 3000-4999 only): the close raised, and the page stayed open with no full state.
UNAVAILABLE = 3503


def _visible(user: Any, slug: str, session: Any) -> tuple[Lab | None, str, str]:
    """The lab if ``user`` may see it, and the session's key and login hash (to check it again later)."""
    lab = access.visible_labs(user).filter(slug=slug).first()
    return lab, session.session_key or "", revocation.session_hash_of(session)


def log_unavailable(slug: str, error: BaseException) -> None:
    if isinstance(error, KafkaError | TimeoutError):
        log.warning("lab %s: a page could not subscribe: %s", slug, error)
    else:
        log.error("lab %s: a page could not subscribe", slug, exc_info=error)


class LabConsumer(AsyncWebsocketConsumer):
    live: LiveLab | RemotePage | None = None
    lab: Lab | None = None
    group: str | None = None
    user_group: str | None = None
    relayed = False  # the lab's frames come through lab.relay (a lab on a worker), not its group
    # The run of the lab and the frame this page has whole ("": not yet, frames pass as they come).
    run = ""
    seq = 0
    resyncs = 0  # full states asked for after a missed frame
    slug = ""
    user_pk = 0
    session_key = ""
    session_hash = ""

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=NOT_LOGGED_IN)
            return
        slug = self.scope["url_route"]["kwargs"]["slug"]
        lab, self.session_key, self.session_hash = await sync_to_async(_visible)(
            user, slug, self.scope["session"]
        )
        if lab is None:  # another person's lab, or none: the same answer for both
            await self.close(code=NOT_YOURS)
            return
        # A lab on a worker: the handshake completes now, and the owner sends the full state when
        # it has counted the page (no round trip holds the handshake, however busy the workers are).
        live: LiveLab | RemotePage = (
            RemotePage(slug) if on_workers() else await asyncio.to_thread(live_of, lab)
        )
        broadcaster.attach(asyncio.get_running_loop())
        self.lab = lab
        self.live = live
        self.slug = slug
        self.user_pk = user.pk
        self.group = group_name(slug)
        self.user_group = revocation.user_group(user.pk)
        await self.accept()
        await self.channel_layer.group_add(self.user_group, self.channel_name)
        if isinstance(live, RemotePage):
            # This process watches the lab once (lab.relay): one subscription to its worker, one copy
            # of each frame, and the full state for the pages that wait for it at once.
            self.relayed = True
            await relay.watch(self.channel_layer, self.group, self, live)
            return
        await self.channel_layer.group_add(self.group, self.channel_name)
        live.subscribe()
        await self.lab_frame(await asyncio.to_thread(live.full_state))

    async def unavailable(self, error: BaseException) -> None:
        """The lab's worker could not run it or did not answer: close; the page connects again, as
        after a restart, and the lab's page says why."""
        log_unavailable(self.slug, error)
        if self.live is None:
            return
        await self._leave()
        await self.close(code=UNAVAILABLE)

    async def lab_moved(self, event: dict[str, Any]) -> None:
        """The lab's worker stopped and another took the lab up: the relay subscribes there once for
        this process's pages, and the full state follows; frames pass as they come until then."""
        self.run = ""

    async def disconnect(self, code: int) -> None:
        await self._leave()

    async def _leave(self) -> None:
        if self.relayed and self.group is not None:
            await relay.unwatch(self.channel_layer, self.group, self)
        for group in (None if self.relayed else self.group, self.user_group):
            if group is not None:
                await self.channel_layer.group_discard(group, self.channel_name)
        self.relayed = False
        self.group = self.user_group = None
        live, self.live = self.live, None
        if isinstance(live, LiveLab):  # a lab on a worker: the relay tells it when the last page leaves
            live.unsubscribe()

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        """Pages do not talk back over the socket: controls are POSTs, which Django checks (CSRF)."""

    async def dispatch(self, message: dict[str, Any]) -> None:
        # Channels closes stale database connections (a hop to a worker thread) before every
        # message; a frame touches no database, and at a hundred pages times ten frames a
        # second that hop is most of the fan-out's cost.
        if message.get("type") == "lab.frame":
            await self.lab_frame(message)
            return
        await super().dispatch(message)

    async def lab_frame(self, event: dict[str, Any]) -> None:
        """A frame's fragments, or the full state. A frame carries only the fragments that changed, so a
        page that missed one (a full channel drops messages) would keep a stale fragment until it
        changed again: it asks for the full state instead, and skips frames its full state holds."""
        live = self.live
        if live is None:  # none once access ended: a frame already queued is dropped
            return
        seq, run = event.get("frame"), str(event.get("run", ""))
        if event.get("full"):
            self.run, self.seq = run, int(seq or 0)
        elif self.run and isinstance(seq, int):
            if run == self.run and seq <= self.seq:
                return  # drawn in the full state this page has
            if run != self.run or int(event.get("after", seq - 1)) > self.seq:
                # The full state is the latest frame, this one's changes and the missed ones' in it;
                # until it arrives (from a worker) frames pass as they come.
                self.run = ""
                await self._resync(live)
                return
            self.seq = seq
        await self.send(text_data=event["html"])

    async def _resync(self, live: LiveLab | RemotePage) -> None:
        self.resyncs += 1
        if isinstance(live, RemotePage):
            if self.group is not None:
                await relay.resync(self.group, self)
        else:
            await self.lab_frame(await asyncio.to_thread(live.full_state))

    async def access_check(self, event: dict[str, Any]) -> None:
        """Something may have taken this page's access away (lab.revocation): if so, say why and close."""
        if self.live is None:
            return
        if self.session_key and event.get("logged_out") == self.session_key:
            ending: revocation.Ending | None = revocation.LOGGED_OUT
        else:
            ending = await database_sync_to_async(revocation.ended)(
                user_pk=self.user_pk, session_hash=self.session_hash, slug=self.slug
            )
        if ending is None or self.live is None:
            return
        await self._leave()
        await self.send(text_data=render_to_string("lab/_access_ended.html", {"ending": ending}))
        await self.close(code=ACCESS_ENDED)
