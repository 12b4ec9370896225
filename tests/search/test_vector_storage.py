"""Embeddings of several models in one table, each queried through its own HNSW index."""

from __future__ import annotations

import pytest
from django.db import connection

from brain import vectors
from brain.actions import do_ingest_note
from brain.models import Embedding, NoteChunk
from tests.fakes.embed import bag_of_words_vector


def add_chunk(note, text: str, ordinal: int = 0) -> NoteChunk:
    return NoteChunk.objects.create(note=note, ordinal=ordinal, text=text, content_hash=f"h-{note.id}-{ordinal}")


def embed(chunk: NoteChunk, model: str, dims: int) -> Embedding:
    vectors.ensure_index(model, dims)
    return Embedding.objects.create(
        chunk=chunk,
        model=model,
        dimensions=dims,
        content_hash=chunk.content_hash,
        vector=bag_of_words_vector(chunk.text, dims),
    )


class FixedEmbedder:
    """Embeds queries the way the fake server does, without HTTP (storage tests only)."""

    def __init__(self, key: str, dims: int):
        self.key, self.dimensions = key, dims

    def embed_query(self, text: str) -> list[float]:
        return bag_of_words_vector(text, self.dimensions)


@pytest.mark.django_db
def test_two_models_of_different_dimensions_coexist_and_each_query_sees_only_its_own():
    tide = do_ingest_note(title="Tides", body="moon gravity ocean", wing="sci")
    bread = do_ingest_note(title="Bread", body="flour yeast oven", wing="food")
    tide_chunk, bread_chunk = add_chunk(tide, "moon gravity ocean"), add_chunk(bread, "flour yeast oven")
    embed(tide_chunk, "ollama:small", 8)
    embed(bread_chunk, "ollama:small", 8)
    embed(tide_chunk, "openai:large", 16)  # only the tide note has the large model

    small = vectors.rank("yeast oven", limit=5, embedder=FixedEmbedder("ollama:small", 8))
    large = vectors.rank("yeast oven", limit=5, embedder=FixedEmbedder("openai:large", 16))

    assert [note_id for note_id, _ in small] == [bread.id, tide.id]
    assert [note_id for note_id, _ in large] == [tide.id]
    assert sorted(Embedding.objects.values_list("model", "dimensions")) == [
        ("ollama:small", 8),
        ("ollama:small", 8),
        ("openai:large", 16),
    ]


@pytest.mark.django_db
def test_the_vector_query_walks_the_models_hnsw_index():
    note = do_ingest_note(title="Tides", body="moon", wing="sci")
    embed(add_chunk(note, "moon gravity"), "ollama:small", 8)
    embed(add_chunk(note, "ocean", 1), "openai:large", 16)
    sql = vectors.query_sql("ollama:small", 8, wing=True, hall=False, status=True)
    params = {
        "vector": vectors.vector_literal(bag_of_words_vector("moon", 8)),
        "limit": 10,
        "wing": "sci",
        "hall": None,
        "status": "wiki",
    }
    with connection.cursor() as cursor:
        # A handful of rows: left alone the planner rightly prefers to scan and sort them (by
        # sequential scan or, with statistics left by earlier tests, another index). Taking both
        # choices away leaves only an ordered scan of an index whose expression and predicate
        # match the query's exactly: if they did not, the plan would still sort.
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("SET LOCAL enable_sort = off")
        cursor.execute("EXPLAIN " + sql, params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert f"Index Scan using {vectors.index_name('ollama:small', 8)}" in plan
    assert vectors.index_name("openai:large", 16) not in plan


@pytest.mark.django_db
def test_the_default_local_model_index_comes_with_the_migration():
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexdef FROM pg_indexes WHERE indexname = %s",
            [vectors.index_name("local:multilingual-e5-small", 384)],
        )
        [(definition,)] = cursor.fetchall()
    assert "hnsw" in definition and "vector_cosine_ops" in definition
    assert "(vector)::vector(384)" in definition and "'local:multilingual-e5-small'" in definition


@pytest.mark.django_db
def test_filters_apply_on_the_vector_side():
    tide = do_ingest_note(title="Tides", body="moon", wing="sci", hall="astro")
    bread = do_ingest_note(title="Bread", body="flour", wing="food", hall="bake")
    embed(add_chunk(tide, "moon gravity ocean"), "ollama:small", 8)
    embed(add_chunk(bread, "flour yeast oven"), "ollama:small", 8)
    embedder = FixedEmbedder("ollama:small", 8)
    assert [n for n, _ in vectors.rank("moon", limit=5, wing="food", embedder=embedder)] == [bread.id]
    assert [n for n, _ in vectors.rank("moon", limit=5, hall="astro", embedder=embedder)] == [tide.id]
    assert vectors.rank("moon", limit=5, status="raw", embedder=embedder) == []
