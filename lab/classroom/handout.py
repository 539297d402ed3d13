"""Handing out copies of a demo (the Django side): a lab row per viewer, filled in the background.

The rows are made at once (so each student's copy exists when the request answers); filling them
(starting a cluster, writing the records) takes seconds per lab, so it runs on two background
threads and the demo's banner counts the copies that are ready.
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from django.db import close_old_connections, transaction

from lab.classroom import attach
from lab.classroom.copying import DemoState
from lab.classroom.grading import now_iso
from lab.classroom.models import Demo, DemoCopy
from lab.labs import create_lab, live_of, save_live_spec
from lab.limits import LabLimitReached
from lab.models import Lab
from lab.runtime.live import LiveLab

log = logging.getLogger(__name__)

READY_TIMEOUT_S = 120.0
FILL_TIMEOUT_S = 300.0

_executor: ThreadPoolExecutor | None = None
_lock = threading.Lock()


def _pool() -> ThreadPoolExecutor:
    global _executor
    with _lock:
        if _executor is None:
            _executor = ThreadPoolExecutor(max_workers=2, thread_name_prefix="classroom-copy")
        return _executor


@dataclass(frozen=True, slots=True, kw_only=True)
class Refused:
    """A student who got no copy, and why (a lab limit: theirs, or the server's)."""

    user: Any
    why: LabLimitReached


def make_copies(demo: Demo, state: DemoState, users: list[Any]) -> tuple[list[DemoCopy], list[Refused]]:
    """One new lab per user with the demo's brokers, config and topics (empty until filled); a user
    the lab limits refuse gets none, and is listed with the reason."""
    copies, refused = [], []
    for user in users:
        try:
            with transaction.atomic():
                lab = create_lab(
                    user,
                    f"{demo.lab.name} (copy)"[:100],
                    brokers=state.brokers,
                    config=dict(state.config),
                    topics=state.topics,
                )
                lab.settings = {**lab.settings, "seed": state.seed}
                lab.save(update_fields=["settings"])
                copies.append(DemoCopy.objects.create(demo=demo, user=user, lab=lab))
        except LabLimitReached as why:
            refused.append(Refused(user=user, why=why))
    return copies, refused


def refusals_in_words(refused: list[Refused]) -> str:
    """ "Not handed a copy: ada, bob (10 labs already, the most a student may have); carol (the class
    server is full (40 labs running))." Students grouped by reason, in the order they joined."""
    if not refused:
        return ""
    by_reason: dict[str, list[str]] = {}
    for r in refused:
        by_reason.setdefault(r.why.reason, []).append(r.user.get_username())
    parts = [f"{', '.join(names)} ({reason})" for reason, names in by_reason.items()]
    return f"Not handed a copy: {'; '.join(parts)}."


def fill_later(demo: Demo, state: dict[str, Any], copies: list[DemoCopy]) -> list[Future[str]]:
    """Start and fill each copy in the background (``state``: the demo's, as ``classroom.read-state``
    answered it); the demo's banner counts the copies ready. The futures hold what happened, in words."""
    demo_live = live_of(demo.lab)
    attach.ask(demo_live, "classroom.demo-copies", {"copies": len(copies), "copied_at": now_iso()})
    return [_pool().submit(_fill_one, demo_live, copy.pk, copy.lab_id, state) for copy in copies]


def _fill_one(demo_live: LiveLab, copy_id: int, lab_id: int, state: dict[str, Any]) -> str:
    try:
        lab = Lab.objects.get(pk=lab_id)
        live = live_of(lab)
        # The command waits for the copy's cluster to start, then for its records and offsets.
        args: dict[str, Any] = {"state": state}
        result = str(live.act("classroom.fill", args).result(READY_TIMEOUT_S + FILL_TIMEOUT_S))
        save_live_spec(lab, live)
        attach.ask(demo_live, "classroom.demo-copy-ready", {})
        return result
    except Exception as error:
        text = f"{getattr(error, 'name', type(error).__name__)}: {getattr(error, 'message', error)}"
        log.warning("classroom: copy %s of demo %s failed: %s", copy_id, demo_live.slug, text)
        DemoCopy.objects.filter(pk=copy_id).update(error=text)
        raise
    finally:
        close_old_connections()
