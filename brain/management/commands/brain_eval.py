"""manage.py brain_eval: retrieval quality on a team's own judged queries (or any BEIR-layout folder).

    brain_eval --dataset DIR [--rankers bm25,dense,hybrid] [--embedder local]
               [--negatives FILE] [--floors on|off|both] [--calibrate]

An operator's command: it checks search on your own golden queries and calibrates the relevance floors for
a new embedding model (docs/search.md). Index build and latency on generated notes are a benchmark,
`bench/search_scale.py`, outside the service.

With --negatives (queries that have no relevant document in the corpus) it
also prints the share of them answered with no hits. --floors both (the
default) runs every ranker with the relevance floors on and off.
--calibrate prints the vector floor the dataset's judged pairs suggest for
the embedder (see brain/floors.py).

The command creates a PostgreSQL database of its own next to the service's
(`hyperguild_eval_<pid>`, a copy of a migrated template kept per schema, brain/scratch.py), points this process
at it, imports the dataset there and drops it at the end: the user's notes are never read or
written. Document embeddings are cached under var/eval-cache by model and
text hash, so only the first run with a given embedder pays for them.
"""

from __future__ import annotations

import random
import signal
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connections
from tqdm import tqdm

from brain import bm25, floors, vectors
from brain.embedding_sync import sync_embeddings
from brain.evaluation import (
    BeirDataset,
    BeirDocument,
    CachingEmbedder,
    document_chunks,
    load_beir,
    load_negatives,
    ndcg_at,
    percentile,
    recall_at,
    sampled_corpus,
)
from brain.indexing import bump_brain_version
from brain.models import Note, NoteStatus
from brain.scratch import ScratchDatabase
from brain.search import rank_notes, search
from hyperguild.lib.embedders import BaseEmbedder, get_embedder

RANKERS = {"bm25": ("bm25",), "dense": ("vector",), "hybrid": ("bm25", "vector")}
NDCG_K = 10
RECALL_K = 100
LATENCY_LIMIT = 10  # hits per timed search(), as brain_query's default
# A negative query counts as answered "nothing" when search(limit=10) would return no hit,
# i.e. nothing passes the floors among rank_notes' candidates at that depth.
NEGATIVE_DEPTH = LATENCY_LIMIT * 3
RANDOM_PAIRS_PER_QUERY = 20
IMPORT_BATCH = 2000
EVAL_WING = "eval"


@dataclass(frozen=True)
class RankerFigures:
    """One ranker's row of the table."""

    ranker: str
    floors: str  # "on" or "off"
    ndcg: float
    recall: float
    empty_judged: float  # share of judged queries with no hits
    negatives: float | None  # share of negative queries with no hits (None: none given)
    p50: float | None  # ms, when timed
    p95: float | None
    queries: int


class Command(BaseCommand):
    help = (
        "Measure brain search on a BEIR-layout dataset (corpus.jsonl, queries.jsonl, qrels/test.tsv): "
        "nDCG@10, Recall@100 and latency per ranker, embedding throughput, and (--calibrate) the relevance "
        "floors the judged pairs suggest. Runs in a scratch database."
    )
    no_bars: bool | None = None  # tqdm's `disable`: None draws only on a terminal, True never (--no-progress)

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dataset", type=Path, required=True, help="a BEIR-layout folder")
        parser.add_argument("--no-progress", action="store_true", help="no progress bars")
        parser.add_argument("--split", default="test", help="qrels file to use (default: test)")
        parser.add_argument("--rankers", default="bm25", help="comma list of bm25, dense, hybrid (default: bm25)")
        parser.add_argument(
            "--embedder", choices=["local", "ollama", "openai"], help="embedder for dense/hybrid (default: settings)"
        )
        parser.add_argument(
            "--corpus-sample",
            type=int,
            help="only the judged documents plus random others up to this many (figures not comparable "
            "with full-corpus ones; for quick comparisons of rankers)",
        )
        parser.add_argument("--cache-dir", type=Path, default=Path(settings.BASE_DIR) / "var" / "eval-cache")
        parser.add_argument(
            "--negatives",
            type=Path,
            help='queries with no relevant document in the corpus (one a line, or JSONL with "text"): '
            "prints the share answered with no hits",
        )
        parser.add_argument(
            "--floors", choices=["on", "off", "both"], default="both", help="relevance floors (default: both)"
        )
        parser.add_argument(
            "--no-latency", action="store_true", help="skip the timed search() per query (faster under load)"
        )
        parser.add_argument(
            "--calibrate",
            action="store_true",
            help="print the vector floor the judged pairs suggest for the embedder (needs dense or hybrid)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        self.no_bars = True if options.get("no_progress") else None  # None: tqdm draws only on a terminal
        rankers = [r.strip() for r in options["rankers"].split(",") if r.strip()]
        unknown = set(rankers) - set(RANKERS)
        if unknown:
            raise CommandError(f"Unknown ranker(s) {', '.join(sorted(unknown))}: use bm25, dense, hybrid.")
        if not (options["dataset"] / "corpus.jsonl").exists():
            raise CommandError(f"{options['dataset']} has no corpus.jsonl (BEIR layout expected).")
        if options["embedder"]:
            settings.BRAIN_EMBEDDER = options["embedder"]
        needs_vectors = any(r != "bm25" for r in rankers)
        options["negative_queries"] = []
        if options["negatives"]:
            try:
                options["negative_queries"] = load_negatives(options["negatives"])
            except OSError as exc:
                raise CommandError(f"Cannot read --negatives {options['negatives']}: {exc.strerror}.") from None
            except ValueError as exc:
                raise CommandError(str(exc)) from None
        if options["calibrate"] and not needs_vectors:
            raise CommandError("--calibrate needs a vector ranker: add dense or hybrid to --rankers.")
        if needs_vectors and settings.BRAIN_EMBEDDER == "off":
            raise CommandError("dense and hybrid need an embedder: pass --embedder local (or ollama/openai).")

        # A SIGTERM unwinds like Ctrl-C, so the scratch database is dropped either way.
        previous_handler = signal.signal(signal.SIGTERM, _raise_system_exit)
        try:
            with ScratchDatabase(self.stdout) as scratch:
                self.stdout.write(f"scratch database {scratch.name}")
                self.run_dataset(options, rankers, needs_vectors)
        finally:
            signal.signal(signal.SIGTERM, previous_handler)
        self.stdout.write(self.style.SUCCESS("brain_eval done; scratch database dropped."))

    # -- BEIR dataset ------------------------------------------------------------------

    def run_dataset(self, options: dict[str, Any], rankers: list[str], needs_vectors: bool) -> None:
        dataset = load_beir(options["dataset"], options["split"])
        corpus = sampled_corpus(dataset, options["corpus_sample"])
        if len(corpus) < len(dataset.corpus):
            self.stdout.write(
                self.style.WARNING(
                    f"corpus sample: {len(corpus)} of {len(dataset.corpus)} documents (all judged ones kept); "
                    "figures are higher than on the full corpus"
                )
            )
        self.stdout.write(f"{len(corpus)} documents, {len(dataset.queries)} queries with judgements")
        slug_to_doc = self.import_documents(corpus)
        id_to_doc = {note_id: slug_to_doc[slug] for note_id, slug in Note.objects.values_list("id", "slug")}

        started = time.perf_counter()
        index = bm25.current_index()
        self.stdout.write(f"BM25 index: {len(index)} notes built in {time.perf_counter() - started:.2f} s")

        embedder = None
        if needs_vectors:
            inner = self.make_embedder()
            assert inner is not None  # handle() refused vector rankers with BRAIN_EMBEDDER=off
            embedder = CachingEmbedder(inner, options["cache_dir"])
            self.embed_corpus(embedder)
            with connections["default"].cursor() as cursor:
                # Fresh bulk-loaded tables have no statistics: without them the planner expects
                # one row and sorts a sequential scan instead of walking the HNSW index.
                cursor.execute("ANALYZE brain_note, brain_notechunk, brain_embedding")
            self.stdout.write(f"vector query plan: {self.vector_plan(embedder, next(iter(dataset.queries.values())))}")

        if options["calibrate"]:
            assert embedder is not None  # handle() refused --calibrate without a vector ranker
            self.calibrate(dataset, corpus, embedder, options["negative_queries"])

        settings_list = {"on": [True], "off": [False], "both": [True, False]}[options["floors"]]
        rows = []
        for ranker in rankers:
            for floors_on in settings_list:
                rows.append(
                    self.evaluate_ranker(
                        ranker,
                        dataset,
                        id_to_doc,
                        embedder,
                        floors_on,
                        options["negative_queries"],
                        timed=floors_on == settings_list[0] and not options["no_latency"],
                    )
                )
        self.print_table(rows, embedder, bool(options["negative_queries"]))

    def make_embedder(self) -> BaseEmbedder | None:
        """The embedder the settings describe; bench/embedders.py measures an embedder the product does not offer
        (one whose package is a bench requirement only) by overriding this."""
        return get_embedder()

    def import_documents(self, corpus: list[BeirDocument]) -> Mapping[str, str]:
        """Scratch notes straight through the ORM: no user data, no mirror, no per-note tasks; slug -> document id."""
        slug_to_doc: dict[str, str] = {}
        batch = []
        for doc in tqdm(corpus, desc="importing", unit="doc", file=self.stderr, disable=self.no_bars):
            slug = f"doc-{len(slug_to_doc)}"
            slug_to_doc[slug] = doc["_id"]
            title = (doc.get("title") or "").strip()[:300]
            batch.append(
                Note(
                    slug=slug,
                    title=title,
                    body=doc.get("text") or "",
                    status=NoteStatus.WIKI,
                    wing=EVAL_WING,
                    path=f"wiki/{EVAL_WING}/{slug}.md",
                    source="eval",
                )
            )
            if len(batch) >= IMPORT_BATCH:
                Note.objects.bulk_create(batch)
                batch = []
        Note.objects.bulk_create(batch)
        bump_brain_version()
        return slug_to_doc

    def embed_corpus(self, embedder: CachingEmbedder) -> None:
        cached_before = len(embedder.cache)
        bar = tqdm(total=0, desc=f"embedding ({embedder.key})", unit="chunk", file=self.stderr, disable=self.no_bars)

        def progress(done: int, total: int) -> None:
            bar.total, bar.n = total, done
            bar.refresh()

        started = time.perf_counter()
        result = sync_embeddings(embedder, progress=progress)
        bar.close()
        elapsed = time.perf_counter() - started
        if result.errors:
            raise CommandError(f"embedding failed: {result.errors[0]}")
        if embedder.embedded:
            rate = embedder.embedded / embedder.embed_seconds
            self.stdout.write(
                f"embedding throughput: {rate:.2f} chunks/s ({embedder.embedded} chunks embedded in "
                f"{embedder.embed_seconds:.1f} s; {result.added - embedder.embedded} from the cache)"
            )
        else:
            self.stdout.write(
                f"embedding throughput: all {result.added} chunks from the cache ({cached_before} cached); "
                f"sync and pgvector writes took {elapsed:.1f} s"
            )

    def evaluate_ranker(
        self,
        ranker: str,
        dataset: BeirDataset,
        id_to_doc: dict[int, str],
        embedder: CachingEmbedder | None,
        floors_on: bool,
        negatives: list[str],
        *,
        timed: bool,
    ) -> RankerFigures:
        floor = None if floors_on else floors.NO_FLOORS
        label = f"{ranker} (floors {'on' if floors_on else 'off'})"
        ndcgs, recalls, latencies, empty_judged = [], [], [], 0
        for query_id, text in tqdm(
            dataset.queries.items(), desc=label, unit="query", file=self.stderr, disable=self.no_bars
        ):
            ranking = rank_notes(
                text, depth=RECALL_K, rankers=RANKERS[ranker], embedder=embedder, status=None, floor=floor
            )
            if ranking.degraded:
                raise CommandError(f"{ranker}: {ranking.reason}")
            docs = [id_to_doc[note_id] for note_id, _, _ in ranking.fused]
            empty_judged += not docs
            ndcgs.append(ndcg_at(docs, dataset.qrels[query_id], NDCG_K))
            recalls.append(recall_at(docs, dataset.qrels[query_id], RECALL_K))
            if timed:
                latencies.append(self.timed_search(text, ranker))
        answered_nothing = 0
        for text in negatives:
            ranking = rank_notes(
                text, depth=NEGATIVE_DEPTH, rankers=RANKERS[ranker], embedder=embedder, status=None, floor=floor
            )
            answered_nothing += not ranking.fused
        n = len(ndcgs)
        row = RankerFigures(
            ranker=ranker,
            floors="on" if floors_on else "off",
            ndcg=sum(ndcgs) / n,
            recall=sum(recalls) / n,
            empty_judged=empty_judged / n,
            negatives=answered_nothing / len(negatives) if negatives else None,
            p50=percentile(latencies, 50) if latencies else None,
            p95=percentile(latencies, 95) if latencies else None,
            queries=n,
        )
        negative_text = f"  negatives with no hits {row.negatives:.1%}" if row.negatives is not None else ""
        self.stdout.write(
            f"{label:>22}: nDCG@{NDCG_K} {row.ndcg:.4f}  Recall@{RECALL_K} {row.recall:.4f}  "
            f"judged with no hits {row.empty_judged:.1%}{negative_text}  ({n} queries)"
        )
        return row

    def print_table(self, rows: list[RankerFigures], embedder: CachingEmbedder | None, with_negatives: bool) -> None:
        key = embedder.key if embedder is not None else None
        current = floors.current(key)
        self.stdout.write("")
        self.stdout.write(f"floors on: {current.describe(key)}")
        header = "| ranker | floors | nDCG@10 | Recall@100 | judged queries with no hits |"
        header += " negatives with no hits |" if with_negatives else ""
        header += " p50 | p95 |"
        self.stdout.write(header)
        self.stdout.write("|" + " --- |" * (header.count("|") - 1))
        for row in rows:
            line = f"| {row.ranker} | {row.floors} | {row.ndcg:.3f} | {row.recall:.3f} | {row.empty_judged:.1%} |"
            if with_negatives:
                line += f" {row.negatives:.1%} |"
            line += f" {row.p50:.1f} ms | {row.p95:.1f} ms |" if row.p50 is not None else " – | – |"
            self.stdout.write(line)

    def calibrate(
        self, dataset: BeirDataset, corpus: list[BeirDocument], embedder: CachingEmbedder, negatives: list[str]
    ) -> tuple[float, float, float]:
        """Cosine similarity of judged relevant pairs against random pairs; returns the floors they suggest
        (vector, agree, support), which the rankers that run next do not use unless set (brain.floors.current)."""
        docs = {doc["_id"]: doc for doc in corpus}
        chunk_vectors: dict[str, np.ndarray] = {}
        for doc_id, doc in docs.items():
            found = [embedder.cached_document(text) for text in document_chunks(doc)]
            cached = [v for v in found if v is not None]
            if found and len(cached) == len(found):
                chunk_vectors[doc_id] = np.vstack(cached)
        rng = random.Random(11)
        ids = sorted(chunk_vectors)
        relevant, unrelated, best_judged = [], [], []
        for query_id, text in tqdm(dataset.queries.items(), desc="calibrating", file=self.stderr, disable=self.no_bars):
            query = np.asarray(embedder.embed_query(text), dtype=np.float32)
            judged = dataset.qrels[query_id]
            for doc_id, grade in judged.items():
                if grade > 0 and doc_id in chunk_vectors:
                    relevant.append(float((chunk_vectors[doc_id] @ query).max()))
            for doc_id in rng.sample(ids, min(RANDOM_PAIRS_PER_QUERY, len(ids))):
                if doc_id not in judged:
                    unrelated.append(float((chunk_vectors[doc_id] @ query).max()))
            top = vectors.rank_scored(text, limit=1, embedder=embedder)
            if top:
                best_judged.append(top[0][2])
        best_negative = []
        for text in negatives:
            top = vectors.rank_scored(text, limit=1, embedder=embedder)
            best_negative.append(top[0][2] if top else -1.0)
        suggested, agree, support = floors.calibrate(relevant, unrelated)

        def spread(values: list[float]) -> str:
            if not values:
                return "none"
            q = [percentile(values, p) for p in (1, 5, 50, 95, 99)]
            return f"n {len(values)}, p1 {q[0]:.3f}, p5 {q[1]:.3f}, median {q[2]:.3f}, p95 {q[3]:.3f}, p99 {q[4]:.3f}"

        def reaching(values: list[float], floor: float) -> str:
            return f"{sum(1 for v in values if v >= floor) / len(values):.1%}"

        self.stdout.write(f"calibration ({embedder.key}), cosine similarity of query and best chunk:")
        self.stdout.write(f"  judged relevant pairs:      {spread(relevant)}")
        self.stdout.write(f"  random pairs:               {spread(unrelated)}")
        self.stdout.write(f"  judged queries, best hit:   {spread(best_judged)}")
        if negatives:
            below = sum(1 for v in best_negative if v < suggested) / len(best_negative)
            self.stdout.write(
                f"  negative queries, best hit: {spread(best_negative)}; {below:.0%} below the vector floor"
            )
        self.stdout.write(
            self.style.SUCCESS(
                f"  suggested for {embedder.key}:\n"
                f"    vector floor  {suggested:.2f}: reached by {reaching(unrelated, suggested)} of random pairs "
                f"(aim {floors.RANDOM_PAIRS_ABOVE:.1%}), {reaching(relevant, suggested)} of judged relevant ones\n"
                f"    agree floor   {agree:.2f}: reached by {reaching(unrelated, agree)} of random pairs "
                f"(aim {floors.RANDOM_PAIRS_ABOVE_AGREE:.1%}), {reaching(relevant, agree)} of judged relevant ones\n"
                f"    support floor {support:.2f}: reached by {reaching(relevant, support)} of judged relevant pairs "
                f"(aim {1 - floors.RELEVANT_PAIRS_BELOW:.1%})\n"
                f"  Set BRAIN_VECTOR_FLOOR={suggested:.2f} BRAIN_VECTOR_AGREE_FLOOR={agree:.2f} "
                f"BRAIN_VECTOR_SUPPORT_FLOOR={support:.2f}, or add the model to brain.floors.VECTOR_FLOORS."
            )
        )
        return suggested, agree, support

    @staticmethod
    def vector_plan(embedder: CachingEmbedder, query: str) -> str:
        """The planner's own choice (nothing forced) for the vector query: index scan or not."""
        vector = embedder.embed_query(query)
        sql = vectors.query_sql(embedder.key, len(vector), wing=False, hall=False, status=False)
        with connections["default"].cursor() as cursor:
            cursor.execute("EXPLAIN " + sql, {"vector": vectors.vector_literal(vector), "limit": 20})
            plan = [row[0] for row in cursor.fetchall()]
        used = [line.strip() for line in plan if "Index Scan using brain_emb_hnsw" in line]
        return used[0].split(" on ")[0] if used else "no HNSW index scan (" + plan[0].strip() + ")"

    @staticmethod
    def timed_search(text: str, ranker: str) -> float:
        """Milliseconds of one search() as brain_query runs it (the vector side only for dense/hybrid)."""
        previous = settings.BRAIN_EMBEDDER
        if ranker == "bm25":
            settings.BRAIN_EMBEDDER = "off"
        try:
            started = time.perf_counter()
            search(text, limit=LATENCY_LIMIT, status=None)
            return (time.perf_counter() - started) * 1000
        finally:
            settings.BRAIN_EMBEDDER = previous


def _raise_system_exit(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)
