"""manage.py sessions_import DIR: read `<session_id>.jsonl` files into the database (idempotent)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from sessions.folder import SESSION_FILE_SUFFIX, SessionsImport, import_sessions_dir


class Command(BaseCommand):
    help = "Import a folder of original-format session logs (brain/sessions/<session_id>.jsonl). Safe to re-run."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("directory", type=Path, help="Folder holding <session_id>.jsonl files.")
        parser.add_argument("--no-progress", action="store_true", help="no progress bar")

    def handle(self, *args: Any, directory: Path, **options: Any) -> None:
        summary = self.import_dir(directory, show_progress=options["verbosity"] > 0 and not options.get("no_progress"))
        for error in summary["errors"]:
            self.stderr.write(self.style.WARNING(f"skipped {error['file']}: {error['error']}"))
        if options["verbosity"] > 1:
            self.stdout.write(json.dumps(summary, indent=2))
        self.stdout.write(
            self.style.SUCCESS(
                f"Imported {summary['files']} session file(s): {summary['entries_created']} new entries, "
                f"{summary['entries_existing']} already there, {len(summary['errors'])} file(s) skipped."
            )
        )

    def import_dir(self, directory: Path, *, show_progress: bool = False) -> SessionsImport:
        if not directory.is_dir():
            raise CommandError(f"{directory} is not a folder; pass the brain's sessions/ folder.")
        total = len(list(directory.glob(f"*{SESSION_FILE_SUFFIX}")))
        with tqdm(total=total, unit="file", disable=not show_progress or total < 2, file=self.stderr) as bar:
            return import_sessions_dir(directory, progress=lambda _name: bar.update(1))
