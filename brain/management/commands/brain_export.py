"""manage.py brain_export DIR — write every raw and wiki note as a brain folder."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from brain.folder import FolderSummary, export_folder
from brain.models import Note
from hyperguild.lib.progress import Item, progress_bar


class Command(BaseCommand):
    help = (
        "Export raw and wiki notes to DIR as wiki/<wing>/<hall>/<slug>.md and raw/<slug>.md "
        "(rejected and archived notes are not exported). Two exports are byte-identical."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("directory", type=Path, help="where to write (created if missing)")
        parser.add_argument("--no-progress", action="store_true", help="no progress bar")

    def handle(self, *args: Any, directory: Path, no_progress: bool = False, **options: Any) -> None:
        summary = self.export_directory(directory, show_progress=not no_progress)
        self.report(summary)

    def export_directory(self, directory: Path, *, show_progress: bool = True) -> FolderSummary:
        total = Note.objects.exportable().count()

        def progress(items: Iterable[Item]) -> Iterable[Item]:
            return progress_bar(self.stderr, items, enabled=show_progress, total=total, desc="exporting", unit="note")

        return export_folder(directory, progress=progress)

    def report(self, summary: FolderSummary) -> None:
        self.stdout.write(f"written {summary.written}, unchanged {summary.unchanged}, errors {len(summary.errors)}")
        for name, message in summary.errors:
            self.stdout.write(self.style.WARNING(f"  {name}: {message}"))
        if summary.sessions is not None:
            self.stdout.write(f"sessions: {summary.sessions}")
        if summary.training_data is not None:
            self.stdout.write(f"training-data: {summary.training_data}")
        self.stdout.write(self.style.SUCCESS(f"Exported {summary.written + summary.unchanged} note(s)."))
