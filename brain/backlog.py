"""How far the embeddings are behind the notes, per model, and when they should catch up.

    status()            -> {"active": {...}, "models": [...]}   (/health, home page, brain_embed --status)
    is_partial(key)     -> bool                                 (search answers: "partial": true)

For the active embedding model: chunks embedded, chunks pending (no embedding
for their current text), notes waiting to be chunked (new or edited notes the
sync has not reached), the embedding rate over the last RATE_WINDOW_SECONDS
(from the embeddings' own timestamps, so it counts every process that
embeds) and the time left at that rate. Other models' embedded counts are
listed too: their vectors stay until a sync of that model prunes them.
"""

from __future__ import annotations

import threading
import time
from datetime import timedelta
from typing import NotRequired, TypedDict

from django.db.models import Count, Exists, Min, OuterRef, QuerySet
from django.utils import timezone

from brain.models import NOTE_SOURCE_HASH, Embedding, Note, NoteChunk, NoteStatus
from hyperguild.lib.embedders import BaseEmbedder, Embedder, get_embedder
from hyperguild.models import WorkerHeartbeat

EMBED_HEARTBEAT = "embed"  # WorkerHeartbeat.name each embedding task records (brain.tasks)

RATE_WINDOW_SECONDS = 15 * 60
MIN_RATE_SAMPLES = 2  # embeddings in the window needed before a rate (and a time left) is given
PARTIAL_CHECK_SECONDS = 5.0  # how long one process trusts its last "is the backlog empty?" answer

_partial_lock = threading.Lock()
_partial_cache: dict[str, tuple[float, bool]] = {}


def _active_embedder() -> BaseEmbedder | None:
    return get_embedder()


def stale_notes(notes: QuerySet[Note]) -> QuerySet[Note]:
    """Searchable notes with no chunk carrying their current title/body hash."""
    current = NoteChunk.objects.filter(note=OuterRef("pk"), source_hash=OuterRef("text_md5"))
    return notes.exclude(status=NoteStatus.ARCHIVED).annotate(text_md5=NOTE_SOURCE_HASH).filter(~Exists(current))


def missing_chunks(embedder: Embedder, notes: QuerySet[Note], using: str = "default") -> QuerySet[NoteChunk]:
    current = Embedding.objects.using(using).filter(
        chunk=OuterRef("pk"), model=embedder.key, content_hash=OuterRef("content_hash")
    )
    return (
        NoteChunk.objects.using(using)
        .filter(note__in=notes.exclude(status=NoteStatus.ARCHIVED))
        .filter(~Exists(current))
        .order_by("id")
    )


class ModelStatus(TypedDict):
    """How far the active model's embeddings are (/health, /metrics, the home page)."""

    model: str
    embedded_chunks: int
    pending_chunks: int
    notes_waiting: int
    chunks_per_second: float | None  # None: too few recent embeddings to tell
    eta_seconds: int | float | None  # None: unknown (no rate)
    complete: bool


class ModelCount(TypedDict):
    model: str
    embedded_chunks: int


class EmbeddingStatus(TypedDict):
    enabled: bool
    active: ModelStatus | None
    models: list[ModelCount]


class EmbeddingHealth(EmbeddingStatus):
    """/health's "embeddings" section."""

    backlog: NotRequired[str]  # the active model's backlog in words
    worker_last_slice_seconds_ago: NotRequired[float | None]


class BacklogOnHome(ModelStatus):
    eta: str  # eta_seconds in words


class EmbeddingHomeCounts(TypedDict):
    embedding_backlog: BacklogOnHome | None  # None: no embedder configured


def model_status(embedder: Embedder) -> ModelStatus:
    key = embedder.key
    notes = Note.objects.all()
    live_chunks = NoteChunk.objects.exclude(note__status=NoteStatus.ARCHIVED)
    total_chunks = live_chunks.count()
    pending = missing_chunks(embedder, notes).count()
    waiting_notes = stale_notes(notes).count()
    embedded = total_chunks - pending
    since = timezone.now() - timedelta(seconds=RATE_WINDOW_SECONDS)
    recent = Embedding.objects.filter(model=key, created_at__gte=since).aggregate(
        n=Count("id"), first=Min("created_at")
    )
    rate = None
    if recent["n"] >= MIN_RATE_SAMPLES and recent["first"] is not None:
        elapsed = max((timezone.now() - recent["first"]).total_seconds(), 1.0)
        rate = recent["n"] / elapsed
    chunked_notes = live_chunks.values("note_id").distinct().count()
    chunks_per_note = total_chunks / chunked_notes if chunked_notes else 1.0
    todo = pending + waiting_notes * chunks_per_note
    eta = None
    if todo == 0:
        eta = 0.0
    elif rate:
        eta = todo / rate
    return {
        "model": key,
        "embedded_chunks": embedded,
        "pending_chunks": pending,
        "notes_waiting": waiting_notes,
        "chunks_per_second": round(rate, 3) if rate is not None else None,
        "eta_seconds": round(eta) if eta is not None else None,
        "complete": pending == 0 and waiting_notes == 0,
    }


def status(embedder: Embedder | None = None) -> EmbeddingStatus:
    """Whether an embedder is on, the active model's `model_status`, and every model's count of embeddings."""
    embedder = embedder if embedder is not None else _active_embedder()
    models: list[ModelCount] = [
        {"model": row["model"], "embedded_chunks": row["n"]}
        for row in Embedding.objects.order_by("model").values("model").annotate(n=Count("id"))
    ]
    return {"enabled": embedder is not None, "active": model_status(embedder) if embedder else None, "models": models}


def health_section() -> EmbeddingHealth:
    """/health's "embeddings" section: the backlog of the active model and every model's count, said in words
    ("backlog"), and when the embedding worker (its own django-q2 cluster) last took a slice."""
    report: EmbeddingHealth = {**status()}
    active = report["active"]
    if active is not None:
        report["backlog"] = describe_backlog(active)
        beat = WorkerHeartbeat.objects.filter(name=EMBED_HEARTBEAT).first()
        report["worker_last_slice_seconds_ago"] = round(beat.age().total_seconds(), 1) if beat else None
    return report


def describe_backlog(active: ModelStatus) -> str:
    if active["complete"]:
        return "none: every chunk is embedded"
    rate = active["chunks_per_second"]
    return (
        f"{active['pending_chunks']} chunks pending and {active['notes_waiting']} notes waiting to be chunked; "
        f"rate {f'{rate} chunks/s' if rate is not None else 'unknown'}, time left {describe_eta(active['eta_seconds'])}"
    )


def home_counts() -> EmbeddingHomeCounts:
    """The home page's `embedding_backlog` (None when no embedder is configured)."""
    active = status()["active"]
    if active is None:
        return {"embedding_backlog": None}
    return {"embedding_backlog": {**active, "eta": describe_eta(active["eta_seconds"])}}


def is_partial(embedder_key: str) -> bool:
    """True while some searchable note has a chunk without an embedding of this model, or no chunk yet.

    Answered from a per-process cache for PARTIAL_CHECK_SECONDS: search calls it on every query.
    (A note edited but not yet re-chunked keeps its old vectors meanwhile; `status()` counts those too.)
    """
    now = time.monotonic()
    with _partial_lock:
        cached = _partial_cache.get(embedder_key)
    if cached is not None and now - cached[0] < PARTIAL_CHECK_SECONDS:
        return cached[1]
    current = Embedding.objects.filter(chunk=OuterRef("pk"), model=embedder_key, content_hash=OuterRef("content_hash"))
    unembedded = NoteChunk.objects.exclude(note__status=NoteStatus.ARCHIVED).filter(~Exists(current)).exists()
    unchunked = (
        not unembedded
        and Note.objects.exclude(status=NoteStatus.ARCHIVED)
        .filter(~Exists(NoteChunk.objects.filter(note=OuterRef("pk"))))
        .exists()
    )
    partial = unembedded or unchunked
    with _partial_lock:
        _partial_cache[embedder_key] = (now, partial)
    return partial


def forget() -> None:
    """Drop the cached answers of is_partial (tests; a sync that just finished)."""
    with _partial_lock:
        _partial_cache.clear()


def describe_eta(seconds: float | None) -> str:
    if seconds is None:
        return "unknown (no embedding in the last 15 minutes)"
    if seconds == 0:
        return "none"
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    if hours:
        return f"about {hours} h {minutes} min"
    if minutes:
        return f"about {minutes} min {secs} s"
    return f"about {secs} s"
