"""manage.py trainer_export --kind sft|dpo [--status approved] OUT.jsonl: TRL-ready JSONL."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from sessions.models import TrainingExample
from sessions.trl_export import export_examples


class Command(BaseCommand):
    help = (
        "Write training examples in the shapes TRL reads: SFT {messages}, DPO {prompt, chosen, rejected}. "
        "Every record is validated; an invalid one is left out and reported."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("out", type=Path, help="The .jsonl file to write.")
        parser.add_argument("--kind", required=True, choices=TrainingExample.Kind.values)
        parser.add_argument("--status", default=TrainingExample.Status.APPROVED, choices=TrainingExample.Status.values)

    def handle(self, *args, out: Path, kind: str, status: str, **options) -> None:
        summary = self.export(out, kind=kind, status=status)
        for problem in summary["invalid"]:
            self.stderr.write(self.style.ERROR(f"example {problem['id']} left out: {'; '.join(problem['errors'])}"))
        if summary["invalid"]:
            raise CommandError(
                f"{len(summary['invalid'])} example(s) do not fit TRL's {kind} shape; fix them in the curation UI."
            )
        self.stdout.write(self.style.SUCCESS(f"Wrote {summary['written']} {status} {kind} example(s) to {out}."))

    def export(self, out: Path, *, kind: str, status: str) -> dict:
        return export_examples(out, kind=kind, status=status)
