"""A long page is ranked by the section that answers, not by words scattered over all of it (issue 45).

Documentation sites write long pages of many sections: a migration guide touches every subject once in passing, a
concepts page answers one question in one section. BM25 over the whole page favours the page that holds the
question's words most often anywhere; `brain.search` reorders BM25's candidates by their best section
(`brain.bm25.sections`), with the whole page's score as a tie-breaker.
"""

from __future__ import annotations

import pytest

from brain import bm25
from brain.actions import do_ingest_note
from brain.search import rank_notes, search

FILLER = (
    "This paragraph is here to make the section as long as a real one: it talks about releases, about the "
    "changelog and about the contributors who helped with this part of the library over the years."
)


def scattered_guide() -> str:
    """A migration guide: every word of the question, in a different section each time, twice over."""
    words = ["instances", "shared", "mutable", "default", "list"]
    sections = []
    for round_ in range(2):
        for word in words:
            sections.append(f"## Changes to {word} handling, part {round_ + 1}\n\nThe {word} behaviour moved. {FILLER}")
    return "# Migration guide\n\n" + "\n\n".join(sections)


FIELDS_PAGE = (
    "# Fields\n\n"
    + "\n\n".join(
        f"## {name}\n\n{FILLER} {FILLER}"
        for name in ("Aliases", "Constraints", "Descriptions", "Examples", "Discriminators", "Exclusion")
    )
    + "\n\n## Mutable default values\n\n"
    "A list given as a field's default is copied for each new object, so two instances never see a mutable "
    "default shared between them.\n\n"
    + "\n\n".join(f"## {name}\n\n{FILLER} {FILLER}" for name in ("Strictness", "Frozen fields", "Deprecation"))
)

OTHERS = [
    ("Models", "A model is a class whose annotated attributes are validated when an object is created."),
    ("Validators", "A validator is a function that checks or transforms a value before or after parsing."),
    ("Serialization", "Dumping a model turns it into a dict or a JSON string, with options to exclude keys."),
    ("JSON schema", "Every model can describe itself as a JSON schema document for other tools."),
    ("Errors", "A validation error lists every problem with its location, type and message."),
    ("Configuration", "Settings such as strict mode are given on the model's configuration dictionary."),
]
QUESTION = "Do instances end up sharing one mutable default list?"


@pytest.fixture
def docs_brain(db, settings):
    settings.BRAIN_EMBEDDER = "off"
    settings.BRAIN_BM25_FLOOR = 0.25
    settings.BRAIN_BM25_ALONE_FLOOR = 0.40
    bm25.reset()
    do_ingest_note(title="Migration guide", body=scattered_guide(), wing="docs", slug="migration", source="test")
    do_ingest_note(title="Fields", body=FIELDS_PAGE, wing="docs", slug="fields", source="test")
    for title, body in OTHERS:
        do_ingest_note(title=title, body=body, wing="docs", source="test")
    yield
    bm25.reset()


def test_the_page_with_the_answering_section_ranks_first(docs_brain):
    # The whole-page BM25 alone prefers the guide, which holds each word twice, in ten sections.
    whole_page = rank_notes(QUESTION, depth=10, rankers=("bm25",), sections=False)
    slugs = dict((note.id, note.slug) for note in __import__("brain.models", fromlist=["Note"]).Note.objects.all())
    assert [slugs[note_id] for note_id, _, _ in whole_page.fused][:1] == ["migration"]
    # By its best section, the fields page answers.
    assert [hit.slug for hit in search(QUESTION, limit=3).hits][:1] == ["fields"]


def test_a_page_of_one_section_keeps_its_place(docs_brain):
    # Short notes without headings are one section each: their order is BM25's.
    assert [hit.slug for hit in search("a validation error lists every problem", limit=3).hits][:1] == ["errors"]


def test_an_edited_page_is_ranked_by_its_new_sections(docs_brain):
    from brain.actions import do_edit_note
    from brain.models import Note

    assert [hit.slug for hit in search(QUESTION, limit=3).hits][:1] == ["fields"]  # its sections are cached now
    fields = Note.objects.get(slug="fields")
    answer = FIELDS_PAGE[FIELDS_PAGE.index("## Mutable default values") : FIELDS_PAGE.index("## Strictness")]
    do_edit_note(fields, body=FIELDS_PAGE.replace(answer, f"## Copies\n\n{FILLER}\n\n"))
    assert [hit.slug for hit in search(QUESTION, limit=3).hits][:1] == ["migration"]


def test_the_section_cache_is_bounded(monkeypatch):
    from collections import Counter

    from brain.bm25 import sections

    sections.forget()
    monkeypatch.setattr(sections, "SECTION_CACHE_TERMS", 10)
    for note_id in range(5):
        sections.remember_sections(note_id, "h", [(Counter({f"t{i}": 1 for i in range(4)}), 4)])
    assert sections.cached_sections(0, "h") is None  # the oldest went first
    assert sections.cached_sections(4, "h") is not None
    assert sum(len(c) for parts in sections._cache.values() for c, _ in parts) <= 10
    sections.forget()
