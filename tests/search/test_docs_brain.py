"""A small real brain: this project's own docs, imported as a plain folder, asked what users ask.

tests/fixtures/docs-brain/ is a frozen copy of docs/*.md and README.md (18 notes), imported with
`brain_import` as any team's folder of markdown would be. BM25 alone (the embedder off), no LLM: the
answer is extractive. Each in-domain question names the words of the passage that answers it; the
test first checks those words are in the fixture, so a phrase cannot pass by being absent everywhere.
The figures are printed (and written into bench/RESULTS.md).
"""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from django.core.management import call_command

from brain import bm25
from brain.answers import NOTHING_FOUND, answer
from brain.context import context
from brain.search import search
from sessions.hooks import context_text
from tests.fakes import passage_vectors

DOCS_BRAIN = Path(__file__).resolve().parents[1] / "fixtures" / "docs-brain"

# (question, phrases of the passage that answers it: any one of them)
IN_DOMAIN = [
    (
        "What happens when two reviewers promote notes with the same title?",
        ["another reviewer promotes at the same moment", "safe under concurrent writes"],
    ),
    (
        "How does the supervisor check a tdd_red run?",
        ["runs the tests itself: they must **fail**", "runs your test command to check that it fails"],
    ),
    ("Which BM25 parameters does search use?", ["k1 0.9, b 0.4"]),
    (
        "How do I run hyperguild against my own PostgreSQL?",
        ["set `DATABASE_URL` to use your own", "`DATABASE_URL=postgres://…` to a PostgreSQL"],
    ),
    ("How do I install the Claude Code plugin?", ["claude plugin install hyperguild@hyperguild"]),
    (
        "What do the routing floor and ceiling mean?",
        ["at or above `HYPERGUILD_ROUTE_LOCAL_FLOOR` → `HYPERGUILD_FAST_MODEL`"],
    ),
    (
        "How do I see who promoted a note?",
        ["writes a `NoteRevision`: who, when, the action", "username of the person who last reviewed it"],
    ),
    ("What does brain_context return?", ["At session start: the wiki notes"]),
    (
        "What happens to a secret written into a note?",
        [
            "a secret becomes `[REDACTED:<pattern>]`",
            "one redaction pass at the door",
            "are replaced by [REDACTED:<kind>]",
            "When the mirror imports a file with a secret, it writes the redacted note",
        ],
    ),
    ("How do I replay a training example?", ["**Replay now** queues `trainer_verify`", "`manage.py trainer_verify"]),
]
OFF_DOMAIN = [
    "How do I center a div in CSS?",
    "Who won the 1998 football World Cup?",
    "How long do I boil an egg?",
    "What is the difference between TCP and UDP?",
    "How do I train for a marathon?",
    "What is the tallest mountain in Africa?",
    "How do I write a haiku?",
    "What is photosynthesis?",
    "How do I repot a cactus?",
    "What year did the Berlin Wall fall?",
]
REQUIRED = 8


def folded(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture
def docs_brain(db, settings):
    settings.BRAIN_EMBEDDER = "off"
    settings.BRAIN_ANSWER_MODEL = ""
    settings.BRAIN_RERANKER_URL = ""
    settings.BRAIN_BM25_FLOOR = 0.20  # the defaults, whatever the environment says
    settings.BRAIN_BM25_ALONE_FLOOR = 0.40
    bm25.reset()
    out = io.StringIO()
    call_command("brain_import", str(DOCS_BRAIN), "--no-progress", stdout=out, stderr=io.StringIO())
    assert "18 file(s) imported as wiki notes under wing 'docs-brain'" in out.getvalue()
    passage_vectors.preload(DOCS_BRAIN)  # what the passage reader read of this copy before (tests/fakes/)
    yield
    bm25.reset()


def test_every_expected_phrase_is_in_the_frozen_docs():
    fixture = folded(" ".join(path.read_text(encoding="utf-8") for path in sorted(DOCS_BRAIN.glob("*.md"))))
    assert len(list(DOCS_BRAIN.glob("*.md"))) == 18
    for question, phrases in IN_DOMAIN:
        for phrase in phrases:
            assert folded(phrase) in fixture, (question, phrase)


def test_the_extractive_answer_holds_the_passage_that_answers(docs_brain):
    held, first = [], []
    for question, phrases in IN_DOMAIN:
        result = answer(question)
        assert result["synthesized"] is False and result["sources"]
        text = folded(result["answer"])
        if any(folded(phrase) in text for phrase in phrases):
            held.append(question)
        if any(folded(phrase) in folded(result["answer"].split("\n\n[")[0]) for phrase in phrases):
            first.append(question)
    print(f"docs brain: {len(held)}/10 answers hold the passage that answers, {len(first)}/10 quote it first")
    print("  missed:", [question for question, _ in IN_DOMAIN if question not in held])
    assert len(held) >= REQUIRED


def test_off_domain_questions_abstain(docs_brain):
    abstained, search_abstained = [], []
    for question in OFF_DOMAIN:
        response = search(question)
        result = answer(question)
        if response.abstained:  # search finding nothing is no answer …
            assert result["answer"] == NOTHING_FOUND and response.reason.startswith("Nothing relevant")
            search_abstained.append(question)
        if result["answer"] == NOTHING_FOUND:  # … and brain_answer has gates of its own (a name, a passage)
            assert result["sources"] == [] and (result.get("reason") or response.reason).startswith("Nothing relevant")
            abstained.append(question)
    print(
        f"docs brain: {len(abstained)}/10 off-domain questions get no answer; search lists nothing for "
        f"{len(search_abstained)}/10"
    )
    print("  answered:", [question for question in OFF_DOMAIN if question not in abstained])
    assert len(search_abstained) >= REQUIRED and len(abstained) >= len(search_abstained)


def test_an_unrelated_folder_gets_no_session_start_context(docs_brain):
    assert context("/home/someone/src/unrelated-app")["entries"] == []
    assert context_text("unrelated-app") == ""


def test_the_projects_own_context_lines_quote_passages_not_headings_or_comments(docs_brain):
    text = context_text("hyperguild")
    lines = [line for line in text.splitlines() if line.startswith("- ")]
    assert lines
    for line in lines:
        quoted = re.split(r"\) (?:\[[^\]]*\])?: |\): ", line, maxsplit=1)[
            1
        ]  # after "- Title (slug) [state]: " (no state: issue 45)
        assert not quoted.startswith("#") and "<!--" not in line, line
    # The notes are found by what they say, not only the title (search finds the project in them all).
    assert search("hyperguild").hits
