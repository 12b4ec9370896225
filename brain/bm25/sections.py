"""BM25 by a note's best section: a long page ranked by the part of it that answers (issue 45).

Documentation sites write long pages of many sections. Over a whole page, BM25 favours the page that holds the
query's words most often *anywhere*: a migration guide or a changelog that touches every subject once in passing
outranks the concepts page that answers the question in one section (pydantic's docs: the right page in BM25's
top 3 for 13 of 25 questions by the whole page, 18 by the best section; bench/RESULTS.md).

`section_scores()` scores each section of each candidate note (`brain.chunking.sections`: a heading and its text,
headings inside code fences are text) as its own document: title, heading path and text, tokenised as the index
tokenises a note (`note_text`), with the corpus's idf (the snapshot's, so a word's weight is the same as in the
whole-page score) and the candidates' mean section length as avgdl. A note's score is its best section's.
A note without headings is one section: its title and body, as the index sees it.

The sections' term counts are kept per note and content hash (up to `SECTION_CACHE_TERMS` entries), so a note is split and
tokenised once, not at every query.
"""

from __future__ import annotations

import threading
from collections import Counter, OrderedDict

from brain.bm25.okapi import K1
from brain.bm25.snapshot import Snapshot
from brain.bm25.text import note_text, tokenize

# Length normalisation of a section: the textbook 0.75, not the index's 0.4 (tuned on SciFact's abstracts, all
# of about one length). Sections run from one line to pages; a long one holding the words by chance is the very
# thing to discount. Measured on click, typer and pydantic (no floors, right page in the top 3): 0.4 gave 19, 23
# and 17 of 23, 29 and 25; 0.75 gave 19, 24 and 18.
SECTION_B = 0.75
# The cache's bound: distinct (section, term) entries kept, about 100 bytes each (a long page of a hundred sections
# holds thousands; a SciFact abstract about a hundred).
SECTION_CACHE_TERMS = 500_000

# (note id, content hash) → [(term counts, length)] per section
_cache: OrderedDict[tuple[int, str], list[tuple[Counter[str], int]]] = OrderedDict()
_lock = threading.Lock()
_cached_terms = 0


def note_sections(title: str, body: str) -> list[tuple[Counter[str], int]]:
    """(term counts, length in tokens) of each section of a note: title, heading path and the section's text."""
    from brain.chunking import sections  # chunking imports nothing of the index; imported here to keep it so

    parts = sections(body) or [("", "")]
    out = []
    for heading_path, text in parts:
        tokens = tokenize(note_text(title, f"{heading_path}\n{text}" if heading_path else text))
        out.append((Counter(tokens), len(tokens)))
    return out


def cached_sections(note_id: int, content_hash: str) -> list[tuple[Counter[str], int]] | None:
    key = (note_id, content_hash)
    with _lock:
        found = _cache.get(key)
        if found is not None:
            _cache.move_to_end(key)
        return found


def _terms(parts: list[tuple[Counter[str], int]]) -> int:
    return sum(len(counts) for counts, _ in parts)


def remember_sections(note_id: int, content_hash: str, parts: list[tuple[Counter[str], int]]) -> None:
    """Keep a note's sections' term counts, the least recently used dropped past SECTION_CACHE_TERMS."""
    global _cached_terms
    key = (note_id, content_hash)
    with _lock:
        previous = _cache.pop(key, None)
        if previous is not None:
            _cached_terms -= _terms(previous)
        _cache[key] = parts
        _cached_terms += _terms(parts)
        while _cached_terms > SECTION_CACHE_TERMS and len(_cache) > 1:
            _, dropped = _cache.popitem(last=False)
            _cached_terms -= _terms(dropped)


def forget() -> None:
    global _cached_terms
    with _lock:
        _cache.clear()
        _cached_terms = 0


def section_scores(
    index: Snapshot, query_tokens: list[str], notes: dict[int, list[tuple[Counter[str], int]]]
) -> dict[int, float]:
    """Each note's best section's BM25 score for `query_tokens` (rank-bm25's expression with SECTION_B, the
    snapshot's idf)."""
    lengths = [length for parts in notes.values() for _, length in parts]
    avgdl = sum(lengths) / len(lengths) if lengths else 0.0
    if not avgdl:
        return dict.fromkeys(notes, 0.0)
    idf = {token: index.term_info(token)[2] for token in set(query_tokens)}
    best: dict[int, float] = {}
    for note_id, parts in notes.items():
        top = 0.0
        for counts, length in parts:
            norm = K1 * (1 - SECTION_B + SECTION_B * length / avgdl)
            score = 0.0
            for token in query_tokens:
                tf = counts.get(token, 0)
                if tf:
                    score += idf[token] * tf * (K1 + 1) / (tf + norm)
            top = max(top, score)
        best[note_id] = top
    return best
