"""``python -m lab.bench security``: produce over SASL_SSL against PLAINTEXT in the same run.

It runs and prints a well-formed figure; no timing is asserted (the machine is shared).
"""

from __future__ import annotations

import json

import pytest

from lab.bench import security
from lab.bench.__main__ import available


def test_quick_run_prints_one_well_formed_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert "security" in available()
    security.main(quick=True)
    (figure,) = map(json.loads, capsys.readouterr().out.splitlines())
    assert figure["bench"] == "security_produce"
    assert figure["listener"] == "SASL_SSL"
    assert figure["mechanism"] == "SCRAM-SHA-512"
    assert figure["records"] == 20_000
    assert figure["baseline"] == "plaintext_listener_same_run"
    assert figure["records_per_s"] > 0
    assert figure["baseline_records_per_s"] > 0
    assert figure["ratio"] == pytest.approx(
        figure["records_per_s"] / figure["baseline_records_per_s"], abs=0.002
    )
    assert figure["target_ratio"] == 0.5
