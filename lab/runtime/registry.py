"""Which labs (clusters) run in this process.

A live lab's driver (``lab.runtime.live``) registers its lab here, by slug, once its
cluster is up, updates the summary when a broker changes state or the controller
moves, and removes it when it stops; the home page lists what is registered.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerSummary:
    id: int
    state: str  # alive | killed | paused | isolated | slow, as in the engine's snapshot


@dataclass(frozen=True, slots=True, kw_only=True)
class LabSummary:
    name: str
    brokers: tuple[BrokerSummary, ...]
    controller: int | None = None
    zookeeper_chroot: str | None = None


class LabAlreadyRunning(ValueError):
    """A lab with this name is already registered."""


_labs: dict[str, LabSummary] = {}
_lock = threading.Lock()


def register_lab(summary: LabSummary) -> None:
    """Record a running lab; its name must be unused."""
    with _lock:
        if summary.name in _labs:
            raise LabAlreadyRunning(f"a lab named {summary.name!r} is already running")
        _labs[summary.name] = summary


def update_lab(summary: LabSummary) -> None:
    """Replace the summary of a registered lab (brokers changed state, new controller)."""
    with _lock:
        if summary.name not in _labs:
            raise KeyError(f"no running lab named {summary.name!r}")
        _labs[summary.name] = summary


def unregister_lab(name: str) -> None:
    """Forget a lab that stopped; unknown names are ignored."""
    with _lock:
        _labs.pop(name, None)


def running_labs() -> list[LabSummary]:
    """The labs running in this process, by name."""
    with _lock:
        return [_labs[name] for name in sorted(_labs)]
