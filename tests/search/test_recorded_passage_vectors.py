"""The passage vectors recorded beside the frozen corpora (tests/fakes/passage_vectors.py) are the real encoder's.

The tests that answer from tests/fixtures/docs-brain and tests/fixtures/click-docs-excerpt start with what the
passage reader read of them before. A file that misses a passage (passages cut differently since) or whose rows
differ from the encoder's now would make those tests read something else than a brain does: written again with

    RECORD_PASSAGE_VECTORS=1 .venv/bin/python -m pytest tests/search/test_recorded_passage_vectors.py
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from brain import passage_reader
from brain.models import Note
from hyperguild.lib import minilm
from tests.fakes import passage_vectors
from tests.search.test_docs_brain import DOCS_BRAIN, docs_brain  # noqa: F401 (a fixture)
from tests.search.test_projects_excerpt import EXCERPT, click_brain  # noqa: F401 (a fixture)

SAMPLE = 24  # rows encoded again and compared


def check(corpus, notes: list[Note]) -> None:
    path = corpus / passage_vectors.FILE_NAME
    if passage_vectors.recording():
        passage_vectors.write(path, notes)
    recorded = passage_vectors.load(path)
    texts = passage_vectors.corpus_texts(notes)
    missing = [text for text in texts if passage_reader.digest(text) not in recorded]
    assert not missing, f"{len(missing)} of {len(texts)} passages not in {path}: record again ({__doc__})"
    sample = random.Random(45).sample(texts, min(SAMPLE, len(texts)))
    now = minilm.load_encoder().encode(sample)
    then = np.stack([recorded[passage_reader.digest(text)] for text in sample])
    assert np.allclose(now, then, atol=1e-5), f"{path} is not what the encoder reads now: record again"
    assert len(recorded) == len(texts), f"{path} holds passages its corpus no longer has: record again"


@pytest.mark.usefixtures("docs_brain")
def test_the_vectors_recorded_for_the_copy_of_docs_hold_every_passage_as_the_encoder_reads_it():
    check(DOCS_BRAIN, list(Note.objects.order_by("id")))


@pytest.mark.usefixtures("click_brain")
def test_the_vectors_recorded_for_clicks_pages_hold_every_passage_as_the_encoder_reads_it():
    check(EXCERPT, list(Note.objects.order_by("id")))
