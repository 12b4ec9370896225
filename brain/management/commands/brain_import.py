"""manage.py brain_import DIR — read a hyperguild brain folder, or a plain folder of markdown, into the database."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from brain.folder import FolderError, FolderSummary, PlainFolder, default_plain_folder, import_folder
from brain.models import NoteStatus
from hyperguild.lib.progress import Item, progress_bar


class Command(BaseCommand):
    help = (
        "Import a brain folder (wiki/<wing>/<hall>/…md, raw/…md, sessions/*.jsonl), or a plain folder of .md "
        "files (as wiki notes under --wing, default the folder's name, or with --raw for review). "
        "Running it twice changes nothing; files that do not parse are reported and skipped."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "directory", type=Path, help="the brain folder (the one holding wiki/ and raw/), or a folder of .md files"
        )
        parser.add_argument(
            "--wing", default="", help="plain folder: the wing of its notes (default: the folder's name)"
        )
        parser.add_argument("--hall", default="", help="plain folder: the hall of its notes (default: none)")
        parser.add_argument(
            "--raw", action="store_true", help="plain folder: import its files as raw notes, for review (no wing)"
        )
        parser.add_argument(
            "--archive-missing",
            action="store_true",
            help="archive previously imported notes whose file is no longer in the folder",
        )
        parser.add_argument("--no-progress", action="store_true", help="no progress bar")

    def handle(
        self,
        *args: Any,
        directory: Path,
        archive_missing: bool = False,
        no_progress: bool = False,
        wing: str = "",
        hall: str = "",
        raw: bool = False,
        **options: Any,
    ) -> None:
        plain = self.plain_folder(directory, wing=wing, hall=hall, raw=raw)
        summary = self.import_directory(
            directory, archive_missing=archive_missing, show_progress=not no_progress, plain=plain
        )
        self.report(summary)

    @staticmethod
    def plain_folder(directory: Path, *, wing: str = "", hall: str = "", raw: bool = False) -> PlainFolder | None:
        """The place asked for on the command line; None when no option asks (a brain folder needs none)."""
        if raw and (wing or hall):
            raise CommandError(
                "--raw notes wait for review and have no wing or hall yet: give --raw, or --wing/--hall."
            )
        if raw:
            return PlainFolder(status=NoteStatus.RAW)
        if hall and not wing:
            wing = default_plain_folder(directory).wing
        if wing:
            return PlainFolder(status=NoteStatus.WIKI, wing=wing, hall=hall)
        return None

    def import_directory(
        self,
        directory: Path,
        *,
        archive_missing: bool = False,
        show_progress: bool = True,
        plain: PlainFolder | None = None,
    ) -> FolderSummary:
        def progress(items: Iterable[Item]) -> Iterable[Item]:
            return progress_bar(self.stderr, items, enabled=show_progress, desc="importing", unit="file")

        try:
            return import_folder(directory, progress=progress, archive_missing=archive_missing, plain=plain)
        except FolderError as exc:
            raise CommandError(str(exc))

    def report(self, summary: FolderSummary) -> None:
        if summary.plain is not None:
            placed = summary.added + summary.updated + summary.unchanged
            self.stdout.write(
                f"a plain folder (no wiki/ or raw/): {placed} file(s) imported as {summary.plain.describe()}"
            )
        self.stdout.write(
            f"added {summary.added}, updated {summary.updated}, unchanged {summary.unchanged}, "
            f"archived {summary.archived}, errors {len(summary.errors)}"
        )
        for name, message in summary.errors:
            self.stdout.write(self.style.WARNING(f"  {name}: {message}"))
        if summary.ignored:
            self.stdout.write(
                self.style.WARNING(
                    f"{len(summary.ignored)} .md file(s) outside wiki/ and raw/ were not imported (a brain folder's "
                    f"notes live under wiki/<wing>/<hall>/ or raw/): {', '.join(summary.ignored[:5])}"
                    + (" …" if len(summary.ignored) > 5 else "")
                )
            )
        if summary.descriptions:
            self.stdout.write(f"wing/hall descriptions (_index.md) added or changed: {summary.descriptions}")
        for line in summary.ambiguous_links:
            self.stdout.write(self.style.WARNING(f"  {line}"))
        if summary.sessions is not None:
            self.stdout.write(f"sessions: {summary.sessions}")
        self.stdout.write(self.style.SUCCESS(f"Imported the brain folder: {summary.changes} change(s)."))
