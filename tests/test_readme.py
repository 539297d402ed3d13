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


def test_the_log_start_is_never_called_lso() -> None:
    # In Kafka the LSO is the last stable offset (transactions); the README may name it only to say so.
    text = README.read_text()
    for found in re.finditer(r"\bLSO\b", text):
        assert "last stable offset" in text[found.start() - 120 : found.end() + 120], found.start()
    assert "the log start, HW and LEO marked" in text
