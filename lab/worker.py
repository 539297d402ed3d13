"""A lab worker: ``python -m lab.worker --name 1``. Runs labs; serves no HTTP.

``make run WORKERS=N`` starts N of them beside the web process (``lab.serve``), each with Django set
up on the same database, ZooKeeper (``LAB_ZOOKEEPER``) and Redis (``LAB_REDIS``). A worker registers in
ZooKeeper (``lab.runtime.ownership``), runs the labs whose lease it holds with today's ``LiveLab`` (one
driver thread each), publishes their frames on the shared channel layer through its own loop thread
(``lab.runtime.courier``), and answers what arrives on its channel:

- ``act``: a named command with JSON arguments (``LiveLab.act``), answered with its JSON result or
  Kafka's error by name; ``status``, ``page``: what the views read; ``wake``;
- ``subscribe`` / ``unsubscribe``: a page's websocket (the full state is sent to its channel);
- ``claim``: run the lab here (every command claims an unowned lab first); ``stop``, ``forget``.

When a worker's ZooKeeper session ends (it died, or was cut off), its leases vanish; the survivors
see it (a watch), and the one rendezvous hashing picks takes each lab up from its data directory,
writes on its timeline where it came from, and tells the pages watching it to subscribe again.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
import threading
import time
from typing import Any

log = logging.getLogger("lab.worker")

COMMAND = "lab.command"
MOVED = "lab.moved"


class Worker:
    def __init__(self, name: str) -> None:
        from channels.layers import get_channel_layer
        from django.conf import settings

        from lab import labs
        from lab.runtime.broadcast import broadcaster
        from lab.runtime.courier import Courier
        from lab.runtime.ownership import Ownership

        labs.RUNS_LABS_HERE = True  # live_of starts labs in this process, not on another worker
        self.name = name
        self.courier = Courier(get_channel_layer(), name=f"worker-{name}-courier")
        broadcaster.attach(self.courier.loop)  # the drivers' frames go out through the courier's loop
        self.ownership = Ownership(settings.LAB_ZOOKEEPER, labs.instance_id())
        self.cap = int(settings.LAB_MAX_LABS_PER_WORKER)
        self.changed = threading.Event()
        self.stopping = threading.Event()
        self._claim_lock = threading.Lock()
        self.moved: dict[str, str] = {}  # slug -> "The lab moved to worker 2 after worker 1 stopped."
        self._published: dict[str, dict[str, Any]] = {}  # the home page's lines put on the leases
        # Pages watching each lab (a consumer's channel -> when it last said so): a page renews every
        # LAB_PAGE_RENEW_S, so one whose web process died stops keeping its lab awake (page_lapse_s).
        self.pages: dict[str, dict[str, float]] = {}
        self._pages_lock = threading.Lock()

    # ------------------------------------------------------------------ life

    def run(self) -> int:
        from lab.labs import warm_up

        warm_up()  # before any lab is ours: none draws its first frame loading the URLs and templates
        self.ownership.register(self.name, self.courier.channel, self.cap)
        self.ownership.watch(self.changed.set)
        self.ownership.on_session(self._lost)
        self.courier.serve(self._handle)
        print(f"worker {self.name}: ready (pid {os.getpid()}, up to {self.cap} labs)", flush=True)
        self.changed.set()
        while not self.stopping.is_set():
            if self.changed.wait(1.0):
                self.changed.clear()
                if not self.stopping.is_set():
                    self._adopt_orphans()
            self._publish_summaries()
            self._lapse_pages()
        return 0

    def _lapse_pages(self) -> None:
        from lab.runtime.manager import runtime

        now = time.monotonic()
        with self._pages_lock:
            for slug, pages in self.pages.items():
                for channel in [c for c, seen in pages.items() if now - seen > page_lapse_s()]:
                    del pages[channel]
                    live = runtime.get(slug)
                    if live is not None:
                        live.unsubscribe()

    def page_watches(self, live: Any, channel: str) -> bool:
        """A page subscribed or renewed; True when it is new (it gets the full state)."""
        with self._pages_lock:
            pages = self.pages.setdefault(live.slug, {})
            new = channel not in pages
            pages[channel] = time.monotonic()
        if new:
            live.subscribe()
        else:
            live.wake("a page watches")
        return new

    def page_leaves(self, live: Any, channel: str) -> None:
        with self._pages_lock:
            gone = self.pages.get(live.slug, {}).pop(channel, None)
        if gone is not None:
            live.unsubscribe()

    def _publish_summaries(self) -> None:
        """The home page's line of each lab this worker runs, on its lease, when it changed."""
        from dataclasses import asdict

        from lab.runtime.registry import running_labs

        for summary in running_labs():
            data = asdict(summary)
            if self._published.get(summary.name) != data:
                try:
                    self.ownership.publish(summary.name, data)
                except Exception:
                    log.warning("worker %s: the summary of %s was not published", self.name, summary.name)
                    continue
                self._published[summary.name] = data

    def stop(self) -> None:
        from lab import labs

        self.stopping.set()
        labs.stop_all()
        self.ownership.close()  # leases and registration go now: the others may take the labs
        self.courier.close()

    def _lost(self) -> None:
        """(kazoo's thread) The session expired: another worker may run these labs now. Two drivers on
        one data directory would corrupt it, so this worker stops them all and exits; its supervisor
        starts it again."""
        if self.stopping.is_set():
            return  # the session ends because this worker closes it
        log.error("worker %s: its ZooKeeper session expired; stopping its labs", self.name)
        os.kill(os.getpid(), signal.SIGTERM)

    # ------------------------------------------------------------------ labs

    def _adopt_orphans(self) -> None:
        for slug in self.ownership.orphans():
            try:
                self.claim(slug)
            except Exception:
                log.exception("worker %s: lab %s could not be taken up", self.name, slug)

    def claim(self, slug: str) -> Any:
        """The lab's LiveLab here: claimed (its lease) and started now if this worker does not run it."""
        from django.db import close_old_connections

        from lab import labs
        from lab.engine.errors import IllegalState, UnknownTopicOrPartition
        from lab.models import Lab
        from lab.runtime.manager import runtime

        with self._claim_lock:
            running = runtime.get(slug)
            if running is not None and running.state != "stopped":
                return running
            taken, previous = self.ownership.claim(slug)
            if not taken:
                raise IllegalState(f"lab {slug} is run by another worker")
            close_old_connections()
            lab = Lab.objects.filter(slug=slug).first()
            if lab is None:
                self.ownership.forget(slug)
                raise UnknownTopicOrPartition(f"there is no lab {slug}")
            live = labs.live_of(lab)
        if previous:
            from lab.classroom.attach import reattach_all

            # Its exercise, scenario player or demo banner lived on the worker that stopped: here now.
            reattach_all([slug])
            text = f"The lab moved to worker {self.name} after worker {previous} stopped."
            print(f"worker {self.name}: {slug}: {text}", flush=True)
            self.moved[slug] = text
            live.submit(lambda running: running.cluster.journal.record("lab_moved", text))
            # Pages that watched it subscribed on the worker that died: they subscribe again here.
            self.courier.group_send(live.group, {"type": MOVED, "group": live.group, "text": text})
        return live

    def running(self, slug: str) -> Any:
        """The lab's LiveLab if this worker runs it (no thread hop, no lock: most messages are for one)."""
        from lab.runtime.manager import runtime

        live = runtime.get(slug)
        return live if live is not None and live.state != "stopped" else None

    def forget(self, slug: str) -> None:
        from lab.runtime.manager import runtime

        with self._claim_lock:
            runtime.stop(slug)
            self.ownership.forget(slug)

    # ------------------------------------------------------------------ commands (the courier's loop)

    async def _handle(self, message: dict[str, Any]) -> None:
        from lab.runtime import actions

        if message.get("type") != COMMAND:
            return
        op, slug = str(message.get("op", "")), str(message.get("slug", ""))
        if op == "forget":  # a deleted lab: stopped here, and taken up by nobody
            await asyncio.to_thread(self.forget, slug)
            await self.courier.reply(message, result="forgotten")
            return
        try:
            live = self.running(slug) or await asyncio.to_thread(self.claim, slug)
        except Exception as error:
            await self.courier.reply(message, error=error)
            return
        if op == "act":
            args = dict(message.get("args") or {})
            name = str(message.get("name", ""))
            future = live.act(name, args, by=str(message.get("by", "")))
            try:
                result = await asyncio.wrap_future(future)
            except Exception as error:
                await self.courier.reply(message, error=error)
                return
            if not actions.is_read(name):  # a read changes no spec: no database round trip
                await asyncio.to_thread(self._save_spec, live)
            await self.courier.reply(message, result={"result": result, "status": self.status(live)})
        elif op in ("status", "claim"):
            await self.courier.reply(message, result=self.status(live))
        elif op == "wake":
            live.wake(str(message.get("why") or "a page or an API call"))
            await self.courier.reply(message, result=self.status(live))
        elif op == "page":
            from lab.labs import page_parts
            from lab.templatetags.listeners import panel

            parts = await asyncio.to_thread(page_parts, live)
            parts["listeners_panel"] = await asyncio.to_thread(panel, live)
            await self.courier.reply(message, result={**parts, "status": self.status(live)})
        elif op == "subscribe":
            channel = str(message["channel"])
            # A new page, or one that missed a frame ("full"), gets the full state: drawn where the
            # frames changed it since they drew it (TemplateRenderer), so cheap.
            if self.page_watches(live, channel) or message.get("full"):
                await self.courier.deliver(channel, await asyncio.to_thread(live.full_state))
            await self.courier.reply(message, result="subscribed")  # a renewal asks for no answer
        elif op == "unsubscribe":
            self.page_leaves(live, str(message.get("channel", "")))
        else:
            await self.courier.reply(message, error=ValueError(f"no operation {op!r}"))

    def status(self, live: Any) -> dict[str, Any]:
        return status_of(live, self.name, self.moved.get(live.slug, ""))

    def _save_spec(self, live: Any) -> None:
        from django.db import close_old_connections

        from lab.labs import save_live_spec
        from lab.models import Lab

        close_old_connections()
        lab = Lab.objects.filter(slug=live.slug).first()
        if lab is not None:
            save_live_spec(lab, live)


def listeners_of(live: Any) -> dict[str, Any]:
    """``bootstrap_servers`` and each broker's listener, as the API's lab shows them (JSON)."""
    from lab.listening import listeners_json

    return listeners_json(live)


def page_lapse_s() -> float:
    """How long a page's subscription lasts unless renewed (the page renews 3 times in it)."""
    from django.conf import settings

    return 3 * float(settings.LAB_PAGE_RENEW_S)


def status_of(live: Any, worker: str, moved: str = "") -> dict[str, Any]:
    """What the views read of a lab, JSON-safe."""
    spec, version = live.versioned_spec
    return {
        "state": live.state,
        "error": live.error,
        "store": live.store,
        "zookeeper": live.zookeeper or "",
        "fallback_reason": live.fallback_reason,
        "zookeeper_outage": live.zookeeper_outage,
        "asleep": live.asleep,
        "nap": live.nap_text(),
        "starting_note": live.starting_note,
        "moved": moved,
        "listeners": listeners_of(live),
        "worker": worker,
        "spec": {
            "slug": spec.slug,
            "name": spec.name,
            "data_dir": spec.data_dir,
            "chroot": spec.chroot,
            "brokers": spec.brokers,
            "settings": spec.settings(),
            "version": version,
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m lab.worker", description="A Kafka Lab worker: runs labs."
    )
    parser.add_argument("--name", required=True, help="this worker's name among the workers (1, 2, ...)")
    args = parser.parse_args(argv)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lab.settings")
    import django

    django.setup()
    from django.conf import settings

    if not settings.LAB_ZOOKEEPER or not settings.REDIS_URL:
        print("A lab worker needs LAB_ZOOKEEPER and LAB_REDIS (make run WORKERS=N sets both).", flush=True)
        return 2
    worker = Worker(args.name)

    def _stop(signum: int, frame: Any) -> None:
        worker.stopping.set()
        worker.changed.set()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    try:
        return worker.run()
    finally:
        worker.stop()
        print(f"worker {args.name}: stopped", flush=True)


if __name__ == "__main__":
    sys.exit(main())
