"""The storage benchmark runs and prints its figures as JSON lines (no timing is asserted)."""

from __future__ import annotations

import json

import pytest

from lab.bench import storage
from lab.bench.__main__ import available
from lab.bench.__main__ import main as bench_main


def test_quick_storage_benchmark_prints_its_figures(capsys: pytest.CaptureFixture[str]) -> None:
    storage.main(quick=True)
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    figures = {(f["bench"], f.get("segment_bytes")) for f in lines}
    assert ("storage_append", 1073741824) in figures
    assert ("storage_read", 1073741824) in figures
    assert ("storage_append", storage.SMALL_SEGMENT_BYTES) in figures
    for figure in lines:
        if figure["bench"] in ("storage_append", "storage_read"):
            assert figure["records"] == 100_000
            assert figure["record_bytes"] == 100
            assert figure["batch"] == 500
            assert figure["baseline"] in ("raw_file_append", "raw_file_read")
            for key in ("records_per_s", "baseline_records_per_s", "ratio"):
                assert isinstance(figure[key], int | float)
                assert figure[key] > 0
    layout = next(f for f in lines if f["bench"] == "storage_layout")
    assert layout["ok"], layout["problems"]
    assert (layout["index_entry_bytes"], layout["timeindex_entry_bytes"]) == (8, 12)
    assert layout["segments"] > 1
    assert layout["index_entries"] > 0
    assert layout["sample"][0] == "00000000000000000000.index"


def test_dispatcher_lists_the_benchmarks_for_an_unknown_name(capsys: pytest.CaptureFixture[str]) -> None:
    assert "storage" in available()
    assert bench_main(["no-such-bench"]) == 2
    assert "available: " in capsys.readouterr().err
