"""``python manage.py runscenario FILE...`` (and ``python -m lab.scenarios``): a progress bar, then a table.

Exit code 0 when every scenario passed, 1 when one failed, 2 for a file that is not a scenario.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TextIO

from lab.scenarios.format import ScenarioError, load
from lab.scenarios.runner import Report, ScenarioRun, run_to_end

BAR = 30


def _bar(run: ScenarioRun, out: TextIO) -> None:
    total = len(run.scenario.steps)
    done = len(run.results)
    filled = BAR * done // max(1, total)
    failed = sum(1 for r in run.results if not r.ok)
    status = f"  {failed} failed" if failed else ""
    last = run.results[-1].label if run.results else ""
    out.write(f"\r  [{'#' * filled}{'.' * (BAR - filled)}] {done}/{total} {last[:50]:<50}{status}")
    out.flush()


def table(report: Report) -> list[str]:
    lines = []
    for r in report.run.results:
        mark = "PASS" if r.ok else "FAIL"
        lines.append(f"  {mark}  line {r.line:<4} {r.time_ms:>8} ms  {r.label}")
        if r.detail:
            lines.append(f"{'':20}{r.detail}")
        for check in r.checks:
            if not check.ok:
                lines.append(f"{'':20}{check.what}: expected {check.expected!r}, got {check.actual!r}")
    return lines


def run_files(paths: list[str], out: TextIO = sys.stdout) -> int:
    worst = 0
    for path in paths:
        try:
            scenario = load(path)
        except ScenarioError as exc:
            out.write(f"error: {exc}\n")
            worst = max(worst, 2)
            continue
        out.write(f"{scenario.name}  ({Path(path).name}, {len(scenario.steps)} steps)\n")
        report = run_to_end(scenario, progress=lambda run: _bar(run, out))
        out.write("\n")
        for line in table(report):
            out.write(line + "\n")
        verdict = "PASSED" if report.passed else "FAILED"
        failed = sum(1 for r in report.run.results if not r.ok)
        out.write(
            f"{verdict}: {len(report.run.results) - failed}/{len(report.run.results)} steps, {report.time_ms} ms of virtual time\n\n"
        )
        if not report.passed:
            worst = max(worst, 1)
    return worst


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="runscenario", description="Run Kafka Lab scenario files.")
    parser.add_argument("files", nargs="+", help="scenario YAML files (see fixtures/scenarios/)")
    args = parser.parse_args(argv)
    return run_files(args.files)


if __name__ == "__main__":
    sys.exit(main())
