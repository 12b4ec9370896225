"""Benchmark (not collected by default): brain_context, subgraph and brain_answer on a 5,000-note brain.

    HYPERGUILD_TEST_DB_NAME=test_answers nice .venv/bin/python -m pytest tests/answers/bench_answers.py -q -s

Prints figures; asserts nothing about time.
"""

from __future__ import annotations

import random
import statistics
import time

from django.db import connection
from django.test.utils import CaptureQueriesContext

from brain import bm25
from brain.answers import answer
from brain.context import context
from brain.graph import subgraph
from brain.indexing import bump_brain_version
from brain.models import Note, NoteLink
from tests.fakes.reranker import FakeReranker

NOTES = 5000
LINKS_PER_NOTE = 3
WORDS = (
    "deploy postgres graph token reranker litellm config drift session review wiki raw note link search "
    "embedding vector index bm25 worker supervisor skill routing model latency cache queue schedule"
).split()


def timed(fn, repeat: int = 5) -> tuple[float, object]:
    samples, result = [], None
    for _ in range(repeat):
        started = time.perf_counter()
        result = fn()
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples), result


def test_benchmark_answers_and_context(db, settings):
    rng = random.Random(7)
    notes = [
        Note(
            slug=f"note-{n}",
            title=f"{rng.choice(WORDS)} {rng.choice(WORDS)} {n}",
            body=" ".join(rng.choice(WORDS) for _ in range(120)) + (" hyperguild" if n % 50 == 0 else ""),
            status="wiki",
            wing="concepts",
            path=f"wiki/concepts/note-{n}.md",
        )
        for n in range(NOTES)
    ]
    Note.objects.bulk_create(notes, batch_size=1000)
    ids = list(Note.objects.values_list("id", "slug"))
    links = []
    for note_id, _slug in ids:
        for target_id, target_slug in rng.sample(ids, LINKS_PER_NOTE):
            if target_id != note_id:
                links.append(NoteLink(source_id=note_id, target_id=target_id, target_slug=target_slug))
    NoteLink.objects.bulk_create(links, batch_size=5000, ignore_conflicts=True)
    bump_brain_version()
    bm25.reset()

    started = time.perf_counter()
    bm25.current_index()
    print(f"\n{NOTES} notes, {len(links)} links; BM25 index build {1000 * (time.perf_counter() - started):.0f} ms")

    ms, result = timed(lambda: context("/home/someone/dev/hyperguild"))
    print(f"brain_context (project only): median {ms:.1f} ms, {len(result['entries'])} entries")
    ms, result = timed(lambda: context("/home/someone/dev/hyperguild", recent_files=["internal/graphstore/pg.go"]))
    print(f"brain_context (+ recent_files): median {ms:.1f} ms")

    with CaptureQueriesContext(connection) as queries:
        found = subgraph("note-0", 2)
    ms, _ = timed(lambda: subgraph("note-0", 2))
    print(f"subgraph depth 2: {len(found)} notes, {len(queries)} queries, median {ms:.1f} ms")

    ms, result = timed(lambda: answer("reranker latency on postgres"))
    print(f"brain_answer extractive: median {ms:.1f} ms, {len(result['sources'])} sources")

    with FakeReranker(
        lambda prompt: "yes" if "latency" in prompt.split("<Document>")[1] else "no", delay=0.05
    ) as ollama:
        settings.BRAIN_RERANKER_URL = ollama.url
        settings.BRAIN_RERANKER_CONCURRENCY = 4
        ms, result = timed(lambda: answer("reranker latency on postgres"), repeat=3)
        calls = len(ollama.requests) // 3
        print(
            f"brain_answer with reranker (fake, 50 ms per call, concurrency 4): median {ms:.0f} ms for "
            f"{calls} calls, most in flight {ollama.max_in_flight}, {len(result['sources'])} sources kept"
        )
