"""Every scenario shipped in fixtures/scenarios runs and meets every expectation."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.scenarios import load, run_to_end

SCENARIOS = sorted((Path(__file__).resolve().parents[2] / "fixtures" / "scenarios").glob("*.yaml"))


def test_the_lab_ships_the_scenarios_the_issue_asks_for() -> None:
    names = {p.stem for p in SCENARIOS}
    assert {
        "leader-failover",
        "slow-follower",
        "acks1-data-loss",
        "unclean-election",
        "kip101-truncation-without-epochs",
        "kip101-truncation-with-epochs",
        "min-insync-rejects-writes",
        "rebalance-eager-vs-cooperative",
        "consumer-rewind",
        "retention",
        "compaction",
        "controller-failover",
        "hanging-transaction",
        "duplicate-without-idempotence",
        "no-duplicate-with-idempotence",
        "zombie-producer-fenced",
        "read-committed-vs-uncommitted",
        "coordinator-failover-mid-commit",
    } <= names


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_shipped_scenario_passes(path: Path) -> None:
    report = run_to_end(load(path))
    failures = [
        f"line {r.line} {r.label}: {r.detail} "
        + "; ".join(f"{c.what}: expected {c.expected!r}, got {c.actual!r}" for c in r.checks if not c.ok)
        for r in report.run.results
        if not r.ok
    ]
    assert not failures, "\n".join(failures)
    assert len(report.run.results) == len(report.scenario.steps)
