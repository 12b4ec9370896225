"""The brain's figures for GET /metrics (observability.metrics): the embedding backlog and the BM25 index."""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client.core import GaugeMetricFamily, Metric

from brain import backlog
from brain.bm25.live import live_index


def embedding_metrics() -> Iterable[Metric]:
    report = backlog.status()
    pending = GaugeMetricFamily(
        "hyperguild_embedding_backlog_chunks",
        "Note chunks still waiting for an embedding of the active model",
        labels=["model"],
    )
    waiting = GaugeMetricFamily(
        "hyperguild_embedding_backlog_notes", "Notes changed and not yet chunked for embedding", labels=["model"]
    )
    active = report["active"]
    if active is not None:
        pending.add_metric([active["model"]], active["pending_chunks"])
        waiting.add_metric([active["model"]], active["notes_waiting"])
    yield pending
    yield waiting


def bm25_metrics() -> Iterable[Metric]:
    """This process's BM25 index (each web process keeps its own; they converge on the same version)."""
    snapshot = live_index().snapshot
    segments = GaugeMetricFamily(
        "hyperguild_bm25_segments", "Non-empty segments in the BM25 index of the process answering the scrape"
    )
    documents = GaugeMetricFamily("hyperguild_bm25_documents", "Live documents in that process's BM25 index")
    if snapshot is not None:
        segments.add_metric([], sum(1 for part in snapshot.parts if len(part)))
        documents.add_metric([], len(snapshot))
    else:
        segments.add_metric([], 0)
        documents.add_metric([], 0)
    yield segments
    yield documents
