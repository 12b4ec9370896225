"""The excerpt's fast path (one-passage notes, cached word tokens) picks exactly what the plain version picks."""

from __future__ import annotations

import random

from brain import bm25
from brain.search import EXCERPT_CHARS, PASSAGE_SPLIT_RE, _clip, excerpt


def reference_excerpt(body: str, tokens: list[str], *, fallback: str | None = None, size: int = EXCERPT_CHARS) -> str:
    """The excerpt as it was before the fast path: every passage tokenised, every word tokenised again."""
    wanted = set(tokens)
    best, best_hits = "", 0
    for passage in PASSAGE_SPLIT_RE.split(body):
        hits = len(wanted.intersection(bm25.tokenize(passage)))
        if hits > best_hits:
            best, best_hits = passage, hits
    if not best_hits:
        return _clip(fallback or body, 0, size)
    start = 0
    for match in bm25.WORD_RE.finditer(best):
        word_tokens = bm25.tokenize(match.group())
        if word_tokens and word_tokens[0] in wanted:
            start = match.start()
            break
    return _clip(best, max(0, start - size // 4), size)


WORDS = ["vacuum", "Planner", "running", "the", "ﬁle", "東京", "indexes", "caches", "deploy", "rollback", "x"]
# The stemmer's irregular forms and case: the prefilter on first letters must never skip a match.
WORDS += [
    "dying",
    "Die",
    "lying",
    "skies",
    "Sky",
    "Yes",
    "yearly",
    "UGLY",
    "news",
    "idly",
    "_x1",
    "9lives",
    "Lying",
] + [f"w{i}" for i in range(60)]


def test_the_fast_path_picks_the_same_excerpt_on_random_notes():
    rng = random.Random(5)
    for _ in range(400):
        paragraphs = [" ".join(rng.choices(WORDS, k=rng.randint(1, 90))) for _ in range(rng.choice([1, 1, 2, 4]))]
        body = "\n\n".join(paragraphs)
        query = bm25.tokenize(" ".join(rng.choices(WORDS, k=rng.randint(1, 3))))
        fallback = rng.choice([None, "the vector side's passage"])
        assert excerpt(body, query, fallback=fallback) == reference_excerpt(body, query, fallback=fallback)
