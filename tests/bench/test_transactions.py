"""``python -m lab.bench transactions``: its first line is idempotent produce against the same produce
without idempotence, in the same run (no timing is asserted)."""

from __future__ import annotations

import json

import pytest

from lab.bench import transactions
from lab.bench.__main__ import available


def test_the_first_figure_is_idempotent_produce_with_its_baseline_and_ratio(
    capsys: pytest.CaptureFixture[str],
) -> None:
    transactions.main(quick=True)
    lines = capsys.readouterr().out.splitlines()
    figure = json.loads(lines[0])
    assert figure["bench"] == "idempotent_produce"
    assert figure["records"] == 30_000
    assert (figure["acks"], figure["replication_factor"]) == ("all", 3)
    assert figure["baseline"] == "same_produce_enable_idempotence_false"
    assert figure["target_ratio"] == 0.8
    for key in ("records_per_s", "baseline_records_per_s", "ratio"):
        assert figure[key] > 0
    assert figure["ratio"] == pytest.approx(
        figure["records_per_s"] / figure["baseline_records_per_s"], rel=0.01
    )


def test_transactions_is_one_of_the_benches() -> None:
    assert "transactions" in available()
