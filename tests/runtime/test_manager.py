"""The process's live labs: started once, found by slug, all stopped together."""

from __future__ import annotations

from pathlib import Path

from lab.runtime.manager import Runtime
from lab.runtime.registry import running_labs
from lab.runtime.spec import LabSpec


def test_labs_start_once_and_stop_together(tmp_path: Path) -> None:
    runtime = Runtime()
    a = LabSpec(slug="a", name="A", data_dir=str(tmp_path / "a"), chroot="/kafka-lab/a", brokers=1)
    b = LabSpec(slug="b", name="B", data_dir=str(tmp_path / "b"), chroot="/kafka-lab/b", brokers=1)
    try:
        first = runtime.start(a, zookeeper=None)
        assert runtime.start(a, zookeeper=None) is first
        second = runtime.start(b, zookeeper=None)
        first.ready.result(30)
        second.ready.result(30)
        assert [lab.slug for lab in runtime.labs()] == ["a", "b"]
        assert {s.name for s in running_labs()} >= {"a", "b"}  # the home page sees them
    finally:
        runtime.stop_all()
    assert runtime.labs() == []
    assert runtime.get("a") is None
    assert first.state == second.state == "stopped"
    assert not {s.name for s in running_labs()} & {"a", "b"}
