"""brain_eval on a tiny BEIR-layout dataset: figures printed, a scratch database used and dropped."""

from __future__ import annotations

import io
import json
import os

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

from brain.actions import do_ingest_note
from brain.evaluation import ndcg_at, recall_at
from brain.models import Note

DOCS = {
    "d1": ("Tides", "The moon pulls the ocean and makes tides."),
    "d2": ("Bread", "Yeast makes dough rise in a warm oven."),
    "d3": ("Volcanoes", "Magma rises through the crust and erupts."),
    "d4": ("Bees", "Bees pollinate flowers and make honey."),
}
QUERIES = {"q1": ("what makes tides", "d1"), "q2": ("how does dough rise", "d2"), "q3": ("honey makers", "d4")}


@pytest.fixture
def tiny_beir(tmp_path):
    (tmp_path / "qrels").mkdir()
    (tmp_path / "corpus.jsonl").write_text(
        "\n".join(json.dumps({"_id": k, "title": t, "text": b}) for k, (t, b) in DOCS.items())
    )
    (tmp_path / "queries.jsonl").write_text(
        "\n".join(json.dumps({"_id": k, "text": q}) for k, (q, _) in QUERIES.items())
    )
    (tmp_path / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"{k}\t{d}\t1\n" for k, (_, d) in QUERIES.items())
    )
    return tmp_path


def scratch_database_exists() -> bool:
    """This process's scratch database (another benchmark may be running on the same server)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_database WHERE datname = %s", [f"hyperguild_eval_{os.getpid()}"])
        return cursor.fetchone() is not None


def test_metrics_follow_their_definitions():
    assert ndcg_at(["a", "b"], {"a": 1}) == 1.0
    assert ndcg_at(["b", "a"], {"a": 1}) == pytest.approx(1 / 1.5849625, rel=1e-6)
    assert recall_at(["a", "x"], {"a": 1, "b": 1}, 100) == 0.5


def test_brain_eval_prints_each_rankers_figures_in_a_scratch_database(
    tiny_beir, tmp_path, transactional_db, ollama_settings
):
    mine = do_ingest_note(title="My own note", body="tides and honey", wing="me")
    out = io.StringIO()
    call_command(
        "brain_eval",
        "--dataset",
        str(tiny_beir),
        "--rankers",
        "bm25,dense,hybrid",
        "--embedder",
        "ollama",
        "--cache-dir",
        str(tmp_path / "cache"),
        stdout=out,
        stderr=io.StringIO(),
    )
    printed = out.getvalue()
    for ranker in ("bm25", "dense", "hybrid"):
        for floors in ("on", "off"):
            assert f"{ranker} (floors {floors}): nDCG@10 " in printed
            assert f"| {ranker} | {floors} | " in printed
    assert "Recall@100" in printed and "| p50 | p95 |" in printed
    assert "embedding throughput:" in printed and "brain_eval done" in printed
    # The user's database was neither read into nor written by the benchmark.
    assert list(Note.objects.values_list("slug", flat=True)) == [mine.slug]
    assert not scratch_database_exists()

    # A second run reads the document vectors from the cache.
    again = io.StringIO()
    call_command(
        "brain_eval",
        "--dataset",
        str(tiny_beir),
        "--rankers",
        "dense",
        "--embedder",
        "ollama",
        "--cache-dir",
        str(tmp_path / "cache"),
        stdout=again,
        stderr=io.StringIO(),
    )
    assert "all 4 chunks from the cache" in again.getvalue()


def test_brain_eval_refuses_dense_without_an_embedder(tiny_beir, settings, db):
    settings.BRAIN_EMBEDDER = "off"
    with pytest.raises(CommandError, match="need an embedder"):
        call_command("brain_eval", "--dataset", str(tiny_beir), "--rankers", "dense", stdout=io.StringIO())


def test_brain_eval_refuses_a_folder_that_is_not_beir(tmp_path, db):
    with pytest.raises(CommandError, match="no corpus.jsonl"):
        call_command("brain_eval", "--dataset", str(tmp_path), stdout=io.StringIO())


def test_brain_eval_counts_negative_queries_answered_with_no_hits(
    tiny_beir, tmp_path, transactional_db, ollama_settings
):
    negatives = tmp_path / "negatives.txt"
    negatives.write_text('# off-topic and nonsense\nqwxzv plorbtang\n{"text": "zzkrv fnord"}\n\n')
    out = io.StringIO()
    call_command(
        "brain_eval",
        "--dataset",
        str(tiny_beir),
        "--rankers",
        "bm25,dense",
        "--embedder",
        "ollama",
        "--negatives",
        str(negatives),
        "--no-latency",
        "--cache-dir",
        str(tmp_path / "cache"),
        stdout=out,
        stderr=io.StringIO(),
    )
    printed = out.getvalue()
    assert "negatives with no hits |" in printed
    # BM25 finds none of the nonsense words; the vector side without a floor always returns its nearest.
    assert "| bm25 | on | 1.000 | 1.000 | 0.0% | 100.0% |" in printed
    assert "| dense | off |" in printed and [
        line for line in printed.splitlines() if line.startswith("| dense | off |")
    ][0].endswith("| 0.0% | – | – |")


def test_brain_eval_refuses_an_unreadable_or_empty_negatives_file(tiny_beir, tmp_path, db):
    with pytest.raises(CommandError, match="Cannot read --negatives"):
        call_command("brain_eval", "--dataset", str(tiny_beir), "--negatives", str(tmp_path / "nope.txt"))
    empty = tmp_path / "empty.txt"
    empty.write_text("# nothing\n\n")
    with pytest.raises(CommandError, match="holds no queries"):
        call_command("brain_eval", "--dataset", str(tiny_beir), "--negatives", str(empty))
    assert not scratch_database_exists()
