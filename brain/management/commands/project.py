"""Projects as records: `manage.py project add NAME --repo PATH_OR_GIT_URL [--branch B] [--folder NAME …]`.

    manage.py project add ledgerly --repo /srv/src/ledgerly --folder ledgerly
    manage.py project add ledgerly --repo https://git.example.com/team/ledgerly.git --branch main
    manage.py project list

`add` records the project (or updates the one of that name) and syncs it once: the branch head is
recorded and the project's notes are verified against it (docs/truth.md). A repository the service
cannot read is kept with the reason, and its notes stay unverified.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from brain.actions import do_add_project
from brain.errors import BrainInputError
from brain.models import Project


class Command(BaseCommand):
    help = "Add or update a project (name, repository, branch, folders) and verify its notes; or list projects."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="verb", required=True)
        add = sub.add_parser("add", help="add or update a project, then sync it once")
        add.add_argument("name")
        add.add_argument("--repo", required=True, help="a local path under SUPERVISOR_ALLOWED_ROOTS, or a git URL")
        add.add_argument("--branch", default="main", help="the branch that is the team's truth (default main)")
        add.add_argument(
            "--folder",
            action="append",
            default=[],
            dest="folders",
            help="a folder name or absolute path that means this project (repeatable)",
        )
        sub.add_parser("list", help="every project with its head and state")

    def handle(self, *args: Any, verb: str, **options: Any) -> None:
        if verb == "add":
            self.add(options["name"], options["repo"], options["branch"], options["folders"])
        else:
            self.list()

    def add(self, name: str, repo: str, branch: str, folders: list[str]) -> Project:
        try:
            project = do_add_project(name=name, repo=repo, branch=branch, folders=folders)
        except BrainInputError as exc:
            raise CommandError(str(exc)) from None
        if project.sync_error:
            self.stdout.write(
                self.style.WARNING(
                    f"project {project.name} added, but its repository cannot be read: {project.sync_error}. "
                    "Its notes stay unverified until it can."
                )
            )
        else:
            self.stdout.write(
                self.style.SUCCESS(
                    f"project {project.name}: {project.repo} ({project.branch}) at {project.last_synced_commit[:7]}, "
                    f"{project.notes.count()} notes"
                )
            )
        return project

    def list(self) -> None:
        for project in Project.objects.all():
            head = project.last_synced_commit[:7] or "not synced"
            state = f"unreadable: {project.sync_error}" if project.sync_error else head
            self.stdout.write(f"{project.name}\t{project.repo or '(no repository)'}\t{project.branch}\t{state}")
        self.stdout.write(self.style.SUCCESS(f"{Project.objects.count()} projects"))
