"""CPU per `search()` in one process, and where it goes: BM25 ranking, the hits' SQL, the excerpts, the rest.

    .venv/bin/python bench/search_cpu.py --notes 100000 [--queries 300] [--rounds 2]

A scratch database (dropped at the end) with `--notes` notes of `SyntheticCorpus(seed=11)`, the corpus
`bench/load.py` stores, the embedder off, the BM25 index built in this process; then the corpus's queries through
`search(query, limit=10)` as `brain_query` asks, `--rounds` times over the same queries, each query with BM25
pruning on and off one after the other (the order flipped each round), in a thread as a web process serves a call.
Figures are `time.process_time()` per call (p50/p95/p99/mean), and the parts timed inside each call by wrapping the
functions `search()` calls (`Snapshot.rank_with_evidence`, `hit_rows`, `excerpt`).
"""

from __future__ import annotations

import signal
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

if __name__ == "__main__":  # `python bench/x.py` puts bench/ first on the path: the checkout belongs there
    sys.path[0] = str(Path(__file__).resolve().parents[1])

from bench.script import BenchCommand, run, setup_django  # noqa: E402

setup_django()

import numpy as np  # noqa: E402
from django.conf import settings  # noqa: E402
from django.core.management.base import CommandParser  # noqa: E402
from django.db import connection  # noqa: E402

from bench.synthetic import SyntheticCorpus, store_synthetic_notes  # noqa: E402
from brain import bm25, search  # noqa: E402
from brain.scratch import ScratchDatabase  # noqa: E402

PARTS = {
    "bm25 ranking": (bm25.Snapshot, "rank_with_evidence"),
    "hits' SQL": (search, "hit_rows"),
    "excerpts": (search, "excerpt"),
}


class Command(BenchCommand):
    help = "CPU per search() in one process on N synthetic notes, and its parts."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--notes", type=int, required=True)
        parser.add_argument("--queries", type=int, default=300)
        parser.add_argument("--rounds", type=int, default=2)
        parser.add_argument(
            "--keep-notes",
            action="store_true",
            help="copy the notes from the database bench/load.py --keep-notes keeps (the same corpus), "
            "filling it first if there is none",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        settings.BRAIN_EMBEDDER = "off"
        previous = signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(SystemExit(143)))
        count = options["notes"]
        corpus = SyntheticCorpus(seed=11)
        kept = f"notes_{count}_seed11" if options["keep_notes"] else None  # the label bench/load.py keeps
        try:
            with ScratchDatabase(self.stdout, kept=kept, fill=lambda: store_synthetic_notes(corpus, count)) as scratch:
                self.stdout.write(f"scratch database {scratch.name}")
                started = time.perf_counter()
                if kept is None:
                    store_synthetic_notes(corpus, count)
                elif not scratch.filled:
                    for _ in range(count):  # the draws storing makes: the queries that follow are the same
                        corpus.note()
                self.measure(corpus, count, options["queries"], options["rounds"], started)
        finally:
            signal.signal(signal.SIGTERM, previous)

    # name → what to set before each call of that arm
    ARMS: dict[str, Callable[[], None]] = {
        "pruned": lambda: setattr(settings, "BRAIN_BM25_PRUNING", True),
        "exhaustive": lambda: setattr(settings, "BRAIN_BM25_PRUNING", False),
    }

    def measure(self, corpus: SyntheticCorpus, count: int, queries: int, rounds: int, started: float) -> None:
        bm25.reset()
        index = bm25.current_index()
        self.stdout.write(f"{len(index)} notes stored and indexed in {time.perf_counter() - started:.0f} s")
        texts = [corpus.query() for _ in range(queries)]
        for text in texts[:20]:
            for arm in self.ARMS.values():
                arm()
                search.search(text, limit=10)
        spent: dict[str, float] = defaultdict(float)
        originals = [(owner, name, getattr(owner, name)) for owner, name in PARTS.values()]
        for label, (owner, name) in PARTS.items():
            setattr(owner, name, timed(getattr(owner, name), label, spent))
        totals: dict[str, list[float]] = defaultdict(list)
        parts: dict[tuple[str, str], list[float]] = defaultdict(list)
        pruning = settings.BRAIN_BM25_PRUNING

        hits: list[int] = []

        def calls() -> None:
            try:
                each_round()
            finally:
                connection.close()  # this thread's connection: the scratch database is dropped after

        def each_round() -> None:
            for round_number in range(rounds):
                names = list(self.ARMS)[:: 1 if round_number % 2 == 0 else -1]
                for text in texts:
                    for name in names:
                        self.ARMS[name]()
                        spent.clear()
                        before = time.process_time()
                        found = search.search(text, limit=10)
                        totals[name].append((time.process_time() - before) * 1000)
                        for label in PARTS:
                            parts[name, label].append(spent[label] * 1000)
                        hits.append(len(found.hits))

        try:
            worker = threading.Thread(target=calls)
            worker.start()
            worker.join()
        finally:
            settings.BRAIN_BM25_PRUNING = pruning
            for owner, name, original in originals:
                setattr(owner, name, original)
        self.stdout.write(f"hits per call: mean {np.mean(hits):.1f} (limit 10)")
        for name, values in totals.items():
            self.stdout.write(
                f"{name}: search(limit=10) CPU per call over {count} notes ({len(values)} calls): {figures(values)}"
            )
            for label in PARTS:
                self.stdout.write(f"  {label:13}: {figures(parts[name, label])}")
            slow = np.argsort(values)[-max(1, len(values) // 100) :]
            self.stdout.write(
                "  the slowest 1 %: "
                + ", ".join(f"{label} {np.mean(np.asarray(parts[name, label])[slow]):.2f}" for label in PARTS)
                + f" of {np.mean(np.asarray(values)[slow]):.2f} ms"
            )


def timed(function: Callable[..., Any], label: str, spent: dict[str, float]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        before = time.process_time()
        try:
            return function(*args, **kwargs)
        finally:
            spent[label] += time.process_time() - before

    return wrapper


def figures(values: list[float]) -> str:
    return (
        f"p50 {np.percentile(values, 50):.2f}  p95 {np.percentile(values, 95):.2f}  "
        f"p99 {np.percentile(values, 99):.2f}  mean {np.mean(values):.2f} ms"
    )


if __name__ == "__main__":
    run(Command())
