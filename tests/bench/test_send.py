"""``python -m lab.bench send``: it runs and prints one well-formed JSON line (no timing is asserted)."""

from __future__ import annotations

import json

import pytest

from lab.bench import send
from lab.bench.__main__ import available


def test_send_prints_one_figure_with_its_baseline_and_ratio(capsys: pytest.CaptureFixture[str]) -> None:
    send.main(quick=True)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1
    figure = json.loads(lines[0])
    assert figure["bench"] == "send"
    assert figure["records"] == 50_000
    assert (figure["acks"], figure["replication_factor"]) == ("all", 3)
    assert figure["baseline"] == "python_loop_three_files_500_record_chunks"
    for key in ("records_per_s", "baseline_records_per_s", "ratio"):
        assert isinstance(figure[key], int | float)
        assert figure[key] > 0
    assert figure["ratio"] == pytest.approx(
        figure["records_per_s"] / figure["baseline_records_per_s"], rel=0.01
    )
    # The application keeps 50,000 futures: young collections run, and take some of the lab's time.
    young, middle, full = figure["gc_collections"]
    assert young > 50
    assert young >= middle >= full >= 0
    assert 0 < figure["gc_share"] < 1


def test_send_is_one_of_the_benches() -> None:
    assert "send" in available()
