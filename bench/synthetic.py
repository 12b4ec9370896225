"""Synthetic notes for the benchmarks (bench/load.py, bench/registration.py, bench/search_scale.py,
bench/bm25_pruning.py): Zipf-distributed pseudo-words, stored straight into a scratch database."""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable

from brain.indexing import bump_brain_version
from brain.models import Note, NoteStatus

SYNTHETIC_VOCABULARY = 30_000
SYNTHETIC_WINGS = ["eng", "ops", "product", "research", "people"]
SYNTHETIC_HALLS = ["decisions", "howto", "incidents", "notes"]


def pseudo_word(rng: random.Random) -> str:
    return "".join(rng.choice("bcdfghklmnprstvz") + rng.choice("aeiou") for _ in range(rng.randint(2, 4)))


class SyntheticCorpus:
    """Zipf-distributed pseudo-words: titles of 2–6 words, bodies of 40–200, five wings, four halls."""

    def __init__(self, seed: int = 7) -> None:
        self.rng = random.Random(seed)
        self.vocabulary = [pseudo_word(self.rng) for _ in range(SYNTHETIC_VOCABULARY)]
        self.weights = [1 / (rank + 1) for rank in range(len(self.vocabulary))]
        # The same draws as choices(..., weights) makes, without summing the weights again for every note.
        self.cum_weights = list(itertools.accumulate(self.weights))

    def words(self, low: int, high: int) -> str:
        return " ".join(self.rng.choices(self.vocabulary, cum_weights=self.cum_weights, k=self.rng.randint(low, high)))

    def note(self) -> tuple[str, str, str, str]:
        """(title, body, wing, hall)"""
        return self.words(2, 6), self.words(40, 200), self.rng.choice(SYNTHETIC_WINGS), self.rng.choice(SYNTHETIC_HALLS)

    def query(self) -> str:
        return " ".join(self.rng.choices(self.vocabulary[:5000], k=self.rng.randint(1, 4)))


def store_synthetic_notes(
    corpus: SyntheticCorpus, count: int, *, progress: Callable[[int], object] | None = None
) -> None:
    """`count` wiki notes straight through bulk_create (scratch databases only), logged as one bulk change."""
    batch = []
    for i in range(count):
        title, body, wing, hall = corpus.note()
        note = Note(
            slug=f"n-{i}",
            title=title,
            body=body,
            status=NoteStatus.WIKI,
            wing=wing,
            hall=hall,
            path=f"wiki/{wing}/{hall}/n-{i}.md",
            source="eval",
        )
        # bulk_create skips the actions: give the note the content hash an action would.
        note.content_hash = note.compute_hash()
        batch.append(note)
        if len(batch) >= 2000:
            Note.objects.bulk_create(batch)
            batch = []
            if progress:
                progress(i + 1)
    Note.objects.bulk_create(batch)
    bump_brain_version()
