"""manage.py brain_import DIR — read a hyperguild brain folder into the database."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from brain.folder import FolderError, FolderSummary, import_folder
from hyperguild.lib.progress import progress_bar


class Command(BaseCommand):
    help = (
        "Import a brain folder (wiki/<wing>/<hall>/…md, raw/…md, sessions/*.jsonl). "
        "Running it twice changes nothing; files that do not parse are reported and skipped."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("directory", type=Path, help="the brain folder (the one holding wiki/ and raw/)")
        parser.add_argument(
            "--archive-missing",
            action="store_true",
            help="archive previously imported notes whose file is no longer in the folder",
        )
        parser.add_argument("--no-progress", action="store_true", help="no progress bar")

    def handle(self, *args, directory: Path, archive_missing: bool = False, no_progress: bool = False, **options):
        summary = self.import_directory(directory, archive_missing=archive_missing, show_progress=not no_progress)
        self.report(summary)

    def import_directory(self, directory: Path, *, archive_missing: bool = False, show_progress: bool = True) -> FolderSummary:
        def progress(items):
            return progress_bar(self.stderr, items, enabled=show_progress, desc="importing", unit="file")

        try:
            return import_folder(directory, progress=progress, archive_missing=archive_missing)
        except FolderError as exc:
            raise CommandError(str(exc))

    def report(self, summary: FolderSummary) -> None:
        self.stdout.write(
            f"added {summary.added}, updated {summary.updated}, unchanged {summary.unchanged}, "
            f"archived {summary.archived}, errors {len(summary.errors)}"
        )
        for name, message in summary.errors:
            self.stdout.write(self.style.WARNING(f"  {name}: {message}"))
        if summary.descriptions:
            self.stdout.write(f"wing/hall descriptions (_index.md) added or changed: {summary.descriptions}")
        for line in summary.ambiguous_links:
            self.stdout.write(self.style.WARNING(f"  {line}"))
        if summary.sessions is not None:
            self.stdout.write(f"sessions: {summary.sessions}")
        self.stdout.write(self.style.SUCCESS(f"Imported the brain folder: {summary.changes} change(s)."))
