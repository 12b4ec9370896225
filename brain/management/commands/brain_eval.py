"""manage.py brain_eval: retrieval quality and latency on a scratch brain.

    brain_eval --dataset ../shared/datasets/scifact [--rankers bm25,dense,hybrid] [--embedder local]
    brain_eval --synthetic 100000

The command creates a PostgreSQL database of its own next to the service's
(`hyperguild_eval_<pid>`), migrates it, points this process at it, imports the
dataset there and drops it at the end: the user's notes are never read or
written. Document embeddings are cached under var/eval-cache by model and
text hash, so only the first run with a given embedder pays for them.
"""

from __future__ import annotations

import os
import shutil
import signal
import time
from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connections
from tqdm import tqdm

from brain import bm25, vectors
from brain.actions import do_edit_note
from brain.embedding_sync import sync_embeddings
from brain.evaluation import (
    SYNTHETIC_WINGS,
    CachingEmbedder,
    SyntheticCorpus,
    load_beir,
    ndcg_at,
    percentile,
    recall_at,
    sampled_corpus,
    store_synthetic_notes,
)
from brain.models import BrainVersion, Note, NoteStatus
from brain.search import rank_notes, search
from hyperguild.lib.embedders import get_embedder

RANKERS = {"bm25": ("bm25",), "dense": ("vector",), "hybrid": ("bm25", "vector")}
NDCG_K = 10
RECALL_K = 100
LATENCY_LIMIT = 10  # hits per timed search(), as brain_query's default
SYNTHETIC_QUERIES = 300
IMPORT_BATCH = 2000
EVAL_WING = "eval"


class Command(BaseCommand):
    help = (
        "Measure brain search on a BEIR-layout dataset (corpus.jsonl, queries.jsonl, qrels/test.tsv): "
        "nDCG@10, Recall@100 and latency per ranker, embedding throughput; or, with --synthetic N, "
        "index build time and query latency on N generated notes. Runs in a scratch database."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dataset", type=Path, help="a BEIR-layout folder")
        parser.add_argument("--split", default="test", help="qrels file to use (default: test)")
        parser.add_argument("--rankers", default="bm25", help="comma list of bm25, dense, hybrid (default: bm25)")
        parser.add_argument(
            "--embedder", choices=["local", "ollama", "openai"], help="embedder for dense/hybrid (default: settings)"
        )
        parser.add_argument("--synthetic", type=int, help="generate this many notes instead of a dataset")
        parser.add_argument(
            "--corpus-sample",
            type=int,
            help="only the judged documents plus random others up to this many (figures not comparable "
            "with full-corpus ones; for quick comparisons of rankers)",
        )
        parser.add_argument("--cache-dir", type=Path, default=Path(settings.BASE_DIR) / "var" / "eval-cache")

    def handle(self, *args, **options) -> None:
        if bool(options["dataset"]) == bool(options["synthetic"]):
            raise CommandError("Give either --dataset DIR or --synthetic N.")
        rankers = [r.strip() for r in options["rankers"].split(",") if r.strip()]
        unknown = set(rankers) - set(RANKERS)
        if unknown:
            raise CommandError(f"Unknown ranker(s) {', '.join(sorted(unknown))}: use bm25, dense, hybrid.")
        if options["dataset"] and not (options["dataset"] / "corpus.jsonl").exists():
            raise CommandError(f"{options['dataset']} has no corpus.jsonl (BEIR layout expected).")
        if options["embedder"]:
            settings.BRAIN_EMBEDDER = options["embedder"]
        elif options["synthetic"]:
            settings.BRAIN_EMBEDDER = "off"  # 100k notes are not embedded for a latency run
        needs_vectors = any(r != "bm25" for r in rankers)
        if needs_vectors and settings.BRAIN_EMBEDDER == "off":
            raise CommandError("dense and hybrid need an embedder: pass --embedder local (or ollama/openai).")

        # A SIGTERM unwinds like Ctrl-C, so the scratch database is dropped either way.
        previous_handler = signal.signal(signal.SIGTERM, _raise_system_exit)
        try:
            with ScratchDatabase(self.stdout) as scratch:
                self.stdout.write(f"scratch database {scratch.name}")
                if options["synthetic"]:
                    self.run_synthetic(options["synthetic"])
                else:
                    self.run_dataset(options, rankers, needs_vectors)
        finally:
            signal.signal(signal.SIGTERM, previous_handler)
        self.stdout.write(self.style.SUCCESS("brain_eval done; scratch database dropped."))

    # -- BEIR dataset ------------------------------------------------------------------

    def run_dataset(self, options: dict, rankers: list[str], needs_vectors: bool) -> None:
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
            embedder = CachingEmbedder(get_embedder(), options["cache_dir"])
            self.embed_corpus(embedder)
            with connections["default"].cursor() as cursor:
                # Fresh bulk-loaded tables have no statistics: without them the planner expects
                # one row and sorts a sequential scan instead of walking the HNSW index.
                cursor.execute("ANALYZE brain_note, brain_notechunk, brain_embedding")
            self.stdout.write(f"vector query plan: {self.vector_plan(embedder, next(iter(dataset.queries.values())))}")

        for ranker in rankers:
            self.evaluate_ranker(ranker, dataset, id_to_doc, embedder)

    def import_documents(self, corpus: list[dict]) -> dict[str, str]:
        """Scratch notes straight through the ORM: no user data, no mirror, no per-note tasks."""
        slug_to_doc = {}
        batch = []
        for doc in tqdm(corpus, desc="importing", unit="doc", file=self.stderr, disable=None):
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
        BrainVersion.bump()
        return slug_to_doc

    def embed_corpus(self, embedder: CachingEmbedder) -> None:
        cached_before = len(embedder.cache)
        bar = tqdm(total=0, desc=f"embedding ({embedder.key})", unit="chunk", file=self.stderr, disable=None)

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

    def evaluate_ranker(self, ranker: str, dataset, id_to_doc: dict[int, str], embedder) -> None:
        ndcgs, recalls, latencies = [], [], []
        for query_id, text in tqdm(dataset.queries.items(), desc=ranker, unit="query", file=self.stderr, disable=None):
            ranking = rank_notes(text, depth=RECALL_K, rankers=RANKERS[ranker], embedder=embedder, status=None)
            if ranking.degraded:
                raise CommandError(f"{ranker}: {ranking.reason}")
            docs = [id_to_doc[note_id] for note_id, _, _ in ranking.fused]
            ndcgs.append(ndcg_at(docs, dataset.qrels[query_id], NDCG_K))
            recalls.append(recall_at(docs, dataset.qrels[query_id], RECALL_K))
            latencies.append(self.timed_search(text, ranker))
        n = len(ndcgs)
        self.stdout.write(
            f"{ranker:>6}: nDCG@{NDCG_K} {sum(ndcgs) / n:.4f}  Recall@{RECALL_K} {sum(recalls) / n:.4f}  "
            f"latency p50 {percentile(latencies, 50):.1f} ms  p95 {percentile(latencies, 95):.1f} ms  ({n} queries)"
        )

    @staticmethod
    def vector_plan(embedder, query: str) -> str:
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

    # -- synthetic -----------------------------------------------------------------------

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
        for _ in range(SYNTHETIC_QUERIES):
            query = corpus.query()
            wing = corpus.rng.choice([None, None, corpus.rng.choice(SYNTHETIC_WINGS)])
            started = time.perf_counter()
            search(query, limit=LATENCY_LIMIT, wing=wing)
            latencies.append((time.perf_counter() - started) * 1000)
        self.stdout.write(
            f"brain_query (search(), server side, limit {LATENCY_LIMIT}) over {count} notes: "
            f"p50 {percentile(latencies, 50):.1f} ms  p95 {percentile(latencies, 95):.1f} ms  "
            f"({SYNTHETIC_QUERIES} queries)"
        )
        # After a write only the changed note is tokenised; the base segment is untouched.
        note = Note.objects.filter(source="eval").first()
        do_edit_note(note, body=note.body + " " + corpus.rng.choice(corpus.vocabulary))
        started = time.perf_counter()
        bm25.current_index()
        self.stdout.write(f"BM25 refresh after one edit: {(time.perf_counter() - started) * 1000:.1f} ms "
                          f"(whole-index builds so far: {bm25.stats.full_builds})")  # fmt: skip


def _raise_system_exit(signum, frame) -> None:
    raise SystemExit(128 + signum)


class ScratchDatabase:
    """Create `hyperguild_eval_<pid>` on the service's PostgreSQL, point the default alias at it, drop it after."""

    def __init__(self, stdout):
        self.stdout = stdout
        self.connection = connections["default"]
        self.original = self.connection.settings_dict["NAME"]
        self.name = f"hyperguild_eval_{os.getpid()}"

    def __enter__(self) -> ScratchDatabase:
        with self.connection.cursor() as cursor:
            cursor.execute(f'CREATE DATABASE "{self.name}"')
        self._switch(self.name)
        call_command("migrate", verbosity=0, interactive=False)
        bm25.reset()
        vectors.forget_indexes()
        return self

    def __exit__(self, *exc) -> None:
        try:
            corpus_id = BrainVersion.current_with_corpus()[1]
        except Exception:  # noqa: BLE001 — leaving anyway; a stray segment folder is harmless
            corpus_id = ""
        self._switch(self.original)
        bm25.reset()
        directory = bm25.shared_dir(corpus_id)
        if directory is not None:
            shutil.rmtree(directory, ignore_errors=True)  # the scratch corpus's shared base, if it had one
        with self.connection.cursor() as cursor:
            cursor.execute(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')

    def _switch(self, name: str) -> None:
        self.connection.close()
        self.connection.settings_dict["NAME"] = name
        settings.DATABASES["default"]["NAME"] = name
