"""A question in German names every noun with a capital letter (issue 45, "Anyone's project").

brain_answer's name rule (`brain.search.unknown_names`) takes a capitalised word inside a sentence for the name of
a thing ("Celery", "Dockerfile"): a question naming a thing no note mentions is not answered. A German team's
brain answered 4 of 14 German questions about its own notes: "Schleife", "Methoden", "Dateien" were taken for
names because the notes spell them another way ("Schleifen"). In German only a capital inside a word ("PyYAML",
"GitHub") or a digit marks a name.
"""

from __future__ import annotations

import pytest

from brain import bm25
from brain.actions import do_ingest_note
from brain.answers import MIN_PASSAGE_COVERAGE, NOTHING_FOUND, answer, distinctive_coverage
from brain.language import capitalises_nouns
from brain.models import Note
from brain.passages import stopword_terms
from brain.search import unknown_names

NOTES = [
    (
        "Fortschritt",
        "# Fortschritt\n\nWie zeige ich den Fortschritt an? Mit `track()` zeigst du den Fortschritt einer langen "
        "Schleife im Terminal an.\n",
    ),
    (
        "Tabellen",
        "# Tabellen\n\nEine Tabelle mit Spalten und Zeilen gibst du mit der Klasse `Table` aus.\n",
    ),
    (
        "Protokoll",
        "# Protokoll\n\nDie Methode `log()` schreibt die Zeit und die Zeile des Aufrufs vor jede Ausgabe.\n",
    ),
]


@pytest.fixture
def german_brain(db, extractive_answers):
    for title, body in NOTES:
        do_ingest_note(title=title, body=body, wing="team", source="test")
    yield


def test_german_questions_are_told_from_english_ones():
    assert capitalises_nouns("Wie zeige ich den Fortschritt für lange Schleifen an?")
    assert capitalises_nouns("Welche Methode schreibt die Zeit vor jede Ausgabe?")
    assert not capitalises_nouns("How do I set an environment variable for all build steps in a Dockerfile?")
    assert not capitalises_nouns("Can the command run the tests of a Python package as a Celery task?")


def test_a_german_noun_the_notes_spell_another_way_is_not_a_name(german_brain):
    question = "Wie zeige ich den Fortschritt für lange Schleifen an?"
    assert unknown_names(question, bm25.current_index()) == []

    result = answer(question)

    assert "track()" in result["answer"], result


def test_in_german_a_word_with_a_capital_inside_is_still_a_name(german_brain):
    question = "Wie lese ich den Fortschritt aus einer Datei mit PyYAML?"
    assert unknown_names(question, bm25.current_index()) == ["PyYAML"]

    result = answer(question)

    assert result["answer"] == NOTHING_FOUND
    assert result["reason"] == "Nothing relevant: no note mentions `PyYAML`, which the question names."


def test_an_english_question_to_the_same_brain_keeps_the_rule(german_brain):
    assert unknown_names("How do I show progress in a Celery task?", bm25.current_index()) == ["Celery"]


def test_a_german_question_in_a_mostly_english_brain_is_not_answered_by_its_function_words(german_brain):
    """Beside 5,183 English abstracts, "Wie backe ich ein Sauerteigbrot mit Roggenmehl?" was answered from a German
    README: "wie", "ich", "ein", "mit" are no English stopwords, and in a brain of English notes they looked rare."""
    for number in range(12):
        do_ingest_note(
            title=f"Assay {number}",
            body=f"Assay {number} measured the binding of protein {number} to its receptor in cultured cells.",
            wing="lab",
            source="test",
        )
    question = "Wie backe ich ein Brot mit Hefe?"
    assert stopword_terms(question) >= {"wie", "ich", "ein", "mit"}
    # The German notes hold "wie", "ich", "mit": no evidence that they answer it (0.34 of its weight before).
    german = list(Note.objects.filter(wing="team"))
    assert distinctive_coverage(question, german) < MIN_PASSAGE_COVERAGE

    result = answer(question)

    assert result["answer"] == NOTHING_FOUND
    # A German question about the notes is still answered.
    assert "track()" in answer("Wie zeige ich den Fortschritt für lange Schleifen an?")["answer"]
