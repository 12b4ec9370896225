"""In a large brain a question's words are weighed among the notes of the wing that answers too (issue 45).

Beside 5,183 science abstracts, "What openssl req command creates a self-signed certificate valid for one year?"
was answered from httpx's page on SSL: "certificate" and "TLS" are rare among the abstracts, so the page held most
of the question's weight, while "creates", "valid" and "year", which the abstracts use and the page does not, weighed
little. Among httpx's own pages it is the other way round, as in a brain of its docs alone, where the question had
no answer.
"""

from __future__ import annotations

import pytest

from brain.actions import do_ingest_note
from brain.answers import NOTHING_FOUND, WING_NOTES, answer, distinctive_coverage, question_weights
from brain.models import Note

# An HTTP client's docs: every page talks about TLS, certificates, clients and requests.
TOPICS = (
    "Timeouts, Proxies, Redirects, Cookies, Authentication, Streaming, Retries, Connection pools, HTTP/2, Event hooks, "
    "Transports, Async clients, Limits, Headers, Query parameters, Uploads, Encodings, Logging, Environment variables, "
    "Exceptions, Testing, Compression"
).split(", ")
SSL_PAGE = """# SSL

When making a request over HTTPS the client verifies the server's TLS certificate against a bundle of trusted
certificates.

To accept a self-signed certificate in development, pass `verify="dev-ca.pem"` with the certificate that signed it.

A client certificate for mutual TLS is loaded into an SSL context with `load_cert_chain(certfile, keyfile)`.
"""
# Science abstracts: they use the question's other words ("creates", "valid", "one year") and never "certificate".
ABSTRACTS = [
    "A one year follow-up of {n} patients creates a valid cohort for measuring bone density after treatment.",
    "Each year the registry creates a valid record of {n} births; one in ten records is checked by hand.",
    "The assay was valid for one year of storage at -80 degrees; freezing creates no loss of {n} markers.",
    "Over one year, {n} mice were followed; the model creates valid estimates of tumour growth each month.",
]


def ingest_abstracts(templates: list[str], count: int = 60) -> None:
    """`count` science abstracts in the wing "lab", the templates in turn."""
    for number in range(count):
        do_ingest_note(
            title=f"Study {number}",
            body=templates[number % len(templates)].format(n=100 + number),
            wing="lab",
            source="test",
        )


@pytest.fixture
def large_brain(db, extractive_answers):
    for topic in TOPICS:
        do_ingest_note(
            title=topic,
            body=f"# {topic}\n\n{topic} apply to every request the client sends, over plain HTTP or over TLS, where "
            "the server's certificate is verified first.",
            wing="http",
            source="test",
        )
    do_ingest_note(title="SSL", body=SSL_PAGE, wing="http", slug="ssl", source="test")
    ingest_abstracts(ABSTRACTS)
    yield


def test_a_question_is_weighed_among_the_notes_of_the_wing_that_would_answer_it(large_brain):
    question = "What openssl req command creates a self-signed certificate valid for one year?"
    ssl = list(Note.objects.filter(slug="ssl"))
    assert Note.objects.filter(wing="http").count() >= WING_NOTES

    result = answer(question)

    assert result["answer"] == NOTHING_FOUND and result["sources"] == [], result["answer"]
    assert distinctive_coverage(question, ssl) < 0.25
    # Weighed among the HTTP pages, "certificate" is a word most of them use; "creates", "valid" and "year" are
    # words none of them uses.
    weights = question_weights(question, "http")
    assert weights["certif"] < weights["valid"] and weights["certif"] < weights["year"]
    # What the SSL page says is still answered from it.
    answered = answer("How do I load a client certificate for mutual TLS into the SSL context?")
    assert "load_cert_chain" in answered["answer"]


def test_a_small_wing_and_a_wing_without_notes_are_weighed_among_all_the_notes(large_brain):
    question = "What openssl req command creates a self-signed certificate valid for one year?"
    do_ingest_note(title="Notes", body="One note of its own.", wing="small", source="test")
    everyone = question_weights(question, "")  # no note is in the wing "": the brain's weights
    assert question_weights(question, "nowhere") == everyone
    assert question_weights(question, "small") == everyone
    assert question_weights(question, "http") != everyone


# A German team's README, my own words (bench/projects/rich-de is the real one).
GERMAN_README = """# Rich

Rich ist eine Python-Bibliothek für farbigen Text und schöne Formatierung im Terminal.

Rich läuft unter Linux, macOS und Windows. Echte Farben und Emoji funktionieren mit dem neuen Windows-Terminal; das
klassische Terminal kennt nur 16 Farben.

## Tabellen

Rich stellt Tabellen mit Spalten und Unicode-Rahmen im Terminal dar: erstellen Sie eine Tabelle mit `Table()` und
fügen Sie Spalten mit `add_column` hinzu. Wie ich finde, ist das ein gutes Beispiel für eine einfache Tabelle.

## Projekte mit Rich

- [StarCli](https://github.com/hedythedev/starcli): GitHub-Trends in der Kommandozeile durchsuchen.
"""
# English abstracts that use two of the off-topic question's words in their own sense.
LAB_ABSTRACTS = [
    "The extracellular matrix of {n} tissue samples was stained; its actions on cell growth were measured.",
    "Drug actions in {n} patients were followed for a year; a matrix of doses and outcomes was built.",
]


def test_a_german_question_is_weighed_among_its_wing_however_small_beside_english_notes(db, extractive_answers):
    """Beside 5,183 English abstracts, "Wie richte ich eine Matrix in GitHub Actions ein?" was answered from a German
    README (bench/projects/rich-de: 6 of 10 German off-topic questions abstained): every German word is rare among
    English notes, and "matrix" and "actions" are common there, so the README's "GitHub" held a third of the
    question's weight. In a brain of the README alone it holds a tenth, and the question has no answer; now it has
    none beside the abstracts either."""
    do_ingest_note(title="Rich", body=GERMAN_README, wing="rich-de", slug="rich-de", source="test")
    ingest_abstracts(LAB_ABSTRACTS)
    question = "Wie richte ich eine Matrix in GitHub Actions ein?"
    readme = list(Note.objects.filter(slug="rich-de"))
    assert Note.objects.filter(wing="rich-de").count() < WING_NOTES

    result = answer(question)
    assert result["answer"] == NOTHING_FOUND and "holds 25%" in result["reason"], result
    assert distinctive_coverage(question, readme) < 0.25
    weights = question_weights(question, "rich-de")
    assert weights["github"] < weights["matrix"]  # among the README's notes: the word it holds weighs least
    # What the README says is still answered from it, and an English question is weighed as before.
    assert "add_column" in answer("Wie zeige ich eine Tabelle mit Spalten im Terminal an?")["answer"]
    english = "What openssl req command creates a self-signed certificate valid for one year?"
    assert question_weights(english, "rich-de") == question_weights(english, "")
