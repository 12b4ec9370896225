"""manage.py trainer_export OUT: a dataset folder (train/eval splits + dataset card), or one TRL JSONL file.

trainer_export out/dataset [--kind sft|dpo] [--eval-share 0.1] [--license apache-2.0]
trainer_export out/sft.jsonl --kind sft
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from sessions.models import TrainingExample
from sessions.trl_export import ExamplesExport, InvalidExample, export_dataset, export_examples


class Command(BaseCommand):
    help = (
        "Write approved training examples in the shapes TRL reads: SFT {messages}, DPO {prompt, chosen, rejected}. "
        "OUT ending in .jsonl: one file of --kind. Otherwise OUT is a dataset folder: <kind>/train.jsonl and "
        "<kind>/eval.jsonl (no near-duplicate prompt in both) and README.md, a dataset card that "
        "datasets.load_dataset reads. Every record is validated; examples whose replay failed (trainer_verify) "
        "are left out unless --include-invalid."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("out", type=Path, help="A .jsonl file, or a dataset folder.")
        parser.add_argument("--kind", choices=TrainingExample.Kind.values, help="Required for a .jsonl file.")
        parser.add_argument("--status", default=TrainingExample.Status.APPROVED, choices=TrainingExample.Status.values)
        parser.add_argument("--include-invalid", action="store_true", help="Keep examples whose replay failed.")
        parser.add_argument("--eval-share", type=float, default=0.1, help="Share of prompt groups in eval (dataset).")
        parser.add_argument("--license", default=None, help="Licence for the dataset card (TRAINER_DATASET_LICENSE).")

    def handle(
        self,
        *args: Any,
        out: Path,
        kind: str | None,
        status: str,
        include_invalid: bool,
        eval_share: float,
        license: str | None,
        **options: Any,
    ) -> None:
        if out.suffix == ".jsonl":
            if not kind:
                raise CommandError("--kind sft|dpo is required when OUT is a .jsonl file.")
            summary = self.export(out, kind=kind, status=status, include_invalid=include_invalid)
            self.report_invalid(summary["invalid"], kind)
            self.stdout.write(
                self.style.SUCCESS(
                    f"Wrote {summary['written']} {status} {kind} example(s) to {out}"
                    f" ({summary['left_out_not_replaying']} left out: their change does not replay)."
                )
            )
            return
        try:
            dataset = export_dataset(
                out,
                kinds=(kind,) if kind else ("sft", "dpo"),
                status=status,
                include_invalid=include_invalid,
                eval_share=eval_share,
                license=license,
            )
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        self.report_invalid(dataset["invalid"], kind or "sft/dpo")
        for name, counts in dataset["kinds"].items():
            self.stdout.write(
                self.style.SUCCESS(
                    f"{name}: {counts['train']} train, {counts['eval']} eval ({counts['left_out_not_replaying']} left out: "
                    f"their change does not replay) in {out / name}"
                )
            )
        self.stdout.write(f"Dataset card: {out / 'README.md'}")

    def report_invalid(self, invalid: list[InvalidExample], kind: str) -> None:
        for problem in invalid:
            self.stderr.write(self.style.ERROR(f"example {problem['id']} left out: {'; '.join(problem['errors'])}"))
        if invalid:
            raise CommandError(f"{len(invalid)} example(s) do not fit TRL's {kind} shape; fix them in the curation UI.")

    def export(self, out: Path, *, kind: str, status: str, include_invalid: bool = False) -> ExamplesExport:
        return export_examples(out, kind=kind, status=status, include_invalid=include_invalid)
