"""`manage.py setup`: what a deployment runs once per release, before the web servers and workers.

Applies migrations (which install the periodic schedules), creates the admin
account if there is none, and lists the schedules. `make run` (`serve`) does
the same before it starts its processes.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser

from hyperguild.actions import do_ensure_admin_account, do_ensure_schedules


class Command(BaseCommand):
    help = "Migrate the database, install the periodic schedules and create the admin account if there is none."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--no-admin", action="store_true", help="do not create an admin account")

    def handle(self, *args: Any, no_admin: bool = False, **options: Any) -> None:
        call_command("migrate", interactive=False, verbosity=0)
        self.stdout.write("migrations applied")
        names = do_ensure_schedules()
        self.stdout.write(f"schedules installed: {', '.join(names)}")
        if not no_admin:
            user, generated = do_ensure_admin_account(
                settings.HYPERGUILD_ADMIN_USER, settings.HYPERGUILD_ADMIN_PASSWORD
            )
            if user is not None:
                shown = f" with password {generated} (shown once)" if generated else ""
                self.stdout.write(f"created admin account {user.username!r}{shown}")
        self.stdout.write(self.style.SUCCESS("setup done"))
