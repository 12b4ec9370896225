"""Segments on disk: saved as .npy files under BRAIN_BM25_DIR and memory-mapped, one builder at a time."""

from __future__ import annotations

import fcntl
import json
import logging
import os
import shutil
import threading
from pathlib import Path
from typing import Any, Self, TextIO

import numpy as np
from django.conf import settings

from brain.bm25.counters import stats
from brain.bm25.segments import SEGMENT_ARRAYS, Segment

logger = logging.getLogger(__name__)

# Bumped whenever the arrays a segment saves change (2: block-max bounds); a base of another format is
# ignored and built again, never misread.
SEGMENT_FORMAT = 3  # 3: HTML markup is not indexed (brain.bm25.text.without_markup)


def save_segment(segment: Segment, directory: Path, corpus_id: str) -> Path:
    """Write `segment` as .npy files under `directory/base-<version>` (atomically: a temporary folder renamed)."""
    directory.mkdir(parents=True, exist_ok=True)
    final = directory / f"base-{segment.version:014d}"
    if final.exists():
        if _format_of(final) == SEGMENT_FORMAT:
            return final
        shutil.rmtree(final, ignore_errors=True)  # written by an older version: replaced (callers hold file_lock)
    tmp = directory / f".tmp-{os.getpid()}-{threading.get_ident()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    for name in SEGMENT_ARRAYS:
        np.save(tmp / f"{name}.npy", getattr(segment, name), allow_pickle=False)
    meta = {
        "format": SEGMENT_FORMAT,
        "version": segment.version,
        "corpus_id": corpus_id,
        "labels": segment.labels,
        "total_length": segment.total_length,
    }
    (tmp / "meta.json").write_text(json.dumps(meta))
    os.rename(tmp, final)
    return final


def _format_of(path: Path) -> int | None:
    try:
        return json.loads((path / "meta.json").read_text()).get("format")
    except (OSError, ValueError):
        return None


def load_segment(path: Path) -> Segment:
    """Memory-map a saved segment: pages are shared with every other process that maps it."""
    meta = json.loads((path / "meta.json").read_text())
    if meta.get("format") != SEGMENT_FORMAT:
        raise ValueError(f"{path}: segment format {meta.get('format')}, this version reads {SEGMENT_FORMAT}")
    # Plain arrays over the mapped pages (np.asarray drops the memmap subclass, whose slicing costs a Python
    # call per slice on the query path); the mapping lives as long as an array over it does.
    arrays: dict[str, Any] = {  # Segment's array fields by name (its other fields are not arrays)
        name: np.asarray(np.load(path / f"{name}.npy", mmap_mode="r", allow_pickle=False)) for name in SEGMENT_ARRAYS
    }
    stats.loads += 1
    return Segment(
        version=meta["version"], labels=meta["labels"], total_length=meta["total_length"], path=path, **arrays
    )


def shared_dir(corpus_id: str | None) -> Path | None:
    """Where base segments of this corpus are shared, or None (BRAIN_BM25_DIR empty: in memory only)."""
    root = settings.BRAIN_BM25_DIR
    if not root or not corpus_id:
        return None
    return Path(root) / corpus_id


class file_lock:
    """One process at a time builds or merges a shared base on this machine; the others then map it.

    One lock file for the whole BRAIN_BM25_DIR: corpora are rarely more than one per machine, and
    a folder per corpus is made only when a base is written into it.
    """

    def __init__(self, directory: Path | None) -> None:
        self.root = directory.parent if directory is not None else None
        self.handle: TextIO | None = None

    def __enter__(self) -> Self:
        if self.root is not None:
            self.root.mkdir(parents=True, exist_ok=True)
            self.handle = open(self.root / ".lock", "w")  # noqa: SIM115
            fcntl.flock(self.handle, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.handle is not None:
            fcntl.flock(self.handle, fcntl.LOCK_UN)
            self.handle.close()


def newest_on_disk(directory: Path | None, max_version: int) -> Segment | None:
    if directory is None or not directory.exists():
        return None
    candidates = sorted(
        (p for p in directory.glob("base-*") if p.is_dir() and int(p.name[5:]) <= max_version), reverse=True
    )
    for path in candidates:
        try:
            return load_segment(path)
        except (OSError, ValueError, KeyError):
            logger.warning("unreadable BM25 segment %s; ignored", path)
    return None


def forget_old_bases(directory: Path, *, keep: Path | None, keep_count: int = 2) -> None:
    """Delete all but the newest bases (a process still mapping one keeps its pages until it lets go)."""
    bases = sorted((p for p in directory.glob("base-*") if p.is_dir()), reverse=True)
    for path in bases[keep_count:]:
        if path != keep:
            shutil.rmtree(path, ignore_errors=True)
