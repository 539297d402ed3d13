"""Records as commands: consume as a group, whose commit holds up no one else on the lab."""

from __future__ import annotations

from pathlib import Path

from lab.runtime.spec import TopicSpec
from tests.walltime import advance, now_ms, pause_coordinator, produce, still_lab, until_done


def test_a_commit_its_coordinator_does_not_answer_holds_up_no_one_else(tmp_path: Path) -> None:
    lab, wall = still_lab(
        tmp_path, "commit", topics=(TopicSpec(name="orders", partitions=1, replication_factor=3),)
    )
    try:
        produce(lab, wall, "orders", 3)
        args = {"topic": "orders", "group": "billing", "auto_offset_reset": "earliest"}
        first = until_done(lab, wall, lab.act("records-consume", args))
        assert first["committed"] == {"orders/0": 3}
        produce(lab, wall, "orders", 2)
        coordinator = pause_coordinator(lab, "billing")
        before = now_ms(lab)
        slow = lab.act("records-consume", args)
        # Meanwhile another call answers, and the lab's clock has not leapt request.timeout.ms on:
        # the wall has not moved, so neither has the lab.
        assert now_ms(lab) - before < 1000
        assert not slow.done()
        advance(lab, wall, 1.0)
        assert 1000 <= now_ms(lab) - before < 3000  # the lab kept running at its clock's rate
        assert not slow.done()
        lab.act("resume", {"broker": coordinator}).result(10)
        out = until_done(lab, wall, slow)
        assert [r["offset"] for r in out["records"]] == [3, 4]
        assert out["committed"] == {"orders/0": 5}
    finally:
        lab.stop()
