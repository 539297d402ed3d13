"""Database writes off the threads that must not wait on the database (a lab's driver, the websocket
loop): one writer thread, in the order asked, each failure logged."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

from django.db import close_old_connections

log = logging.getLogger(__name__)

_writer: ThreadPoolExecutor | None = None
_lock = threading.Lock()


def write_later(job: Callable[[], None], what: str) -> Future[None]:
    """Run ``job`` on the writer thread; a failure is logged as "``what`` failed" and raised on the future."""
    global _writer
    with _lock:
        if _writer is None:
            _writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="db-writer")
        writer = _writer

    def run() -> None:
        try:
            job()
        except Exception:
            log.exception("%s failed", what)
            raise
        finally:
            close_old_connections()

    return writer.submit(run)
