"""manage.py trainer_extract [--session ID]: turn verified skill runs into SFT/DPO candidates (idempotent)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from sessions.trainer import run_trainer
from supervisor.skills import TrainerResult


class Command(BaseCommand):
    help = "Extract SFT and DPO candidates from verified skill runs and routed calls. Safe to re-run."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--session", dest="session_id", default=None, help="Only this session (default: all).")

    def handle(self, *args: Any, session_id: str | None = None, **options: Any) -> None:
        result = self.extract(session_id)
        # `created` and `flagged` are the trainer's own fields of an example (Example keeps them as extras).
        flagged = sum(
            1 for e in result.examples if (e.model_extra or {}).get("created") and (e.model_extra or {}).get("flagged")
        )
        if flagged:
            self.stderr.write(self.style.WARNING(f"{flagged} new example(s) had secrets redacted and are flagged."))
        self.stdout.write(self.style.SUCCESS(result.message))

    def extract(self, session_id: str | None = None) -> TrainerResult:
        return run_trainer(session_id)
