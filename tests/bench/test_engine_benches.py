"""The engine's benchmarks run and print their figures as JSON lines (no timing is asserted)."""

from __future__ import annotations

import json

import pytest

from lab.bench import consume, failover, replicate


def _lines(capsys: pytest.CaptureFixture[str]) -> dict[str, list[dict[str, object]]]:
    out: dict[str, list[dict[str, object]]] = {}
    for line in capsys.readouterr().out.splitlines():
        figure = json.loads(line)
        out.setdefault(str(figure["bench"]), []).append(figure)
    return out


def test_replicate_and_ack_latency(capsys: pytest.CaptureFixture[str]) -> None:
    replicate.main(quick=True)
    lines = _lines(capsys)
    rep = lines["replicate"][0]
    assert rep["records"] == 100_000
    assert rep["acks"] == "all"
    assert rep["replication_factor"] == 3
    assert rep["baseline"] == "raw_append_three_files"
    assert all(
        isinstance(rep[k], int | float) and rep[k] > 0
        for k in ("records_per_s", "baseline_records_per_s", "ratio")
    )
    lat = lines["ack_latency"][0]
    assert 0 < lat["p50_ms"] <= lat["p99_ms"]


@pytest.mark.zookeeper
def test_failover_on_a_real_zookeeper(
    capsys: pytest.CaptureFixture[str], zookeeper: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LAB_ZOOKEEPER", zookeeper)
    failover.main(quick=True)
    figure = _lines(capsys)["failover"][0]
    assert figure["partitions"] == 100
    assert figure["store"] == "zookeeper"
    assert figure["failover_ms"] > 0
    assert figure["baseline_ms"] > 0


def test_consume_and_rebalance(capsys: pytest.CaptureFixture[str]) -> None:
    consume.main(quick=True)
    lines = _lines(capsys)
    figure = lines["consume"][0]
    assert figure["records"] == 120_000
    assert figure["consumers"] == 3
    assert figure["ratio_vs_decode"] > 0
    by_assignor = {f["assignor"]: f for f in lines["rebalance"]}
    assert (
        by_assignor["range"]["partitions_revoked_by_survivors"] == 90
    )  # eager: everyone gives up everything
    assert (
        by_assignor["cooperative-sticky"]["partitions_revoked_by_survivors"] == 0
    )  # only the dead member's move
