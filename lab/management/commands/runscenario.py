"""``python manage.py runscenario FILE...``: run scenario files on a fresh in-memory cluster each."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from lab.scenarios.cli import run_files


class Command(BaseCommand):
    help = "Run Kafka Lab scenario files (YAML): a progress bar, then a pass/fail table. Exit code 1 if any fails."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "files", nargs="+", help="scenario files, e.g. fixtures/scenarios/leader-failover.yaml"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        code = run_files(options["files"], self.stdout)
        if code:
            raise SystemExit(code)
