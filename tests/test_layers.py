"""The layers of ARCHITECTURE.md hold: imports only go downward, and the pure layers stay pure."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

LAB = Path(__file__).resolve().parent.parent / "lab"

# package -> modules it must not import (a name or any submodule of it)
FORBIDDEN = {
    "engine": {
        "django",
        "channels",
        "lab.runtime",
        "lab.visuals",
        "lab.wire",
        "lab.views",
        "threading",
        "asyncio",
        "socket",
        "time",
        "secrets",
    },
    "wire": {"django", "channels", "lab.runtime", "lab.visuals", "threading", "asyncio", "socket", "time"},
    "visuals": {"django", "channels", "lab.runtime", "threading", "asyncio", "socket", "time"},
}
# The one door to kazoo and its threads (ARCHITECTURE.md, "Layers").
ALLOWED = {"engine/metadata/zookeeper.py", "engine/metadata/zookeeper_proxy.py"}


def imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def modules(package: str) -> list[Path]:
    return sorted(p for p in (LAB / package).rglob("*.py") if str(p.relative_to(LAB)) not in ALLOWED)


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_a_pure_layer_imports_nothing_above_it_and_no_wall_clock_or_threads(package: str) -> None:
    assert modules(package), f"lab/{package} has no modules"
    broken = {
        str(path.relative_to(LAB)): sorted(
            name
            for name in imports(path)
            if any(name == bad or name.startswith(bad + ".") for bad in FORBIDDEN[package])
        )
        for path in modules(package)
    }
    assert {path: names for path, names in broken.items() if names} == {}


def test_the_check_sees_a_forbidden_import(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("import time\nfrom django.db import models\nfrom . import sibling\n")
    assert imports(module) == {"time", "django.db"}


def test_the_engine_draws_only_from_seeded_generators() -> None:
    # random.Random(seed) instances only: the module's own functions share one global state that
    # anything in the process may touch, so a run could not be replayed from its seed.
    used = {
        str(path.relative_to(LAB)): sorted(
            node.attr
            for node in ast.walk(ast.parse(path.read_text(), str(path)))
            if isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "random"
            and node.attr != "Random"
        )
        for path in modules("engine")
    }
    assert {path: attrs for path, attrs in used.items() if attrs} == {}
