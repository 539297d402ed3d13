"""A group's offsets reset as a command: a request in flight that holds up no one else on the lab."""

from __future__ import annotations

from pathlib import Path

from lab.runtime.spec import TopicSpec
from tests.walltime import advance, now_ms, pause_coordinator, produce, still_lab, until_done


def test_a_reset_its_coordinator_does_not_answer_holds_up_no_one_else(tmp_path: Path) -> None:
    lab, wall = still_lab(
        tmp_path, "reset", topics=(TopicSpec(name="orders", partitions=2, replication_factor=3),)
    )
    try:
        produce(lab, wall, "orders", 4)
        ends = until_done(
            lab, wall, lab.act("group-reset", {"group": "audit", "topic": "orders", "to": "latest"})
        )
        assert sum(ends["offsets"].values()) == 4
        coordinator = pause_coordinator(lab, "audit")
        before = now_ms(lab)
        slow = lab.act("group-reset", {"group": "audit", "topic": "orders", "to": "earliest"})
        assert now_ms(lab) - before < 1000  # another call answered, and the clock did not leap
        assert not slow.done()
        advance(lab, wall, 1.0)
        assert 1000 <= now_ms(lab) - before < 3000
        assert not slow.done()
        lab.act("resume", {"broker": coordinator}).result(10)
        assert until_done(lab, wall, slow) == {
            "group": "audit",
            "offsets": {"orders/0": 0, "orders/1": 0},
            "message": "Group audit's offsets of orders reset to the earliest offset: orders-0 → 0, orders-1 → 0.",
        }
    finally:
        lab.stop()
