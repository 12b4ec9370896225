"""A paraphrased question still finds its page in a small brain of docs (issue 45), BM25 alone.

A developer asks in their own words ("a per-user folder for my tool's settings file"); the page says it in its own
("the directory where your application can store its configuration file"). The page holds a fifth of the question's
idf weight and passes the evidence rule (it holds more of the question's words than no note holds); it stood below
the old share floor of a quarter, which cut it: search answered nothing. Off-topic questions in the same brain still
abstain (`test_small_brain_abstention.py`: their words are in no note, and the evidence rule stops them).
"""

from __future__ import annotations

import pytest

from brain import bm25, floors
from brain.actions import do_ingest_note
from brain.search import rank_notes, search
from tests.search.test_small_brain_abstention import CASING, README, TOPICS

# Pages that use the question's everyday words ("tool", "keep", "good", "set"), each in passing.
MORE = [
    ("Progress", "A progress bar is a good way to show a long loop."),
    ("Layout", "Larger programs keep one module for each command."),
    ("Formatting", "Help text is wrapped at an appropriate width for the terminal."),
    ("Exit codes", "A program returns one status code per kind of failure."),
    ("Build", "The build tool reads the project's metadata."),
]

APP_DIR = (
    "# Application directory\n\n"
    "You can get the directory where your application can store the user's settings with `get_app_dir()`, as a "
    "configuration file. "
    "It follows the conventions of each operating system: on Linux a hidden directory in the home directory, "
    "on Windows the roaming application data."
)
QUESTION = "Where is a good per-user, OS-appropriate folder for my tool to keep its settings file?"
OFF_TOPIC = [
    "How do I center a div with CSS?",
    "What is the capital of Australia?",
    "How do I renew a Let's Encrypt TLS certificate with certbot?",
    "How long should I boil an egg to keep the yolk runny?",
]


@pytest.fixture
def docs_brain(db, settings):
    settings.BRAIN_EMBEDDER = "off"  # the floors are the settings' defaults
    bm25.reset()
    do_ingest_note(title="README", body=README, wing="toolkit", slug="readme", source="test")
    do_ingest_note(title="Command names", body=CASING, wing="toolkit", slug="command-names", source="test")
    do_ingest_note(title="Application directory", body=APP_DIR, wing="toolkit", slug="app-dir", source="test")
    for title, body in TOPICS + MORE:
        do_ingest_note(title=title, body=body, wing="toolkit", source="test")
    yield
    bm25.reset()


def test_a_paraphrased_question_finds_its_page(docs_brain):
    index = bm25.current_index()
    app_dir = next(
        note_id for note_id, _, _ in rank_notes(QUESTION, depth=20, rankers=("bm25",), floor=floors.NO_FLOORS).fused
    )
    _, shares, _ = index.rank_with_evidence(bm25.tokenize(QUESTION), limit=20)
    assert 0.20 <= shares[app_dir] < 0.25  # a fifth of the question, not a quarter: the old floor cut it
    response = search(QUESTION, limit=3)
    assert [hit.slug for hit in response.hits][:1] == ["app-dir"], response.reason


@pytest.mark.parametrize("question", OFF_TOPIC)
def test_off_topic_questions_still_abstain(docs_brain, question):
    response = search(question)
    assert response.abstained, [hit.slug for hit in response.hits]
