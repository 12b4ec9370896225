"""manage.py migrate_from_go DIR [--env FILE] [--models FILE] — move a Go hyperguild over."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from hyperguild.lib.progress import progress_bar
from sessions.go_migration import GoMigrationError, GoMigrationReport, migrate_from_go


class Command(BaseCommand):
    help = (
        "Import a Go hyperguild brain folder (notes and sessions) and read its .env and models.yaml: prints what "
        "was taken, what was mapped, what cannot be used, and the lines to put in this service's environment. "
        "Safe to run again: a second run changes nothing."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "directory", type=Path, help="the Go brain folder (INGEST_BRAIN_DIR: wiki/, raw/, sessions/)"
        )
        parser.add_argument("--env", type=Path, dest="env_file", help="the Go service's .env file")
        parser.add_argument(
            "--models", type=Path, dest="models_file", help="the Go models.yaml (default: next to --env, else in DIR)"
        )
        parser.add_argument("--no-progress", action="store_true", help="no progress bar")

    def handle(
        self,
        *args: Any,
        directory: Path,
        env_file: Path | None = None,
        models_file: Path | None = None,
        no_progress: bool = False,
        **options: Any,
    ) -> None:
        report = self.migrate(directory, env_file=env_file, models_file=models_file, show_progress=not no_progress)
        self.print_report(report)

    def migrate(
        self,
        directory: Path,
        *,
        env_file: Path | None = None,
        models_file: Path | None = None,
        show_progress: bool = True,
    ) -> GoMigrationReport:
        def progress(items: Iterable[Any]) -> Iterable[Any]:
            return progress_bar(self.stderr, items, enabled=show_progress, desc="importing", unit="file")

        for path, what in ((env_file, "--env"), (models_file, "--models")):
            if path is not None and not path.is_file():
                raise CommandError(f"{what} {path} is not a file")
        try:
            return migrate_from_go(directory, env_file=env_file, models_file=models_file, progress=progress)
        except GoMigrationError as exc:
            raise CommandError(str(exc))

    def print_report(self, report: GoMigrationReport) -> None:
        for title, items in (("Took", report.took), ("Mapped", report.mapped), ("Cannot use", report.cannot_use)):
            self.stdout.write(f"{title}:")
            for item in items or ["(nothing)"]:
                self.stdout.write(f"  - {item}")
        self.stdout.write("Put these lines in this service's environment (.env):")
        for line in report.env_lines:
            self.stdout.write(f"  {line}")
        self.stdout.write(self.style.SUCCESS(f"Migrated from the Go hyperguild: {report.changes} change(s)."))
