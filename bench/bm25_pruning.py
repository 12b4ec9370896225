"""CPU per search-like BM25 call, pruned against exhaustive, on a base segment saved on disk (no server).

    .venv/bin/python bench/bm25_pruning.py var/bm25/<corpus id> [QUERIES]

The base folder is one `bench/load.py` (or a service) wrote under BRAIN_BM25_DIR from `SyntheticCorpus(seed=11)`
notes, whose queries this draws. Each call is what `search()` asks of BM25 for a wiki query: the top 30 wiki notes
with the relevance floor's shares, and the raw-note count's top 50; exhaustive scores every posting once and reuses
that pass for both, as `search()` does with BRAIN_BM25_PRUNING off. The two run one query after the other, the
order flipped each round, in a thread as a web process serves a call (in the main thread glibc often gives
exhaustive scoring's per-document arrays fresh mapped pages on every call, ~800 page faults a call at 100,000 notes,
which doubles its cost; in a thread's heap they are reused); figures are `process_time`, with the minor page faults
per call.
"""

from __future__ import annotations

import resource
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from hyperguild.boot import setup_django  # noqa: E402

setup_django()  # the secret key and the embedded database, then Django (hyperguild.boot)

import numpy as np  # noqa: E402

from bench.synthetic import SyntheticCorpus  # noqa: E402
from brain import bm25  # noqa: E402


def main() -> None:
    path = sorted(Path(sys.argv[1]).glob("base-*"))[-1]
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 300
    started = time.perf_counter()
    seg = bm25.load_segment(path)
    empty = bm25.segment_from_docs([], seg.version)
    snap = bm25.Snapshot(version=seg.version, corpus_id="", base=seg, dead=np.zeros(0, np.int64), delta=empty)
    corpus = SyntheticCorpus(seed=11)
    queries = [bm25.tokenize(corpus.query()) for _ in range(count)]
    snap.rank_with_shares(queries[0], limit=30, status="wiki", exhaustive=False)
    print(
        f"map the base + snapshot + first pruned query: {time.perf_counter() - started:.2f} s "
        f"({len(seg)} notes, {seg.nbytes / 2**20:.0f} MiB)"
    )

    def exhaustive(tokens):
        scored = snap.score(tokens, shares=True)
        snap.rank_with_shares(tokens, limit=30, status="wiki", scored=scored)
        snap.rank_with_shares(tokens, limit=50, status="raw", scored=scored)

    def pruned(tokens):
        snap.rank_with_shares(tokens, limit=30, status="wiki", exhaustive=False)
        snap.rank_with_shares(tokens, limit=50, status="raw", exhaustive=False)

    for tokens in queries[:10]:
        exhaustive(tokens)
        pruned(tokens)
    figures: dict[str, list[float]] = {"exhaustive": [], "pruned": []}
    faults = {"exhaustive": 0, "pruned": 0}
    scored, skipped = bm25.stats.postings_scored, bm25.stats.postings_skipped

    def rounds() -> None:
        for order in (("exhaustive", "pruned"), ("pruned", "exhaustive")):
            for tokens in queries:
                for name in order:
                    call = exhaustive if name == "exhaustive" else pruned
                    faulted = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
                    before = time.process_time()
                    call(tokens)
                    figures[name].append((time.process_time() - before) * 1000)
                    faults[name] += resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faulted

    worker = threading.Thread(target=rounds)
    worker.start()
    worker.join()
    for name, values in figures.items():
        print(
            f"{name:10} CPU per search-like call: p50 {np.percentile(values, 50):.2f}  p95 "
            f"{np.percentile(values, 95):.2f}  p99 {np.percentile(values, 99):.2f}  mean {np.mean(values):.2f} ms"
            f"  ({faults[name] / len(values):.0f} page faults a call)"
        )
    scored, skipped = bm25.stats.postings_scored - scored, bm25.stats.postings_skipped - skipped
    print(
        f"pruned: {scored} postings scored, {skipped} skipped "
        f"({skipped / max(1, scored + skipped) * 100:.0f} % of the query terms' postings)"
    )


if __name__ == "__main__":
    main()
