"""`manage.py project_sync [NAME]`: fetch each project's repository and re-verify the notes its new head may change.

Incremental (docs/truth.md): only anchors in files that changed since the last synced head are checked
again. Prints, per project, the old and new head, the files changed, the notes re-checked and the
notes stale among them. A project whose repository cannot be read is reported and skipped; the
command fails only when NAME names no project.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from brain.actions import RecheckOutcome, do_sync_project
from brain.models import Project


class Command(BaseCommand):
    help = (
        "Sync one project (or all) with its repository's branch head and re-verify the notes anchored to changed files."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", nargs="?", help="the project (default: every project with a repository)")

    def handle(self, *args: Any, name: str | None = None, **options: Any) -> None:
        outcomes = self.sync(name)
        failed = sum(1 for outcome in outcomes if outcome.error)
        self.stdout.write(self.style.SUCCESS(f"synced {len(outcomes) - failed} of {len(outcomes)} projects"))

    def sync(self, name: str | None = None) -> list[RecheckOutcome]:
        projects = Project.objects.exclude(repo="")
        if name:
            projects = Project.objects.filter(name=name)
            if not projects.exists():
                raise CommandError(f"no project named {name!r}; see manage.py project list")
        outcomes = []
        for project in projects:
            outcome = do_sync_project(project)
            outcomes.append(outcome)
            if outcome.error:
                self.stdout.write(
                    self.style.WARNING(
                        f"{project.name}: repository cannot be read ({outcome.error}); its notes are unverified"
                    )
                )
                continue
            if outcome.already_synced_at is not None:
                ago = (timezone.now() - outcome.already_synced_at).total_seconds()
                self.stdout.write(
                    f"{project.name}: already at {outcome.new[:7]}, synced {ago:.0f} s ago (by another sync, e.g. the "
                    f"schedule); stale now: {', '.join(outcome.stale_now) or 'none'}"
                )
                continue
            moved = f"{outcome.old[:7] or '(first sync)'} → {outcome.new[:7]}"
            self.stdout.write(
                f"{project.name}: {moved}, {outcome.changed_files} files changed, {outcome.notes_rechecked} notes "
                f"re-checked ({outcome.anchors_rechecked} anchors), stale: {', '.join(outcome.stale) or 'none'}"
            )
        return outcomes
