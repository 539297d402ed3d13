"""One door: pages and the API ask a lab for named commands with JSON arguments (``LiveLab.act``), never
a Python closure run on its thread (``LiveLab.submit``), which could not travel to another process."""

from __future__ import annotations

import ast
from pathlib import Path

LAB = Path(__file__).resolve().parent.parent / "lab"
DOORS = [
    *sorted((LAB / "api").rglob("*.py")),
    *sorted((LAB / "adminpanel").rglob("*.py")),
    *sorted(LAB.glob("views*.py")),
]


def _submits(path: Path) -> list[int]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and node.attr in ("submit", "post")
        and "live" in ast.unparse(node.value).lower()
    ]


def test_no_page_or_api_module_runs_a_closure_on_a_lab() -> None:
    assert len(DOORS) > 20  # the walk found the modules
    found = {str(path.relative_to(LAB.parent)): lines for path in DOORS if (lines := _submits(path))}
    assert found == {}


def test_the_check_finds_a_closure_submitted(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("def f(live):\n    return live.submit(lambda lab: lab.cluster)\n", encoding="utf-8")
    assert _submits(sample) == [2]
