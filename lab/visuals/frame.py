"""Everything a lab page shows, as view models keyed by fragment: one pure function of the engine's state.

The runtime calls ``build`` once per frame and sends only the fragments whose view model
differs from the last frame's; a page that connects gets them all. Fragments are cut so
that what changes every frame (virtual time, counters, logs) is apart from the controls,
which are replaced only when what they offer changes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from lab.engine.events import Event
from lab.visuals.charts import Sample, charts
from lab.visuals.clients import client_stats, clients_view
from lab.visuals.clock import ClockTime, LabStatus, clock_controls
from lab.visuals.cluster_map import cluster_map
from lab.visuals.groups import groups_view
from lab.visuals.lost import lost_records
from lab.visuals.partition_log import partition_logs
from lab.visuals.sessions import sessions_view
from lab.visuals.timeline import timeline, timeline_filters
from lab.visuals.transactions import transactions_view
from lab.visuals.wire_clients import wire_clients_view
from lab.visuals.zookeeper import zookeeper_tree


@dataclass(frozen=True, slots=True, kw_only=True)
class FrameInputs:
    snapshot: Mapping[str, Any]
    config: Mapping[str, str]
    events: Sequence[Event]
    rebalances: Sequence[Event]
    tree: Sequence[Mapping[str, Any]] | None
    tree_previous: Sequence[Mapping[str, Any]] | None
    tree_error: str | None
    samples: Sequence[Sample]
    rate: float
    paused: bool
    status: LabStatus
    simulated_clients: bool
    wire_clients: Sequence[Mapping[str, Any]] = ()  # real clients' connections (lab.wire)
    bootstrap_servers: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicIndex:
    """The topics the partition-log view has a block for, and the lab's choices for forms."""

    topics: tuple[str, ...]
    internal: tuple[str, ...]
    groups: tuple[str, ...]
    brokers: tuple[int, ...]
    simulated_clients: bool
    tips: tuple[tuple[str, str], ...]

    @property
    def tip(self) -> dict[str, str]:
        return dict(self.tips)


def plog_key(topic: str) -> str:
    return f"plog:{topic}"


T = TypeVar("T")


def same_inputs(before: tuple[object, ...], now: tuple[object, ...]) -> bool:
    """Each the same object, or equal (an object kept while nothing changed is not compared)."""
    return len(before) == len(now) and all(a is b or a == b for a, b in zip(before, now, strict=True))


class Memo:
    """The views a frame may take over from the last one: those whose inputs are the same objects (or
    equal). A lab's ZooKeeper tree and journal change far less often than its frames, and their views
    are a third of a frame's cost."""

    def __init__(self) -> None:
        self._last: dict[str, tuple[tuple[object, ...], object]] = {}

    def take(self, name: str, inputs: tuple[object, ...], make: Callable[[], T]) -> T:
        last = self._last.get(name)
        if last is not None and same_inputs(last[0], inputs):
            return last[1]  # type: ignore[return-value]
        view = make()
        self._last[name] = (inputs, view)
        return view


def build(inputs: FrameInputs, memo: Memo | None = None) -> dict[str, object]:
    """Every view of the frame. With ``memo`` (one per lab), views whose inputs did not change are the
    last frame's (the same result: each view is a pure function of its inputs)."""
    memo = memo or Memo()
    snap = inputs.snapshot
    config = inputs.config
    logs = partition_logs(snap, config, rate=0.0 if inputs.paused else inputs.rate, take=memo.take)
    views: dict[str, object] = {
        "status": inputs.status,
        "clock-time": ClockTime(
            time_ms=int(snap.get("time_ms") or 0),
            paused=inputs.paused,
            rate=0.0 if inputs.paused else inputs.rate,
        ),
        "clock-controls": clock_controls(inputs.rate, inputs.paused),
        "cluster-map": cluster_map(snap, config),
        "sessions": sessions_view(snap, inputs.tree, config),
        "plogs": TopicIndex(
            topics=tuple(t.topic for t in logs.topics if not t.internal),
            internal=tuple(t.topic for t in logs.topics if t.internal),
            groups=tuple(sorted(snap.get("groups") or {})),
            brokers=tuple(int(b["id"]) for b in snap.get("brokers", ())),
            simulated_clients=inputs.simulated_clients,
            tips=logs.tips,
        ),
    }
    for topic in logs.topics:
        views[plog_key(topic.topic)] = topic
    views.update(
        {
            "groups": groups_view(snap, inputs.rebalances, config),
            "transactions": transactions_view(snap, config),
            "clients": clients_view(snap),
            "client-stats": client_stats(snap),
            "wire-clients": wire_clients_view(
                inputs.wire_clients,
                bootstrap=inputs.bootstrap_servers,
                rate=inputs.rate,
                paused=inputs.paused,
            ),
            "zookeeper": memo.take(
                "zookeeper",
                (
                    inputs.tree,
                    inputs.tree_previous,
                    inputs.status.chroot,
                    inputs.status.store,
                    config,
                    inputs.tree_error,
                ),
                lambda: zookeeper_tree(
                    inputs.tree,
                    inputs.tree_previous,
                    chroot=inputs.status.chroot,
                    store=inputs.status.store,
                    config=config,
                    error=inputs.tree_error,
                ),
            ),
            "timeline-filters": memo.take(
                "timeline-filters", (inputs.events,), lambda: timeline_filters(inputs.events)
            ),
            "timeline": memo.take("timeline", (inputs.events,), lambda: timeline(inputs.events)),
            "charts": charts(inputs.samples),
            "lost-records": lost_records(snap),
        }
    )
    return views
