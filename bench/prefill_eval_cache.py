"""Fill brain_eval's embedding cache (var/eval-cache) for a BEIR dataset, judged documents first.

    .venv/bin/python bench/prefill_eval_cache.py ../shared/datasets/scifact [--limit N] [--shard i/n]

Runs without a database. `brain_eval --corpus-sample N` then reads the first N
documents of the same order from the cache instead of embedding them, so a
fill that is interrupted still serves the largest sample it reached.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from hyperguild.boot import setup_django  # noqa: E402

setup_django()  # the secret key and the embedded database, then Django (hyperguild.boot)

from django.conf import settings  # noqa: E402

from brain.evaluation import CachingEmbedder, document_chunks, load_beir, sample_order  # noqa: E402
from hyperguild.lib.embedders import LocalEmbedder  # noqa: E402

STEP_DOCS = 8


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument(
        "--shard", default="0/1", help="i/n: embed only every n-th step from the i-th (run n processes in parallel)"
    )
    parser.add_argument("--cache-dir", type=Path, default=Path(settings.BASE_DIR) / "var" / "eval-cache")
    args = parser.parse_args()
    dataset = load_beir(args.dataset)
    docs = sample_order(dataset)[: args.limit]
    embedder = CachingEmbedder(LocalEmbedder(), args.cache_dir, part=f"-prefill{os.getpid()}")
    started = time.perf_counter()
    shard, shards = (int(x) for x in args.shard.split("/"))
    for step, start in enumerate(range(0, len(docs), STEP_DOCS)):
        if step % shards != shard:
            continue
        texts = [text for doc in docs[start : start + STEP_DOCS] for text in document_chunks(doc)]
        embedder.embed_documents(texts)
        elapsed = time.perf_counter() - started
        rate = embedder.embedded / embedder.embed_seconds if embedder.embed_seconds else 0.0
        print(
            f"{time.strftime('%H:%M:%S')} docs {min(start + STEP_DOCS, len(docs))}/{len(docs)} "
            f"embedded {embedder.embedded} chunks at {rate:.2f} chunks/s ({elapsed:.0f} s)",
            flush=True,
        )


if __name__ == "__main__":
    main()
