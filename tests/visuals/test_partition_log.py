"""The partition log's view model: aligned offset cells, log start/HW/LEO markers, fetches in flight."""

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
    assert [(m.label, m.at) for m in leader.markers] == [("log start", 0), ("HW", 3), ("LEO", 5)]
    assert "log start 0, HW 3, LEO 5" in leader.title
    assert (f2.behind, f3.behind) == (1, 2)
    assert "2 record(s) above the HW, not yet visible to consumers" in leader.title


def test_coinciding_markers_share_one_label_with_every_tooltip() -> None:
    part = _part({1: log(0, 5, 5, role="leader")})
    (replica,) = partition_log("orders", part, in_flight=[], now_ms=0, rate=1.0, config={}).replicas
    assert [(m.label, m.kinds, m.at) for m in replica.markers] == [
        ("log start", "start", 0),
        ("HW LEO", "hw leo", 5),
    ]
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
    assert [m.label for m in leader.markers] == ["log start", "HW LEO"]


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
    assert request.label.endswith(
        "(sent at 0:01.000, arrives at 0:03.000, virtual time)"
    )  # as the clock says
    paused = partition_log("orders", part, in_flight=flights, now_ms=2000, rate=0.0, config={})
    assert paused.flights[0].remaining_s is None


def test_every_topic_gets_a_block_user_topics_first() -> None:
    snap = three_brokers()
    snap["topics"]["__consumer_offsets"] = snap["topics"]["orders"]
    logs = partition_logs(snap, {}, rate=1.0)
    assert [t.topic for t in logs.topics] == ["orders", "__consumer_offsets"]
    assert [p.leader for p in logs.topic("orders").partitions] == [1, 2, 3]
    assert "replica.lag.time.max.ms" in logs.tip["uncommitted"]


def test_the_log_start_is_never_called_lso_which_is_the_last_stable_offset_in_kafka() -> None:
    logs = partition_logs(three_brokers(), {}, rate=1.0)
    start = logs.topic("orders").partitions[0].replicas[0].markers[0]
    assert start.label == "log start"
    assert "LSO" not in start.label
    assert start.title.startswith("log start = 0. Log start: the oldest offset")
    assert "not the LSO, which in Kafka is the last stable offset" in logs.tip["log_start_offset"]


def test_the_hw_tooltip_gives_the_min_insync_replicas_the_topic_really_runs_with() -> None:
    snap = three_brokers()
    snap["topics"]["orders"]["config"] = {"min.insync.replicas": "2"}
    orders = partition_logs(snap, {}, rate=1.0).topic("orders")
    assert (orders.min_insync_replicas, orders.min_isr_override) == (2, True)
    hw = next(m for m in orders.partitions[0].replicas[0].markers if "hw" in m.kinds.split())
    assert "min.insync.replicas: topic 2 (lab 1, Kafka 1)" in hw.title
    assert "min.insync.replicas: topic 2 (lab 1, Kafka 1)" in orders.tip["high_watermark"]
    # Without an override, the broker's value (the lab's config) is the topic's.
    plain = partition_logs(three_brokers(), {"min.insync.replicas": "3"}, rate=1.0).topic("orders")
    assert (plain.min_insync_replicas, plain.min_isr_override) == (3, False)
    assert "min.insync.replicas: lab 3, Kafka 1" in plain.tip["high_watermark"]


def test_a_partition_whose_isr_is_smaller_than_min_insync_replicas_is_marked() -> None:
    snap = three_brokers()
    snap["topics"]["orders"]["config"] = {"min.insync.replicas": "2"}
    parts = snap["topics"]["orders"]["partitions"]
    parts[0] = partition(
        0,
        [1, 2, 3],
        leader=1,
        isr=[1],
        logs={1: log(0, 5, 5, role="leader"), 2: log(0, 3, 3), 3: log(0, 3, 3)},
    )
    parts[1] = partition(
        1, [2, 3, 1], leader=2, isr=[2, 3], logs={2: log(0, 5, 5), 3: log(0, 5, 5), 1: log(0, 3, 3)}
    )
    parts[2] = partition(2, [3, 1, 2], leader=-1, isr=[3], logs={3: log(0, 5, 5, online=False)})
    orders = partition_logs(snap, {}, rate=1.0).topic("orders")
    lonely, enough, offline = orders.partitions
    assert lonely.under_min_isr
    assert "ISR [1]: 1 in sync, min.insync.replicas 2." in lonely.min_isr_title
    assert "acks=all write to this partition fails with NOT_ENOUGH_REPLICAS" in lonely.min_isr_title
    assert not enough.under_min_isr  # 2 of min 2
    assert not offline.under_min_isr  # no leader at all: offline says more
    assert orders.under_min_isr == 1


def test_the_leaders_producer_state_is_shown_per_partition() -> None:
    from lab.engine.cluster import Cluster

    c = Cluster.create(brokers=3, seed=7)
    try:
        c.create_topic("orders", partitions=2, replication_factor=3)
        idempotent = c.producer(client_id="idem")
        plain = c.producer(client_id="plain", enable_idempotence=False)
        for i in range(7):
            idempotent.send("orders", f"v{i}", partition=0)
            plain.send("orders", f"p{i}", partition=0)
        idempotent.flush()
        plain.flush()
        orders = partition_logs(c.snapshot(), {}, rate=1.0).topic("orders")
        assert orders is not None
        p0, p1 = orders.partitions
        (row,) = p0.producers  # the plain producer has no id: nothing to show for it
        assert (row.producer_id, row.producer_epoch, row.last_sequence) == (idempotent.producer_id, 0, 6)
        assert "its next batch must start at sequence 7" in row.title
        assert p1.producers == ()
        assert "last five batches" in orders.tip["producer_state"]
    finally:
        c.close()


def test_an_open_transaction_draws_the_lso_and_markers_draw_as_control_cells() -> None:
    leader = {
        **log(0, 6, 6, role="leader"),
        "last_stable_offset": 4,
        "transactions": {
            "ongoing": [{"producer_id": 7, "first_offset": 4}],
            "markers": [
                {"offset": 1, "type": "COMMIT", "producer_id": 7},
                {"offset": 3, "type": "ABORT", "producer_id": 7},
            ],
            "aborted": [{"producer_id": 7, "first_offset": 2, "last_offset": 3}],
        },
    }
    (replica,) = partition_log(
        "orders", _part({1: leader}), in_flight=[], now_ms=0, rate=1.0, config={}
    ).replicas
    assert replica.cells[:7] == "cxcacce"  # offset 1 a commit marker, offset 3 an abort marker
    assert [(m.label, m.at) for m in replica.markers] == [("log start", 0), ("LSO", 4), ("HW LEO", 6)]
    assert "last stable offset" in replica.markers[1].title
    assert "LSO 4: an open transaction holds read_committed consumers below it" in replica.title
    # Without a transaction holding it, the LSO is the HW and is not drawn apart.
    (plain,) = partition_log(
        "orders", _part({1: log(0, 6, 6, role="leader")}), in_flight=[], now_ms=0, rate=1.0, config={}
    ).replicas
    assert [m.label for m in plain.markers] == ["log start", "HW LEO"]


def test_a_partition_that_did_not_change_keeps_its_view_and_one_that_did_is_made_again() -> None:
    from copy import deepcopy

    from lab.visuals.frame import Memo

    memo = Memo()
    before = three_brokers()
    first = partition_logs(before, {}, rate=1.0, take=memo.take)
    after = deepcopy(before)  # a new snapshot, as every frame's is
    after["time_ms"] += 100
    for replica in after["topics"]["orders"]["partitions"][1]["logs"].values():
        replica["log_end_offset"] = 6  # records reached partition 1 only
    second = partition_logs(after, {}, rate=1.0, take=memo.take)
    p0, p1, p2 = second.topics[0].partitions
    assert p0 is first.topics[0].partitions[0]
    assert p2 is first.topics[0].partitions[2]
    assert p1 is not first.topics[0].partitions[1]
    assert second == partition_logs(after, {}, rate=1.0)  # the same views as made afresh
    # A fetch in flight moves with time alone: its partitions are made again while it flies.
    flying = deepcopy(after)
    flying["in_flight"] = [
        {"id": 1, "kind": "Fetch", "src": 2, "dst": 1, "sent_ms": 1200, "deliver_ms": 1400}
    ]
    third = partition_logs(flying, {}, rate=1.0, take=memo.take)
    assert third == partition_logs(flying, {}, rate=1.0)
    assert any(p.flights for p in third.topics[0].partitions)
