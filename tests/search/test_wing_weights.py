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
    for number in range(60):
        do_ingest_note(
            title=f"Study {number}",
            body=ABSTRACTS[number % len(ABSTRACTS)].format(n=100 + number),
            wing="lab",
            source="test",
        )
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
