"""``python -m lab.bench NAME [--quick] [options]``: import ``lab.bench.NAME`` and call its ``main(quick)``.

Each benchmark prints JSON lines, one per figure. An unknown NAME lists the ones there are. A bench
with options of its own (``classroom``: a smaller class, a shorter window, profiles) takes them as
``main(quick, argv)``; ``python -m lab.bench NAME --help`` lists them.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import pkgutil
import sys

import lab.bench


def available() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules(lab.bench.__path__) if not m.name.startswith("_"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m lab.bench",
        description="Run one of the lab's benchmarks.",
        add_help=False,  # NAME --help is the bench's own options
    )
    parser.add_argument("name", nargs="?", help=f"one of: {', '.join(available())}")
    parser.add_argument(
        "--quick", action="store_true", help="a short run (seconds), for tests and smoke checks"
    )
    args, rest = parser.parse_known_args(argv)
    if args.name is None:
        parser.print_help()
        return 0 if {"-h", "--help"} & set(rest) else 2
    if args.name not in available():
        print(f"unknown benchmark {args.name!r}; available: {', '.join(available())}", file=sys.stderr)
        return 2
    module = importlib.import_module(f"lab.bench.{args.name}")
    if "argv" in inspect.signature(module.main).parameters:
        module.main(quick=args.quick, argv=rest)
    elif rest:
        parser.error(f"{args.name} takes no options but --quick: {' '.join(rest)}")
    else:
        module.main(quick=args.quick)
    return 0


if __name__ == "__main__":
    sys.exit(main())
