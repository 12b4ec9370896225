"""Recorded passage vectors for the frozen corpora of tests/fixtures/ (the passage reader, `brain.passage_reader`).

Reading a corpus's passages with all-MiniLM-L6-v2 the first time takes most of the time of the tests that answer
from it (a copy of docs/: about 1,100 passages, 15-30 s). The vectors the real encoder gave each passage are kept
beside the corpus (`passage-vectors.npz`: the digest `brain.passage_reader.digest` keys a passage by, and its
float32 row) and put in the PassageVector table before a test asks, as a brain that has read them keeps them.
Questions are still encoded by the real model.

`tests/search/test_recorded_passage_vectors.py` checks that a file holds every passage of its corpus and that
rows re-encoded now are the same. After a change to how passages are cut, or to the encoder, write them again:

    RECORD_PASSAGE_VECTORS=1 .venv/bin/python -m pytest tests/search/test_recorded_passage_vectors.py
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from brain import passage_reader
from brain.models import Note, PassageVector
from brain.passages import split_passages
from hyperguild.lib import minilm

FILE_NAME = "passage-vectors.npz"


def corpus_texts(notes: list[Note]) -> list[str]:
    """Every passage text of `notes`, once each, in the notes' order."""
    return list(dict.fromkeys(passage.text for note in notes for passage in split_passages(note.title, note.body)))


def recording() -> bool:
    return os.environ.get("RECORD_PASSAGE_VECTORS") == "1"


def load(path: Path) -> dict[str, np.ndarray]:
    """digest → float32 row, from a recorded file (empty when there is none)."""
    if not path.is_file():
        return {}
    with np.load(path) as data:
        digests, rows = data["digest"], data["vector"]
    return {digest.tobytes().hex(): row.astype(np.float32) for digest, row in zip(digests, rows, strict=True)}


def write(path: Path, notes: list[Note]) -> None:
    """Encode every passage of `notes` with the real encoder and write them to `path`."""
    texts = corpus_texts(notes)
    rows = minilm.load_encoder().encode(texts)
    # bytes as uint8 (a fixed-width bytes dtype would drop a digest's trailing zero bytes)
    digests = np.array([list(bytes.fromhex(passage_reader.digest(text))) for text in texts], dtype=np.uint8)
    np.savez(path, digest=digests, vector=rows.astype(np.float32))


def preload(corpus: Path) -> None:
    """Put the corpus's recorded vectors in the PassageVector table (none while they are being recorded)."""
    if recording():
        return
    rows = [PassageVector(digest=digest, vector=row.tobytes()) for digest, row in load(corpus / FILE_NAME).items()]
    PassageVector.objects.bulk_create(rows, ignore_conflicts=True, batch_size=1000)
