"""Benchmarks: ``python -m lab.bench NAME [--quick]`` runs ``lab.bench.NAME.main(quick)``."""
