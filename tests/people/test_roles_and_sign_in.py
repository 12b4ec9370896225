"""Acceptance 2: people sign in on hyperguild's own page; each role reaches what it should, and 403 beyond."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from brain.models import Note, NoteRevision, NoteStatus
from people.models import PersonalToken
from sessions.models import TrainingExample
from tests.conftest import call_tool
from tests.people.conftest import bearer, make_person
from tests.ui.conftest import make_example, make_raw_note, make_wiki_note

pytestmark = pytest.mark.django_db

PASSWORD = "pw-for-tests-123"


def signed_in(username: str) -> Client:
    """A browser that signed in through the login form (a real POST, CSRF checked)."""
    browser = Client(enforce_csrf_checks=True)
    page = browser.get(reverse("hyperguild-login"))
    assert page.status_code == 200 and 'id="login-form"' in page.content.decode()
    response = browser.post(
        reverse("hyperguild-login"),
        {
            "username": username,
            "password": PASSWORD,
            "next": "/review/",
            "csrfmiddlewaretoken": page.cookies["csrftoken"].value,
        },
    )
    assert response.status_code == 302 and response["Location"] == "/review/", response.content[:500]
    return browser


def csrf_post(browser: Client, url: str, data: dict):
    token = browser.cookies["csrftoken"].value
    return browser.post(url, {**data, "csrfmiddlewaretoken": token})


def test_a_reader_signs_in_reads_and_searches_and_gets_403_on_promote(settings):
    settings.BRAIN_EMBEDDER = "off"
    make_person("rita", "reader", password=PASSWORD)
    note, wiki = (
        make_raw_note(title="Raw about vacuum"),
        make_wiki_note(title="Vacuum reclaims tuples", body="Vacuum reclaims dead tuples."),
    )
    browser = signed_in("rita")
    assert browser.get("/review/").status_code == 200
    assert "Raw about vacuum" in browser.get(reverse("brain-note", args=[note.pk])).content.decode()
    found = browser.get(reverse("brain-search"), {"q": "vacuum tuples"}).content.decode()
    assert "Vacuum reclaims tuples" in found
    assert 'id="roles">reader<' in browser.get("/review/").content.decode()

    promote = csrf_post(
        browser,
        reverse("brain-promote", args=[note.pk]),
        {"wing": "concepts", "hall": "", "title": "T", "slug": "t", "body": "B", "version": note.version},
    )
    assert promote.status_code == 403
    assert "brain.review_note" in promote.content.decode()
    note.refresh_from_db()
    assert note.status == NoteStatus.RAW and NoteRevision.objects.count() == 0
    # A JSON view answers 403 in the JSON error shape.
    preview = csrf_post(browser, reverse("brain-merge-render", args=[note.pk]), {"into": wiki.slug, "body": "x"})
    assert preview.status_code == 403 and preview.json()["error"]["code"] == "permission_denied"
    # The action forms are not even shown.
    assert 'id="promote-form"' not in browser.get(reverse("brain-note", args=[note.pk])).content.decode()


def test_a_reviewer_promotes_and_the_revision_names_them():
    reviewer = make_person("rob", "reviewer", password=PASSWORD)
    note = make_raw_note(title="Use advisory locks")
    browser = signed_in("rob")
    response = csrf_post(
        browser,
        reverse("brain-promote", args=[note.pk]),
        {
            "wing": "concepts",
            "hall": "",
            "title": "Use advisory locks",
            "slug": "advisory-locks",
            "body": note.body,
            "version": note.version,
        },
    )
    assert response.status_code == 302, response.content[:500]
    note.refresh_from_db()
    assert note.status == NoteStatus.WIKI and note.reviewed_by == reviewer
    revision = NoteRevision.objects.get(note=note)
    assert revision.action == NoteRevision.Action.PROMOTE and revision.user == reviewer
    page = browser.get(reverse("brain-note", args=[note.pk])).content.decode()
    assert "by rob" in page
    # A reviewer is not a curator.
    example = make_example("sft")
    assert csrf_post(browser, reverse("sessions-training-approve", args=[example.pk]), {}).status_code == 403
    example.refresh_from_db()
    assert example.status == TrainingExample.Status.CANDIDATE


def test_a_curator_approves_training_data_but_does_not_review_notes():
    curator = make_person("cora", "curator", password=PASSWORD)
    example, note = make_example("sft"), make_raw_note()
    browser = signed_in("cora")
    assert csrf_post(browser, reverse("sessions-training-approve", args=[example.pk]), {}).status_code == 302
    example.refresh_from_db()
    assert example.status == TrainingExample.Status.APPROVED and example.reviewer == curator
    assert example.edits[-1]["by"] == "cora"
    assert csrf_post(browser, reverse("brain-reject", args=[note.pk]), {"reason": "no"}).status_code == 403
    assert Note.objects.get(pk=note.pk).status == NoteStatus.RAW


def test_a_wrong_password_does_not_sign_in_and_says_so():
    make_person("rita", "reader", password=PASSWORD)
    response = Client().post(reverse("hyperguild-login"), {"username": "rita", "password": "wrong-password"})
    assert response.status_code == 200 and "correct username and password" in response.content.decode()
    assert Client().get("/review/")["Location"].startswith("/login/?next=")


def test_the_tokens_page_makes_shows_once_and_revokes_a_token(asgi_server, settings, transactional_db):
    settings.BRAIN_MCP_TOKEN = "brain-env"
    settings.BRAIN_EMBEDDER = "off"
    make_person("tess", "reader", password=PASSWORD)
    browser = signed_in("tess")
    made = csrf_post(
        browser, reverse("hyperguild-tokens"), {"name": "laptop", "scopes": ["brain:read"], "expires_days": "30"}
    )
    assert made.status_code == 201
    page = made.content.decode()
    secret = page.split('<code id="new-token-value">')[1].split("</code>")[0]
    assert secret.startswith("hgp_")
    assert secret not in browser.get(reverse("hyperguild-tokens")).content.decode()  # shown once

    assert (
        call_tool(f"{asgi_server}/mcp/brain", "brain_query", {"query": "x"}, headers=bearer(secret))["isError"] is False
    )
    listing = browser.get(reverse("hyperguild-tokens")).content.decode()
    assert "laptop" in listing and "POST /mcp/brain" in listing  # the person's own recent activity

    token = PersonalToken.objects.get()
    other = make_person("mallory", password=PASSWORD)
    assert csrf_post(signed_in("mallory"), reverse("hyperguild-token-revoke", args=[token.pk]), {}).status_code == 404
    assert other.personal_tokens.count() == 0 and PersonalToken.objects.get().revoked_at is None
    assert csrf_post(browser, reverse("hyperguild-token-revoke", args=[token.pk]), {}).status_code == 302
    assert PersonalToken.objects.get().revoked_at is not None


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        ({"name": "", "scopes": ["brain:read"], "expires_days": "30"}, "This field is required"),
        ({"name": "x", "scopes": [], "expires_days": "30"}, "This field is required"),
        ({"name": "x", "scopes": ["brain:admin"], "expires_days": "30"}, "not one of the available choices"),
        ({"name": "x", "scopes": ["brain:read"], "expires_days": "5000"}, "not one of the available choices"),
    ],
)
def test_the_tokens_page_refuses_bad_input_and_makes_nothing(data, problem):
    make_person("tess", password=PASSWORD)
    response = csrf_post(signed_in("tess"), reverse("hyperguild-tokens"), data)
    assert response.status_code == 400 and problem in response.content.decode()
    assert PersonalToken.objects.count() == 0
