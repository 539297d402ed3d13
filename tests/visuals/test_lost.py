"""The lost-records panel: from the snapshot's losses, the count, the offsets and the newest in full."""

from __future__ import annotations

from lab.visuals.lost import SHOWN, lost_records


def _record(offset: int, value: str | None) -> dict[str, object]:
    return {
        "offset": offset,
        "key": None,
        "value": value,
        "acks": "all",
        "producer": "producer-1",
        "acked_ms": 1500,
        "detected_ms": 16250,
        "why": "not in the log of the leader, broker 2",
    }


def test_no_loss_no_panel() -> None:
    view = lost_records({"lost_records": []})
    assert (view.total, view.partitions) == (0, ())


def test_each_partition_says_how_many_where_and_which() -> None:
    snap = {
        "lost_records": [
            {"topic": "t", "partition": 0, "count": 4, "offsets": "3..6", "records": [_record(6, "after-3")]},
            {"topic": "u", "partition": 1, "count": 1, "offsets": "9", "records": [_record(9, "x" * 100)]},
        ]
    }
    view = lost_records(snap)
    assert view.total == 5
    t0, u1 = view.partitions
    assert (t0.name, t0.count, t0.offsets, t0.more) == ("t-0", 4, "3..6", 3)
    row = t0.rows[0]
    assert (row.offset, row.key, row.value, row.acks) == (6, "null", "after-3", "all")
    assert (row.acked_label, row.detected_label) == ("1.500 s", "16.250 s")
    assert u1.rows[0].value.endswith("…")
    assert len(u1.rows[0].value) == 40


def test_only_the_newest_rows_are_drawn() -> None:
    records = [_record(o, f"v{o}") for o in range(50)]
    snap = {
        "lost_records": [{"topic": "t", "partition": 0, "count": 80, "offsets": "0..79", "records": records}]
    }
    (part,) = lost_records(snap).partitions
    assert len(part.rows) == SHOWN
    assert part.more == 80 - SHOWN
