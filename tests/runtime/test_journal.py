"""The commands that changed a lab, on disk: who asked, when, with what; and a replay of them on a fresh
memory-store lab with the same seed reaches the same state."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from lab.engine.errors import InvalidTopic
from lab.runtime.journal import FILE, CommandJournal, replay
from lab.runtime.live import LiveLab
from lab.runtime.spec import LabSpec, TopicSpec
from tests.walltime import FakeWall, advance, still_lab, until_done


def _state(lab: LiveLab) -> dict[str, Any]:
    """The whole snapshot (topics, partitions, leaders, ISRs, every replica's offsets, brokers, controller,
    groups, the clock) but the lab's name."""
    snap = lab.act("snapshot", {}).result(10)
    return {k: v for k, v in snap.items() if k != "name"}


def _run(lab: LiveLab, wall: FakeWall, name: str, args: dict[str, Any], by: str = "ada") -> Any:
    return until_done(lab, wall, lab.act(name, args, by=by))


def test_a_replay_of_the_journal_on_a_fresh_lab_reaches_the_same_state(tmp_path: Path) -> None:
    lab, wall = still_lab(
        tmp_path, "first", topics=(TopicSpec(name="orders", partitions=2, replication_factor=3),)
    )
    try:
        _run(lab, wall, "produce", {"topic": "orders", "count": 5, "acks": "all"})
        advance(lab, wall, 1.0)
        _run(lab, wall, "topic-create", {"name": "audit", "partitions": 2, "replication_factor": 2})
        _run(lab, wall, "client-producer", {"topic": "audit", "rate": 20, "name": "feeder"}, by="grace")
        advance(lab, wall, 2.0)
        _run(lab, wall, "kill", {"broker": 2})
        advance(lab, wall, 3.0)
        _run(
            lab,
            wall,
            "records-send",
            {"topic": "orders", "value": "v{i}", "partition": 1, "count": 3, "acks": "1"},
        )
        _run(lab, wall, "restart", {"broker": 2})
        advance(lab, wall, 4.0)
        _run(lab, wall, "topic-partitions", {"topic": "orders", "total": 3})
        advance(lab, wall, 1.0)
        lab.act("snapshot", {}).result(10)  # a read: not kept
        _run(lab, wall, "clock-pause", {})
        first = _state(lab)
        assert len(first["topics"]["orders"]["partitions"]) == 3
        assert (
            sum(int(r["log_end_offset"]) for r in first["topics"]["audit"]["partitions"][0]["logs"].values())
            > 0
        )
    finally:
        lab.stop()

    journal = CommandJournal(tmp_path / "first")
    lines = [json.loads(line) for line in (tmp_path / "first" / FILE).read_text().splitlines()]
    assert lines[0]["start"]["seed"] == 7
    assert [t["name"] for t in lines[0]["start"]["topics"]] == ["orders"]
    kept = journal.entries()
    assert [e.name for e in kept] == [
        "produce",
        "topic-create",
        "client-producer",
        "kill",
        "records-send",
        "restart",
        "topic-partitions",
        "clock-pause",
    ]
    assert [e.by for e in kept][:3] == ["ada", "ada", "grace"]
    assert kept[3].args == {"broker": 2}
    assert all(a.at_ms <= b.at_ms for a, b in itertools.pairwise(kept))

    start = journal.start()
    assert start is not None
    spec = LabSpec.from_settings(
        slug="again",
        name="again",
        data_dir=str(tmp_path / "again"),
        chroot="/again",
        brokers=start["brokers"],
        settings=start,
    )
    again, _ = still_lab(
        tmp_path, "again", **{k: getattr(spec, k) for k in ("brokers", "config", "seed", "topics", "clients")}
    )
    try:
        replay(again, kept, until_ms=first["time_ms"]).result(60)
        assert _state(again) == first
    finally:
        again.stop()


def test_a_restart_keeps_the_earlier_life_and_reads_are_not_kept(tmp_path: Path) -> None:
    lab, wall = still_lab(tmp_path, "twice")
    try:
        _run(lab, wall, "topic-create", {"name": "audit", "partitions": 1, "replication_factor": 1})
        lab.act("topics", {}).result(10)
        with pytest.raises(InvalidTopic):  # refused: it changed nothing, and is not kept
            lab.act("topic-create", {"name": "bad name"}).result(10)
    finally:
        lab.stop()
    again, wall = still_lab(tmp_path, "twice")
    try:
        _run(again, wall, "kill", {"broker": 1}, by="grace")
    finally:
        again.stop()
    lines = [json.loads(line) for line in (tmp_path / "twice" / FILE).read_text().splitlines()]
    assert [next(iter(line)) if "start" in line else line["name"] for line in lines] == [
        "start",
        "topic-create",
        "start",
        "kill",
    ]
    journal = CommandJournal(tmp_path / "twice")
    assert [(e.seq, e.name, e.by) for e in journal.entries()] == [(1, "kill", "grace")]
