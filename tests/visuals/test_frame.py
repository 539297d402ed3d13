"""A whole frame from a real engine snapshot: every fragment, and only what changed differs."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from lab.engine.cluster import Cluster
from lab.visuals.clock import LabStatus
from lab.visuals.frame import FrameInputs, build, plog_key

STATUS = LabStatus(
    state="running", store="memory", zookeeper="", chroot="/kafka-lab/t", error="", fallback_reason=""
)


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    c = Cluster.create(brokers=3, seed=3)
    c.create_topic("orders", partitions=3, replication_factor=3)
    try:
        yield c
    finally:
        c.close()


def _inputs(c: Cluster, **kw: object) -> FrameInputs:
    base = {
        "snapshot": c.snapshot(),
        "config": dict(c.config.values),
        "events": c.events(),
        "rebalances": [],
        "tree": None,
        "tree_previous": None,
        "tree_error": None,
        "samples": [],
        "rate": 1.0,
        "paused": False,
        "status": STATUS,
        "simulated_clients": True,
    }
    base.update(kw)
    return FrameInputs(**base)  # type: ignore[arg-type]


def test_every_view_is_built_from_a_real_snapshot(cluster: Cluster) -> None:
    views = build(_inputs(cluster, tree=cluster.zookeeper_tree()))
    assert list(views)[:7] == [
        "status",
        "clock-time",
        "clock-controls",
        "cluster-map",
        "sessions",
        "plogs",
        plog_key("orders"),
    ]
    assert {
        "groups",
        "clients",
        "client-stats",
        "zookeeper",
        "timeline-filters",
        "timeline",
        "charts",
        "lost-records",
    } <= set(views)
    cmap = views["cluster-map"]
    assert [p.leader for p in cmap.topics[0].partitions] == [1, 2, 3]  # type: ignore[attr-defined]
    assert views["zookeeper"].count > 10  # type: ignore[attr-defined]
    assert views["plogs"].topics == ("orders",)  # type: ignore[attr-defined]


def test_a_paused_broker_shows_its_session_as_zookeeper_sees_it(cluster: Cluster) -> None:
    cluster.pause_broker(2)
    cluster.run_for(1000)
    line = build(_inputs(cluster, tree=cluster.zookeeper_tree()))["sessions"].by_id[2]  # type: ignore[attr-defined]
    assert (line.state, line.label) == ("unheard", "session expires in 5.0 s")  # the lab's 6 s session
    cluster.run_for(6000)
    assert cluster.snapshot()["brokers"][1]["session"] == "connected"  # what the paused broker believes
    line = build(_inputs(cluster, tree=cluster.zookeeper_tree()))["sessions"].by_id[2]  # type: ignore[attr-defined]
    assert (line.state, line.label, line.znode) == ("expired", "session expired: /brokers/ids/2 gone", False)


def test_after_a_produce_only_what_changed_differs(cluster: Cluster) -> None:
    first = build(_inputs(cluster))
    again = build(_inputs(cluster))
    assert first == again
    p = cluster.producer(acks="all")
    p.send("orders", "v", key="k")
    p.flush()
    cluster.run_for(600)
    after = build(_inputs(cluster, events=cluster.events()))
    changed = {k for k in after if after[k] != first.get(k)}
    assert plog_key("orders") in changed
    assert "clock-time" in changed
    assert "cluster-map" not in changed
    assert "clock-controls" not in changed
    assert "status" not in changed
