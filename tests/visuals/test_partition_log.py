"""The partition log's view model: aligned offset cells, LSO/HW/LEO markers, fetches in flight."""

from __future__ import annotations

from lab.visuals.partition_log import ROOM, partition_log, partition_logs
from tests.visuals.snapshots import log, partition, three_brokers


def _part(logs: dict[int, dict], *, leader: int = 1, isr: list[int] | None = None) -> dict:
    replicas = list(logs)
    return partition(0, replicas, leader=leader, isr=isr or replicas, logs=logs)


def test_records_above_the_hw_are_drawn_as_not_yet_visible() -> None:
    part = _part({1: log(0, 3, 5, role="leader"), 2: log(0, 3, 4), 3: log(0, 3, 3)})
    view = partition_log("orders", part, in_flight=[], now_ms=0, rate=1.0, config={})
    leader, f2, f3 = view.replicas
    assert leader.cells.startswith("cccuu")
    assert f2.cells.startswith("cccue")
    assert f3.cells.startswith("ccce")
    assert [(m.label, m.at) for m in leader.markers] == [("LSO", 0), ("HW", 3), ("LEO", 5)]
    assert (f2.behind, f3.behind) == (1, 2)
    assert "2 record(s) above the HW, not yet visible to consumers" in leader.title


def test_coinciding_markers_share_one_label_with_every_tooltip() -> None:
    part = _part({1: log(0, 5, 5, role="leader")})
    (replica,) = partition_log("orders", part, in_flight=[], now_ms=0, rate=1.0, config={}).replicas
    assert [(m.label, m.kinds, m.at) for m in replica.markers] == [("LSO", "lso", 0), ("HW LEO", "hw leo", 5)]
    hw_leo = replica.markers[1]
    assert "HW = 5." in hw_leo.title
    assert "LEO = 5." in hw_leo.title
    assert "min.insync.replicas: lab 1, Kafka 1" in hw_leo.title


def test_replicas_share_one_window_that_follows_the_longest_log() -> None:
    part = _part({1: log(90, 100, 120, role="leader"), 2: log(90, 100, 100)})
    view = partition_log("orders", part, in_flight=[], now_ms=0, rate=1.0, config={}, width=24)
    assert (view.start, view.end) == (120 + ROOM - 24, 120 + ROOM)
    assert view.earlier == view.start - 90
    assert all(len(r.cells) == 24 for r in view.replicas)
    assert [o for _, o in view.axis] == [100, 105, 110, 115, 120]
    leader, follower = view.replicas
    assert follower.cells == "cc" + "e" * 22  # offsets 98 and 99 committed, the rest not on it yet
    assert leader.cells == "cc" + "u" * 20 + "ee"


def test_offsets_one_replica_deleted_and_another_keeps_are_marked_deleted() -> None:
    part = _part({1: log(3, 6, 6, role="leader"), 2: log(0, 6, 6)})
    leader, follower = partition_log("orders", part, in_flight=[], now_ms=0, rate=1.0, config={}).replicas
    assert leader.cells[:7] == "dddccce"
    assert follower.cells[:7] == "cccccce"
    assert [m.label for m in leader.markers] == ["LSO", "HW LEO"]


def test_a_fetch_in_flight_is_placed_on_its_way_with_the_time_left() -> None:
    part = _part({1: log(0, 5, 5, role="leader"), 2: log(0, 5, 5), 3: log(0, 5, 5)})
    flights = [
        {
            "id": 7,
            "kind": "Fetch",
            "src": 3,
            "dst": 1,
            "sent_ms": 1000,
            "deliver_ms": 3000,
            "response": False,
        },
        {"id": 8, "kind": "Fetch", "src": 1, "dst": 2, "sent_ms": 1500, "deliver_ms": 2500, "response": True},
        {
            "id": 9,
            "kind": "Produce",
            "src": "producer-1",
            "dst": 1,
            "sent_ms": 1500,
            "deliver_ms": 2500,
            "response": False,
        },
        {
            "id": 10,
            "kind": "Fetch",
            "src": 2,
            "dst": 3,
            "sent_ms": 1500,
            "deliver_ms": 2500,
            "response": False,
        },
    ]
    view = partition_log("orders", part, in_flight=flights, now_ms=2000, rate=0.5, config={})
    assert [f.id for f in view.flights] == [
        7,
        8,
    ]  # client traffic and fetches not to or from the leader are not this partition's
    request, response = view.flights
    assert (request.src_row, request.dst_row, request.progress, request.y_now) == (2, 0, 0.5, 1.0)
    assert request.remaining_s == 2.0  # 1000 virtual ms left at half speed
    assert response.response
    assert response.progress == 0.5
    assert response.y_now == 0.5
    paused = partition_log("orders", part, in_flight=flights, now_ms=2000, rate=0.0, config={})
    assert paused.flights[0].remaining_s is None


def test_every_topic_gets_a_block_user_topics_first() -> None:
    snap = three_brokers()
    snap["topics"]["__consumer_offsets"] = snap["topics"]["orders"]
    logs = partition_logs(snap, {}, rate=1.0)
    assert [t.topic for t in logs.topics] == ["orders", "__consumer_offsets"]
    assert [p.leader for p in logs.topic("orders").partitions] == [1, 2, 3]
    assert "replica.lag.time.max.ms" in logs.tip["uncommitted"]
