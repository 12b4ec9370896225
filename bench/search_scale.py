"""Search at scale on generated notes: BM25 base segment build time, search() latency, refresh after an edit.

    .venv/bin/python bench/search_scale.py --notes 100000

(Formerly `manage.py brain_eval --synthetic N`.) It creates a scratch database (`hyperguild_eval_<pid>`,
dropped at the end) with `--notes` synthetic wiki notes, the embedder off, and prints the build time and size
of the BM25 base segment, the p50/p95 of `search()` (brain_query's server side) over 300 generated queries,
and how long the index takes to refresh after one edit.
"""

from __future__ import annotations

import signal
import sys
import time
from pathlib import Path
from typing import Any

if __name__ == "__main__":  # `python bench/x.py` puts bench/ first on the path: the checkout belongs there
    sys.path[0] = str(Path(__file__).resolve().parents[1])

from bench.script import BenchCommand, run, setup_django  # noqa: E402

setup_django()

from django.conf import settings  # noqa: E402
from django.core.management.base import CommandError, CommandParser  # noqa: E402
from tqdm import tqdm  # noqa: E402

from bench.synthetic import SYNTHETIC_WINGS, SyntheticCorpus, store_synthetic_notes  # noqa: E402
from brain import bm25  # noqa: E402
from brain.actions import do_edit_note  # noqa: E402
from brain.evaluation import percentile  # noqa: E402
from brain.models import Note  # noqa: E402
from brain.scratch import ScratchDatabase  # noqa: E402
from brain.search import search  # noqa: E402

QUERIES = 300
LATENCY_LIMIT = 10  # hits per timed search(), as brain_query's default


def _raise_system_exit(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


class Command(BenchCommand):
    help = "Index build time and search() latency on N generated notes, in a scratch database."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--notes", type=int, required=True, help="synthetic notes to generate")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["notes"] < 1:
            raise CommandError("--notes takes a positive number of notes")
        settings.BRAIN_EMBEDDER = "off"  # the notes are not embedded for a latency run
        # A SIGTERM unwinds like Ctrl-C, so the scratch database is dropped either way.
        previous_handler = signal.signal(signal.SIGTERM, _raise_system_exit)
        try:
            with ScratchDatabase(self.stdout) as scratch:
                self.stdout.write(f"scratch database {scratch.name}")
                self.run_synthetic(options["notes"])
        finally:
            signal.signal(signal.SIGTERM, previous_handler)
        self.stdout.write(self.style.SUCCESS("search_scale done; scratch database dropped."))

    def run_synthetic(self, count: int) -> None:
        corpus = SyntheticCorpus(seed=7)
        started = time.perf_counter()
        bar = tqdm(total=count, desc="generating", unit="note", file=self.stderr, disable=None)
        store_synthetic_notes(corpus, count, progress=lambda done: bar.update(done - bar.n))
        bar.close()
        self.stdout.write(f"{count} notes generated and stored in {time.perf_counter() - started:.1f} s")

        bm25.reset()
        started = time.perf_counter()
        index = bm25.current_index()
        self.stdout.write(
            f"BM25 base segment build: {time.perf_counter() - started:.2f} s for {len(index)} notes, "
            f"{len(index.base.keys)} terms, {len(index.base.post_docs)} postings, "
            f"{index.base.nbytes / 2**20:.0f} MiB of arrays"
        )
        latencies = []
        for _ in range(QUERIES):
            query = corpus.query()
            wing = corpus.rng.choice([None, None, corpus.rng.choice(SYNTHETIC_WINGS)])
            started = time.perf_counter()
            search(query, limit=LATENCY_LIMIT, wing=wing)
            latencies.append((time.perf_counter() - started) * 1000)
        self.stdout.write(
            f"brain_query (search(), server side, limit {LATENCY_LIMIT}) over {count} notes: "
            f"p50 {percentile(latencies, 50):.1f} ms  p95 {percentile(latencies, 95):.1f} ms  "
            f"({QUERIES} queries)"
        )
        # After a write only the changed note is tokenised; the base segment is untouched.
        note = Note.objects.filter(source="eval").first()
        if note is None:
            raise CommandError("no generated note to edit")
        do_edit_note(note, body=note.body + " " + corpus.rng.choice(corpus.vocabulary))
        started = time.perf_counter()
        bm25.current_index()
        self.stdout.write(
            f"BM25 refresh after one edit: {(time.perf_counter() - started) * 1000:.1f} ms "
            f"(whole-index builds so far: {bm25.stats.full_builds})"
        )


if __name__ == "__main__":
    run(Command())
