"""What the reranker judges and the answer model reads of a long note: the passages that answer, not its opening
(issue 45). A project's reference page runs to tens of thousands of characters, and the answer to a question is
rarely in its first SOURCE_CHARS: with the opening alone the model was sent everything but the answer
(bench/projects.py, "in what an answer model reads": click 7/23 before, 20/23 after)."""

from __future__ import annotations

import pytest

from brain.answers import SOURCE_CHARS, source_text
from brain.models import Note
from tests.answers.conftest import ingest
from tests.conftest import call_tool
from tests.fakes.openai import FakeOpenAI, Reply
from tests.fakes.reranker import FakeReranker, document_of

pytestmark = pytest.mark.django_db(transaction=True)

ANSWER_MODEL = "answer-model"
ANSWER = "Pass `hide_input=True` to the prompt so the keystrokes are not echoed."
QUESTION = "How do I keep the keystrokes of a password prompt from being echoed?"


def long_body() -> str:
    """A reference page: sixteen sections about other things, then the one that answers QUESTION."""
    filler = [
        f"## Section {n}\n\n"
        + (
            f"The widget registry keeps widget number {n} in a table of its own, sorted by the order widgets were "
            "declared in, and a lookup walks that table from the top. "
        )
        * 3
        for n in range(16)
    ]
    answer = (
        "## Prompts\n\nA prompt asks the user for a value on the terminal.\n\n"
        + ANSWER
        + "\n\n```python\nname = prompt('Password', hide_input=True)\n```"
    )
    return "\n\n".join([*filler, answer, "## Afterword\n\nThat is all about widgets."])


@pytest.fixture
def long_note(transactional_db) -> Note:
    return ingest(
        [{"slug": "terminal-reference", "title": "Terminal reference", "wing": "concepts", "body": long_body()}]
    )["terminal-reference"]


def test_the_model_reads_the_passage_of_a_long_note_that_answers(long_note, brain_url, settings):
    assert len(long_note.body) > 3 * SOURCE_CHARS and long_note.body.index(ANSWER) > 2 * SOURCE_CHARS
    with FakeOpenAI() as gateway:
        settings.LITELLM_BASE_URL = gateway.url
        settings.LITELLM_API_KEY = "sk-test"
        settings.BRAIN_ANSWER_MODEL = ANSWER_MODEL
        gateway.on(ANSWER_MODEL, lambda request: Reply.text("Use hide_input=True [1].", model=ANSWER_MODEL))

        answer = call_tool(brain_url, "brain_answer", {"question": QUESTION})["structuredContent"]

        user = gateway.requests[0].body["messages"][1]["content"]
    assert answer["synthesized"] is True
    assert ANSWER in user
    assert "hide_input=True)\n```" in user  # the example the answer leads into, whole
    assert "…" in user  # where the page's other text was left out
    source = user.split("[1] Terminal reference (terminal-reference)\n", 1)[1].split("\n\nQuestion: ")[0]
    assert len(source) <= SOURCE_CHARS


def test_the_reranker_judges_the_passage_that_answers(long_note, brain_url, settings):
    # The reranker keeps a note only if what it is shown answers: shown the opening, it threw the page away.
    with FakeReranker(lambda prompt: "yes" if "hide_input" in document_of(prompt) else "no") as reranker:
        settings.BRAIN_RERANKER_URL = reranker.url
        settings.BRAIN_RERANKER_MODEL = "reranker"

        answer = call_tool(brain_url, "brain_answer", {"question": QUESTION})["structuredContent"]

    assert [source["slug"] for source in answer["sources"]] == ["terminal-reference"]
    assert "hide_input=True" in answer["answer"]


def test_a_short_note_is_read_whole_and_a_page_nothing_matches_from_its_opening(long_note):
    short = ingest([{"slug": "short", "title": "Short", "wing": "concepts", "body": "One line.\n\nAnother line."}])[
        "short"
    ]
    assert source_text(short, QUESTION) == "One line.\n\nAnother line."
    opening = source_text(long_note, "zebra quagga okapi")
    assert opening == long_note.body.strip()[:SOURCE_CHARS]


def test_a_passage_longer_than_the_room_is_cut_around_the_question_and_the_text_stays_bounded(transactional_db):
    code = "\n".join(f"value_{n} = prompt('Password {n}', hide_input=True)  # line {n}" for n in range(200))
    body = f"## Intro\n\nSomething else.\n\n## Prompts\n\nTo hide the password use this:\n\n```python\n{code}\n```\n\n## End\n\nBye."
    note = ingest([{"slug": "huge-example", "title": "Huge example", "wing": "concepts", "body": body}])["huge-example"]

    text = source_text(note, "How do I hide the password input?")

    assert len(body) > 5 * SOURCE_CHARS
    assert len(text) <= SOURCE_CHARS
    assert text.startswith("…\n\nTo hide the password use this:")  # the lead-in, then as much of the code as fits
    assert "hide_input=True" in text and "Something else" not in text
    assert text.endswith("…\n```\n\n…")  # the block cut short still closes its fence, then the rest left out


def test_the_model_reads_links_to_the_docs_as_their_text_and_code_as_is(transactional_db):
    """A model reads what an extractive answer quotes: a link to another section, `[*before*](#before-hooks)`, as its
    text (its target means nothing to it and takes its room), a link to the web with its address, code untouched."""
    filler = "\n\n".join(f"## Part {n}\n\nA paragraph about something else entirely, number {n}." for n in range(60))
    answer_part = (
        "## Order\n\nStacked hooks run in a fixed order: [*before*](#before-hooks) and [*wrap*](#wrap-hooks) hooks run "
        "from last to first ([why](https://example.org/hook-order)), see [`Config`][shop.Config]:\n\n"
        "```python\nhooks = [h for h in table[0](request)]\n```"
    )
    body = f"{filler}\n\n{answer_part}"
    note = ingest([{"slug": "hooks", "title": "Hooks", "wing": "concepts", "body": body}])["hooks"]

    text = source_text(note, "In which order do stacked before and wrap hooks run?")

    assert len(body) > SOURCE_CHARS
    assert (
        "*before* and *wrap* hooks run from last to first ([why](https://example.org/hook-order)), see `Config`:"
        in text
    )
    assert "(#before-hooks)" not in text and "[shop.Config]" not in text
    assert "hooks = [h for h in table[0](request)]" in text
