"""What reading a brain's passages ahead saves brain_answer's first questions, and what it costs.

    .venv/bin/python bench/read_ahead.py [--docs tests/fixtures/click-docs-excerpt/docs] [--project click]

A scratch database (dropped at the end) with a folder of docs imported as any team's would be (`brain_import`, the
embedder off, no answer model: the answer is extractive); the questions of `bench/projects/<project>/project.toml`.

1. **Not read ahead**: no stored passage vector and an empty process cache, as in a web process right after an
   import; each question is asked once, in order (a later one may find passages an earlier one read).
2. **Read ahead**: the stored vectors dropped, then `brain.tasks.read_note_passages` over every note, as the
   background work of the import runs it (timed: notes, passages, seconds); the process cache emptied again (a web
   process that never read them) and the same questions asked.
3. **A start's walk**: `brain.tasks.read_brain_passages` over the same notes, all read now (what each start of
   `serve` costs a brain whose passages are stored), timed.

Figures: wall time per `answer()` (p50/p95/max/mean), the read-ahead's time and passages per second, and the size
of the PassageVector table after it.
"""

from __future__ import annotations

import io
import statistics
import sys
import time
import tomllib
from pathlib import Path
from typing import Any

if __name__ == "__main__":  # `python bench/x.py` puts bench/ first on the path: the checkout belongs there
    sys.path[0] = str(Path(__file__).resolve().parents[1])

from bench.script import ROOT, BenchCommand, run, setup_django  # noqa: E402

setup_django()

from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.core.management.base import CommandError, CommandParser  # noqa: E402
from django.db import connection  # noqa: E402


def figures(seconds: list[float]) -> str:
    ordered = sorted(seconds)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return (
        f"p50 {statistics.median(ordered) * 1000:.0f} ms, p95 {p95 * 1000:.0f} ms, max {ordered[-1] * 1000:.0f} ms, "
        f"mean {statistics.fmean(ordered) * 1000:.0f} ms over {len(ordered)} questions"
    )


class Command(BenchCommand):
    help = __doc__.splitlines()[0]

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--docs", default=str(ROOT / "tests" / "fixtures" / "click-docs-excerpt" / "docs"))
        parser.add_argument("--project", default="click", help="a folder of bench/projects/: its questions")

    def handle(self, *args: Any, **options: Any) -> None:
        from brain import bm25, passage_reader
        from brain.answers import answer
        from brain.models import Note, PassageVector
        from brain.scratch import ScratchDatabase
        from brain.tasks import read_brain_passages, read_note_passages

        docs = Path(options["docs"])
        if not docs.is_dir():
            raise CommandError(f"--docs {docs} is not a folder")
        toml = ROOT / "bench" / "projects" / options["project"] / "project.toml"
        if not toml.is_file():
            raise CommandError(f"no {toml}")
        questions = [item["q"] for item in tomllib.loads(toml.read_text(encoding="utf-8"))["question"]]
        settings.BRAIN_EMBEDDER = "off"
        settings.BRAIN_ANSWER_MODEL = ""
        settings.BRAIN_RERANKER_URL = ""
        if passage_reader.encoder() is None:
            raise CommandError("the passage reader is off or its weights are not installed: nothing to read ahead")
        with ScratchDatabase(io.StringIO()):
            call_command("brain_import", str(docs), "--no-progress", stdout=io.StringIO(), stderr=io.StringIO())
            bm25.reset()
            ids = list(Note.objects.order_by("pk").values_list("pk", flat=True))
            self.stdout.write(
                f"{len(ids)} notes imported from {docs}; {len(questions)} questions of {toml.parent.name}"
            )

            def ask_all() -> list[float]:
                passage_reader.forget()
                seconds = []
                for question in questions:
                    started = time.perf_counter()
                    answer(question)
                    seconds.append(time.perf_counter() - started)
                return seconds

            answer(questions[0])  # the encoder and BM25 loaded before anything is timed
            PassageVector.objects.all().delete()
            cold = ask_all()
            self.stdout.write(f"not read ahead: {figures(cold)}")

            PassageVector.objects.all().delete()
            passage_reader.forget()
            started = time.perf_counter()
            done = read_note_passages(*ids, max_seconds=None)
            spent = time.perf_counter() - started
            assert "read" in done, done
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_total_relation_size('brain_passagevector')")
                size = cursor.fetchone()[0]
            self.stdout.write(
                f"read ahead: {done['notes']} notes, {done['read']} passages in {spent:.1f} s "
                f"({done['read'] / spent:.0f} passages/s); PassageVector {size / 1e6:.1f} MB "
                f"({size / max(1, done['read']) / 1e3:.1f} kB a passage)"
            )
            warm = ask_all()
            self.stdout.write(f"read ahead:     {figures(warm)}")

            started = time.perf_counter()
            walked = read_brain_passages(0, max_seconds=None)
            spent = time.perf_counter() - started
            assert "read" in walked and walked["read"] == 0, walked
            self.stdout.write(
                f"a start's walk over them, all read: {walked['notes']} notes, {walked['passages']} passages in "
                f"{spent * 1000:.0f} ms ({walked['notes'] / spent:.0f} notes/s)"
            )


if __name__ == "__main__":
    run(Command())
