"""``python -m lab.bench NAME [--quick]``: import ``lab.bench.NAME`` and call its ``main(quick)``.

Each benchmark prints JSON lines, one per figure. An unknown NAME lists the ones there are.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

import lab.bench


def available() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules(lab.bench.__path__) if not m.name.startswith("_"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m lab.bench", description="Run one of the lab's benchmarks."
    )
    parser.add_argument("name", help=f"one of: {', '.join(available())}")
    parser.add_argument(
        "--quick", action="store_true", help="a short run (seconds), for tests and smoke checks"
    )
    args = parser.parse_args(argv)
    if args.name not in available():
        print(f"unknown benchmark {args.name!r}; available: {', '.join(available())}", file=sys.stderr)
        return 2
    module = importlib.import_module(f"lab.bench.{args.name}")
    module.main(quick=args.quick)
    return 0


if __name__ == "__main__":
    sys.exit(main())
