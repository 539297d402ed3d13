"""``python -m lab.bench transactions``: its first line is idempotent produce against the same produce
without idempotence, its second transactions of 100 records against the same records without
transactions, each in the same run (no timing is asserted)."""

from __future__ import annotations

import json

import pytest

from lab.bench import transactions
from lab.bench.__main__ import available


def test_the_figures_are_idempotent_produce_then_transactions_with_their_baselines_and_ratios(
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
    second = json.loads(lines[1])
    assert second["bench"] == "transactions"
    assert (second["records"], second["records_per_transaction"]) == (5_000, 100)
    assert second["baseline"] == "same_records_idempotent_flushed_per_100"
    assert second["target_ratio"] == 0.3
    for key in ("records_per_s", "transactions_per_s", "baseline_records_per_s", "ratio"):
        assert second[key] > 0
    assert second["ratio"] == pytest.approx(
        second["records_per_s"] / second["baseline_records_per_s"], rel=0.01
    )


def test_transactions_is_one_of_the_benches() -> None:
    assert "transactions" in available()
