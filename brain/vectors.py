"""The vector side of search: the query embedding against pgvector, through HNSW.

Embeddings of every model live in one table with a dimensionless `vector`
column. Each model has a partial HNSW index on `vector::vector(<dims>)`
restricted to `model = '<model>'`; the query casts and filters the same way,
so the planner can use exactly that model's index.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.db import connections, transaction

from hyperguild.lib.embedders import Embedder, get_embedder

# Chunks fetched per wanted note: a note's chunks compete, its best one counts.
CHUNKS_PER_NOTE = 2
HNSW_MIN_EF_SEARCH = 40  # pgvector's default; raised to the number of rows wanted
HNSW_MAX_EF_SEARCH = 1000  # pgvector's maximum
EXCERPT_CHARS = 400

_indexed: set[tuple[str, str, int]] = set()


def active() -> bool:
    return settings.BRAIN_EMBEDDER != "off"


def index_name(model: str, dimensions: int) -> str:
    digest = hashlib.sha1(model.encode("utf-8")).hexdigest()[:12]
    return f"brain_emb_hnsw_{digest}_{dimensions}"


def _sql_literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def ensure_index(model: str, dimensions: int, using: str = "default") -> None:
    """Create the model's partial HNSW cosine index if missing (once per process and database)."""
    key = (using, model, int(dimensions))
    if key in _indexed:
        return
    dims = int(dimensions)
    connection = connections[using]
    with connection.cursor() as cursor:
        if connection.in_atomic_block:
            # Inside a transaction that already wrote rows, PostgreSQL refuses CREATE INDEX
            # while deferred foreign-key checks are pending: run them now.
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute(
            f"CREATE INDEX IF NOT EXISTS {index_name(model, dims)} ON brain_embedding "
            f"USING hnsw ((vector::vector({dims})) vector_cosine_ops) WHERE model = {_sql_literal(model)}"
        )
    # Remember it only once committed: an index created in a transaction that
    # rolls back is gone, and the next call must create it again.
    transaction.on_commit(lambda: _indexed.add(key), using=using)


def forget_indexes() -> None:
    _indexed.clear()


def vector_literal(vector: list[float]) -> str:
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"


def query_sql(model: str, dimensions: int, *, wing: bool, hall: bool, status: bool) -> str:
    """The nearest-chunks query. The ORDER BY expression and the model predicate repeat
    the index's own, so the planner can walk the HNSW graph."""
    dims = int(dimensions)
    filters = ["n.status <> 'archived'"]
    if status:
        filters.append("n.status = %(status)s")
    if wing:
        filters.append("n.wing = %(wing)s")
    if hall:
        filters.append("n.hall = %(hall)s")
    return (
        f"SELECT c.note_id, c.text, (e.vector::vector({dims})) <=> %(vector)s::vector({dims}) AS distance "
        "FROM brain_embedding e "
        "JOIN brain_notechunk c ON c.id = e.chunk_id "
        "JOIN brain_note n ON n.id = c.note_id "
        f"WHERE e.model = {_sql_literal(model)} AND e.content_hash = c.content_hash AND {' AND '.join(filters)} "
        f"ORDER BY (e.vector::vector({dims})) <=> %(vector)s::vector({dims}) "
        "LIMIT %(limit)s"
    )


def rank(query: str, *, limit: int, **kwargs: Any) -> list[tuple[int, str]]:
    """(note_id, best chunk text) of the `limit` nearest notes, nearest first (see rank_scored)."""
    return [(note_id, text) for note_id, text, _ in rank_scored(query, limit=limit, **kwargs)]


def rank_scored(
    query: str,
    *,
    limit: int,
    wing: str | None = None,
    hall: str | None = None,
    status: str | None = None,
    embedder: Embedder | None = None,
    using: str = "default",
    vector: list[float] | None = None,
) -> list[tuple[int, str, float]]:
    """(note_id, best chunk text, cosine similarity) of the `limit` nearest notes, nearest first.

    `vector` is the query's embedding when the caller already has it.
    Raises EmbedderError or a database error; `brain.search` turns those into a degraded answer.
    """
    embedder = embedder or get_embedder()
    if embedder is None:
        return []
    if vector is None:
        vector = embedder.embed_query(query)
    dims = len(vector)
    wanted = limit * CHUNKS_PER_NOTE
    sql = query_sql(embedder.key, dims, wing=bool(wing), hall=bool(hall), status=bool(status))
    params: dict[str, str | int | None] = {
        "vector": vector_literal(vector),
        "limit": wanted,
        "wing": wing,
        "hall": hall,
        "status": status,
    }
    with transaction.atomic(using=using), connections[using].cursor() as cursor:
        # ef_search bounds how many rows one HNSW scan can return; iterative scans keep
        # walking the graph when the note filters drop rows (pgvector ≥ 0.8).
        cursor.execute(f"SET LOCAL hnsw.ef_search = {min(max(HNSW_MIN_EF_SEARCH, wanted), HNSW_MAX_EF_SEARCH)}")
        cursor.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    # relaxed_order may return rows slightly out of order: sort, then keep each note's best chunk.
    rows.sort(key=lambda row: row[2])
    seen: dict[int, tuple[str, float]] = {}
    for note_id, text, distance in rows:
        if note_id not in seen:
            seen[note_id] = (text[:EXCERPT_CHARS], 1.0 - float(distance))
        if len(seen) == limit:
            break
    return [(note_id, text, similarity) for note_id, (text, similarity) in seen.items()]


def similarities(model: str, vector: list[float], note_ids: list[int], using: str = "default") -> Mapping[int, float]:
    """Cosine similarity of `vector` with each note's best current chunk of `model`.

    Notes with no current embedding of the model are absent from the answer.
    """
    if not note_ids:
        return {}
    dims = len(vector)
    sql = (
        f"SELECT c.note_id, MIN((e.vector::vector({dims})) <=> %(vector)s::vector({dims})) "
        "FROM brain_embedding e JOIN brain_notechunk c ON c.id = e.chunk_id "
        f"WHERE e.model = {_sql_literal(model)} AND e.content_hash = c.content_hash "
        "AND c.note_id = ANY(%(ids)s) GROUP BY c.note_id"
    )
    with connections[using].cursor() as cursor:
        cursor.execute(sql, {"vector": vector_literal(vector), "ids": list(note_ids)})
        return {note_id: 1.0 - float(distance) for note_id, distance in cursor.fetchall()}


def sample_chunk_vectors(model: str, limit: int, using: str = "default") -> list[tuple[int, list[float]]]:
    """(note_id, vector) of up to `limit` current chunks of live wiki notes embedded by `model`: a fixed sample
    (ordered by a hash of the chunk id), so the same brain always gives the same one (`brain.floors`)."""
    sql = (
        "SELECT c.note_id, e.vector::text FROM brain_embedding e "
        "JOIN brain_notechunk c ON c.id = e.chunk_id JOIN brain_note n ON n.id = c.note_id "
        f"WHERE e.model = {_sql_literal(model)} AND e.content_hash = c.content_hash AND n.status = 'wiki' "
        "ORDER BY md5(c.id::text) LIMIT %(limit)s"
    )
    with connections[using].cursor() as cursor:
        cursor.execute(sql, {"limit": int(limit)})
        return [(note_id, [float(x) for x in text.strip("[]").split(",")]) for note_id, text in cursor.fetchall()]
