"""A web process watches each lab once, however many of its pages do: one subscription to the lab's
worker, one copy of each frame, one full state for the pages that wait at once.

With labs on workers (``make run WORKERS=N``) a frame travels over Redis. Were each page's websocket in
the lab's group, a frame of the instructor's demo watched by a class of 30 would be packed, stored in
Redis, popped and unpacked 30 times (channels-redis does each member's copy on its own); were each page
subscribed to the lab's worker, a class opening the demo would queue 30 subscriptions there, each
drawing the full state and sending it over Redis. Here the web process joins each watched lab's group
once, with a channel of its own, and hands each frame to every page of this process that watches the
lab; and it subscribes to the lab's worker once, with a channel of the lab's own, where the full
states it asks for arrive:

- a page that opens (or missed a frame, or whose lab moved to another worker) waits for the lab's full
  state; one is asked for at a time per lab, and it serves every waiting page that missed no frame
  newer than it (no frame of the lab had reached this process since it was drawn): a class opening
  the demo at once costs its worker one full state, not thirty; a page that did miss a newer frame
  gets the next one;
- the subscription is renewed every ``LAB_PAGE_RENEW_S`` while a page watches (the worker counts this
  process as one page: a watched lab stays awake) and ended with the last page;
- a lab that moved (``lab.moved``) is subscribed to again on its new worker, once;
- a lab whose worker cannot run it (the class server is full, no worker, no answer) tells each page
  that waited (``unavailable``): the page closes and connects again, as after a restart.

A message for a lab's group says which (``group``: frames and ``lab.moved`` do); the relay runs on
daphne's loop, where the pages' consumers run.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Protocol

from django.conf import settings

log = logging.getLogger(__name__)

FRAME = "lab.frame"
MOVED = "lab.moved"
FULL_STATE_S = 15.0  # a full state the worker said it sent and that has not come: asked for again


class Page(Protocol):
    async def lab_frame(self, event: dict[str, Any]) -> None: ...

    async def lab_moved(self, event: dict[str, Any]) -> None: ...

    async def unavailable(self, error: BaseException) -> None: ...


class Owner(Protocol):
    """The lab's worker, as the relay reaches it (``lab.remote.RemotePage``); calls that may read
    ZooKeeper to find the worker, so the relay makes them off the loop."""

    def subscribe(self, channel: str) -> Future[Any]: ...

    def renew(self) -> None: ...

    def unsubscribe(self) -> None: ...


@dataclass(eq=False)
class _Lab:
    """One watched lab in this process."""

    group: str
    owner: Owner
    channel: str = ""  # where the worker sends this lab's full states
    pages: set[Page] = field(default_factory=set)
    # Pages that want the full state, with the last frame (run, seq) handed out before they asked.
    waiting: dict[Page, tuple[str, int]] = field(default_factory=dict)
    asking: bool = False  # a full state asked for and not arrived
    last: tuple[str, int] = ("", 0)  # the last frame handed out (run, seq)
    moves: int = 0  # lab.moved heard: an answer from the worker it left is not awaited
    asked: int = 0  # full states asked for
    tasks: list[asyncio.Task[None]] = field(default_factory=list)  # its receiver and its renewals


class Relay:
    def __init__(self) -> None:
        self._labs: dict[str, _Lab] = {}
        self._channel = ""
        self._layer: Any = None
        self._receiving: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()
        self.received = 0  # messages taken from the lab's groups (one per frame, however many pages)
        self.subscribes = 0  # full states asked of workers (one for the pages waiting at once)

    def watching(self, group: str) -> int:
        """How many of this process's pages watch ``group``."""
        lab = self._labs.get(group)
        return len(lab.pages) if lab is not None else 0

    async def watch(self, layer: Any, group: str, page: Page, owner: Owner | None = None) -> None:
        """``page`` gets ``group``'s frames from now on (the group is joined with the first page); with
        ``owner`` (the lab's worker), the lab's full state first, subscribed once per process."""
        async with self._lock:
            receiving = self._receiving
            loop = asyncio.get_running_loop()
            if (
                receiving is None
                or receiving.done()
                or receiving.get_loop() is not loop
                or layer is not self._layer
            ):
                await self._start(layer)
            lab = self._labs.get(group)
            if lab is None:
                lab = self._labs[group] = _Lab(group, owner or _NoOwner())
                await layer.group_add(group, self._channel)
                if owner is not None:
                    lab.channel = await layer.new_channel()
                    lab.tasks.append(asyncio.get_running_loop().create_task(self._full_states(layer, lab)))
                    lab.tasks.append(asyncio.get_running_loop().create_task(self._renew(lab)))
            lab.pages.add(page)
        if owner is not None:
            self._want_full_state(lab, page)

    async def resync(self, group: str, page: Page) -> None:
        """``page`` missed a frame: it gets the lab's full state again (with the others that want it)."""
        lab = self._labs.get(group)
        if lab is not None and page in lab.pages and lab.channel:
            self._want_full_state(lab, page)

    async def unwatch(self, layer: Any, group: str, page: Page) -> None:
        """``page`` gets no more of ``group``'s frames (the group is left with the last page, and the
        lab's worker told this process watches no more)."""
        async with self._lock:
            lab = self._labs.get(group)
            if lab is None or page not in lab.pages:
                return
            lab.pages.discard(page)
            lab.waiting.pop(page, None)
            if lab.pages:
                return
            del self._labs[group]
            for task in lab.tasks:
                task.cancel()
            if lab.channel:
                _off_loop(lab.owner.unsubscribe)
            with contextlib.suppress(Exception):  # Redis away: the group's members expire there
                await layer.group_discard(group, self._channel)

    async def close(self) -> None:
        """Stop receiving (before the layer's pools close, so the receiver does not see Redis go away)."""
        tasks = [t for lab in self._labs.values() for t in lab.tasks]
        if self._receiving is not None:
            tasks.append(self._receiving)
            self._receiving = None
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    # ------------------------------------------------------------------ full states

    def _want_full_state(self, lab: _Lab, page: Page) -> None:
        lab.waiting[page] = lab.last
        if not lab.asking:
            self._ask(lab)

    def _ask(self, lab: _Lab) -> None:
        """Ask the lab's worker for its full state (one request on its way per lab)."""
        lab.asking = True
        self.subscribes += 1
        lab.asked += 1
        asked, moves = lab.asked, lab.moves

        async def subscribe() -> None:
            try:
                answer = await asyncio.to_thread(lab.owner.subscribe, lab.channel)
                await asyncio.wrap_future(answer)
            except Exception as error:
                if lab.moves == moves:  # (a request to a worker the lab left is not this one's)
                    await self._refused(lab, error)
                return
            # The worker sent it before it answered; should it never come (expired in Redis), ask again.
            await asyncio.sleep(FULL_STATE_S)
            if lab.asking and lab.asked == asked and self._labs.get(lab.group) is lab:
                self._ask(lab)

        _keep(asyncio.get_running_loop().create_task(subscribe()))

    async def _refused(self, lab: _Lab, error: BaseException) -> None:
        """The worker cannot run the lab or did not answer: every page waiting hears it."""
        waiting, lab.waiting, lab.asking = list(lab.waiting), {}, False
        for page in waiting:
            try:
                await page.unavailable(error)
            except Exception:
                log.exception("a page could not be told its lab is unavailable")

    async def _answered(self, lab: _Lab, full: dict[str, Any]) -> None:
        """A full state serves every waiting page that missed no frame newer than it (a frame of the
        same run this relay handed out before the page came); the others get the next one, drawn
        later. A full state of another run (the lab started again, or moved) serves: it is the
        newer, and a frame of the old run that follows makes the page ask again."""
        lab.asking = False
        run, seq = str(full.get("run", "")), int(full.get("frame") or 0)
        served = [p for p, (r, s) in lab.waiting.items() if r != run or s <= seq]
        for page in served:
            del lab.waiting[page]
        if lab.waiting:
            self._ask(lab)
        for page in served:
            try:
                await page.lab_frame(full)
            except Exception:
                log.exception("a full state could not be handed to a page")

    async def _full_states(self, layer: Any, lab: _Lab) -> None:
        while True:
            try:
                message = await layer.receive(lab.channel)
            except asyncio.CancelledError:
                raise
            except Exception:  # Redis restarting: try again shortly
                log.warning("the relay could not receive %s's full state; trying again", lab.group)
                await asyncio.sleep(0.5)
                continue
            if message.get("type") == FRAME:
                await self._answered(lab, message)

    async def _renew(self, lab: _Lab) -> None:
        """The worker counts this process's pages of the lab while it renews: if this process dies,
        the count lapses and the lab may sleep."""
        while True:
            await asyncio.sleep(float(settings.LAB_PAGE_RENEW_S))
            _off_loop(lab.owner.renew)

    # ------------------------------------------------------------------ frames

    async def _start(self, layer: Any) -> None:
        """Receive on a channel of this loop and layer; the pages of another loop (a test's, ended) go."""
        for task in [self._receiving, *(t for lab in self._labs.values() for t in lab.tasks)]:
            if task is not None:
                with contextlib.suppress(RuntimeError):  # its loop closed: nothing runs it any more
                    task.cancel()
        self._labs.clear()
        self._layer = layer
        self._channel = await layer.new_channel()
        self._receiving = asyncio.get_running_loop().create_task(self._receive(layer, self._channel))

    async def _receive(self, layer: Any, channel: str) -> None:
        while True:
            try:
                message = await layer.receive(channel)
            except asyncio.CancelledError:
                raise
            except Exception:  # Redis restarting: try again shortly
                log.warning("the frame relay could not receive; trying again", exc_info=True)
                await asyncio.sleep(0.5)
                continue
            self.received += 1
            await self._hand_out(message)

    async def _hand_out(self, message: dict[str, Any]) -> None:
        lab = self._labs.get(str(message.get("group", "")))
        if lab is None:
            return
        kind = message.get("type")
        if kind == FRAME and isinstance(message.get("frame"), int):
            lab.last = (str(message.get("run", "")), int(message["frame"]))
        elif kind == MOVED and lab.channel:  # subscribed again on the new worker, once for every page
            lab.moves += 1
            lab.last = ("", 0)  # the lab's new run: any full state from the new worker serves
            lab.waiting = dict.fromkeys(lab.pages, lab.last)
            self._ask(lab)
        for page in list(lab.pages):
            try:
                if kind == FRAME:
                    await page.lab_frame(message)
                elif kind == MOVED:
                    await page.lab_moved(message)
            except Exception:
                log.exception("a frame could not be handed to a page")


class _NoOwner:
    """A lab whose full states the page gets itself (tests of the frames alone)."""

    def subscribe(self, channel: str) -> Future[Any]:
        raise NotImplementedError

    def renew(self) -> None:
        pass

    def unsubscribe(self) -> None:
        pass


_running: set[asyncio.Task[Any]] = set()  # the loop keeps only weak references to its tasks


def _keep(task: asyncio.Task[Any]) -> None:
    _running.add(task)
    task.add_done_callback(_running.discard)


def _off_loop(call: Any) -> None:
    """``call`` (a message to the lab's worker, which may read ZooKeeper first) on a thread."""
    task = asyncio.get_running_loop().create_task(asyncio.to_thread(call))
    _keep(task)
    task.add_done_callback(_logged)


def _logged(task: asyncio.Task[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.warning("a message to a lab's worker failed: %s", task.exception())


relay = Relay()
