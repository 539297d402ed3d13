"""``python -m lab.bench wire``: real clients over loopback against the engine in process.

It runs and prints well-formed figures; no timing is asserted (the machine is shared).
"""

from __future__ import annotations

import json

import pytest

from lab.bench import wire
from lab.bench.__main__ import available


def test_wire_is_a_bench_of_its_own() -> None:
    assert "wire" in available()
    assert "_wire_clients" not in available()  # the child processes' side is not a bench


def test_quick_run_prints_one_well_formed_line_per_figure(capsys: pytest.CaptureFixture[str]) -> None:
    wire.main(quick=True)
    figures = {f["bench"]: f for f in map(json.loads, capsys.readouterr().out.splitlines())}
    assert list(figures) == ["wire_produce", "wire_consume", "wire_round_trip"]

    produce = figures["wire_produce"]
    assert produce["client"] == "confluent-kafka"
    assert produce["acks"] == "all"
    assert produce["linger_ms"] == 5
    assert produce["stored"] == produce["records"] == 20_000  # every acknowledged record is in the logs
    assert 1 <= produce["mean_batch_records"] <= produce["records"]
    assert produce["baseline"] == "engine_in_process_same_batches"

    consume = figures["wire_consume"]
    assert consume["client"] == "kafka-python"
    assert consume["consumers"] == 3
    assert consume["records_read"] >= consume["records"] == 60_000
    assert consume["baseline"] == "consume_bench_in_process"
    assert consume["first_record_s"] > 0

    for figure in (produce, consume):
        assert figure["records_per_s"] > 0
        assert figure["baseline_records_per_s"] > 0
        assert figure["ratio"] == pytest.approx(
            figure["records_per_s"] / figure["baseline_records_per_s"], abs=0.002
        )
        assert figure["target_ratio"] == 0.25
        assert figure["elapsed_s"] > 0
        assert figure["client_cpu_s"] > 0
        assert figure["lab_cpu_s"] > 0

    trip = figures["wire_round_trip"]
    assert trip["samples"] == 200
    assert trip["clock_rate"] == 1
    assert 0 < trip["p50_ms"] <= trip["p99_ms"]
    assert 0 < trip["baseline_p50_ms"] <= trip["baseline_p99_ms"]
    assert 0 < trip["floor_p50_ms"] <= trip["floor_p99_ms"]
    assert trip["ratio"] == pytest.approx(trip["baseline_p50_ms"] / trip["p50_ms"], abs=0.01)
    assert trip["target_p99_ms"] == 5
    assert all(f["cpus"] >= 1 and f["load_1m"] >= 0 for f in figures.values())
