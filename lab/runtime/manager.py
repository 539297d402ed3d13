"""The live labs of this process, by slug.

One ``LiveLab`` per lab row that has been started; the Django side starts them (at
``make run`` and on first use) and stops them all when the server stops.
"""

from __future__ import annotations

import threading
from typing import Any

from lab.runtime.live import LiveLab, Renderer
from lab.runtime.spec import LabSpec


class Runtime:
    def __init__(self) -> None:
        self._labs: dict[str, LiveLab] = {}
        self._lock = threading.Lock()

    def get(self, slug: str) -> LiveLab | None:
        with self._lock:
            return self._labs.get(slug)

    def labs(self) -> list[LiveLab]:
        with self._lock:
            return [self._labs[s] for s in sorted(self._labs)]

    def start(
        self,
        spec: LabSpec,
        *,
        zookeeper: str | None,
        fallback_reason: str = "",
        renderer: Renderer | None = None,
        **options: Any,
    ) -> LiveLab:
        """The running lab for ``spec.slug``, started now if it is not running."""
        with self._lock:
            live = self._labs.get(spec.slug)
            if live is not None and live.state != "stopped":
                return live
            live = LiveLab(
                spec, zookeeper=zookeeper, fallback_reason=fallback_reason, renderer=renderer, **options
            )
            self._labs[spec.slug] = live
        return live.start()

    def stop(self, slug: str, timeout_s: float = 30.0) -> None:
        with self._lock:
            live = self._labs.pop(slug, None)
        if live is not None:
            live.stop(timeout_s)

    def stop_all(self, timeout_s: float = 30.0) -> None:
        with self._lock:
            labs = list(self._labs.values())
            self._labs.clear()
        for live in labs:
            live.stop(timeout_s)


runtime = Runtime()
