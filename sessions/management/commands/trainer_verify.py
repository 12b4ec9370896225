"""manage.py trainer_verify [--kind sft|dpo] [--limit N] [--pending]: replay each example's change before export."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from sessions.actions import do_record_replay
from sessions.models import TrainingExample
from sessions.replay import replay_example


class Command(BaseCommand):
    help = (
        "Rebuild each example's recorded pre-state in a scratch folder, apply the example's own diff and run the "
        "recorded test command: red must fail, green/refactor (and debug) must pass; for DPO the rejected change "
        "must not verify. The result is stored on the example (replay_status); invalid examples are left out of "
        "trainer_export by default and shown in the curation UI."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--kind", choices=TrainingExample.Kind.values)
        parser.add_argument("--limit", type=int, default=None, help="At most N examples (oldest first).")
        parser.add_argument("--pending", action="store_true", help="Only examples not replayed yet.")

    def handle(self, *args: Any, kind: str | None, limit: int | None, pending: bool, **options: Any) -> None:
        examples = TrainingExample.objects.exclude(status=TrainingExample.Status.REJECTED).order_by("id")
        if kind:
            examples = examples.filter(kind=kind)
        if pending:
            examples = examples.filter(replay_status=TrainingExample.ReplayStatus.PENDING)
        if limit is not None:
            examples = examples[: max(0, limit)]
        counts: dict[str, int] = {}
        for example in examples:
            outcome = replay_example(example)
            do_record_replay(example, outcome)
            status = outcome["status"]
            counts[status] = counts.get(status, 0) + 1
            line = f"{example.kind} #{example.pk} ({example.skill}): {status} - {outcome['reason']}"
            if status == TrainingExample.ReplayStatus.INVALID:
                self.stdout.write(self.style.ERROR(line))
            elif status == TrainingExample.ReplayStatus.VALID:
                self.stdout.write(self.style.SUCCESS(line))
            else:
                self.stdout.write(line)
        summary = ", ".join(f"{counts.get(s, 0)} {s}" for s in TrainingExample.ReplayStatus.values if s != "pending")
        self.stdout.write(f"Replayed {sum(counts.values())} example(s): {summary}.")
