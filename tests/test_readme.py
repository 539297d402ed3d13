"""The README's scripting example runs as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def test_the_scripting_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.DOTALL)
    example = next(b for b in blocks if "Cluster.create" in b)
    exec(compile(example, "README.md", "exec"), {})
    out = capsys.readouterr().out
    assert "RecordMetadata(topic='orders'" in out
    assert "'leader': 2" in out  # broker 1 was killed: the next in-sync replica leads orders-0
    assert "leader_election" in out
