"""manage.py sessions_export DIR: write every session back as `<session_id>.jsonl`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from tqdm import tqdm

from sessions.folder import SessionsExport, export_sessions_dir
from sessions.models import AgentSession


class Command(BaseCommand):
    help = "Export session logs as <session_id>.jsonl files (imported sessions come out byte for byte)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("directory", type=Path, help="Folder to write (created if missing).")
        parser.add_argument("--no-progress", action="store_true", help="no progress bar")
        parser.add_argument("--session", action="append", dest="sessions", help="Only this session id (repeatable).")

    def handle(self, *args: Any, directory: Path, sessions: list[str] | None = None, **options: Any) -> None:
        summary = self.export_dir(
            directory, sessions, show_progress=options["verbosity"] > 0 and not options.get("no_progress")
        )
        self.stdout.write(
            self.style.SUCCESS(
                f"Exported {summary['files']} session(s) to {directory}: {summary['written']} written, "
                f"{summary['unchanged']} unchanged, {summary['entries']} entries."
            )
        )

    def export_dir(
        self, directory: Path, sessions: list[str] | None = None, *, show_progress: bool = False
    ) -> SessionsExport:
        total = AgentSession.objects.filter(**({"external_id__in": sessions} if sessions else {})).count()
        with tqdm(total=total, unit="session", disable=not show_progress or total < 2, file=self.stderr) as bar:
            return export_sessions_dir(directory, sessions, progress=lambda _name: bar.update(1))
