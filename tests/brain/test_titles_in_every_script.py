"""Titles in every script, and no bidi tricks (issue 28, problem 7): the same rules through MCP, REST, forms, import.

A right-to-left override in a title makes "invoice\u202egpj.exe" show as "invoiceexe.jpg"; the
brain takes bidi controls out of titles. Slugs are transliterated from any script, so Cyrillic and
CJK titles get readable slugs and a Cyrillic look-alike inside a Latin word keeps its letter.
"""

from __future__ import annotations

import httpx
import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from brain.actions import do_write_raw_note
from brain.errors import BrainInputError
from brain.folder import import_folder
from brain.models import Note
from brain.slugs import slugify_path, slugify_title
from tests.brain.conftest import AUTH
from tests.conftest import call_tool

RLO_TITLE = "invoice\u202egpj.exe"
CASES = [
    (RLO_TITLE, "invoicegpj.exe", "invoicegpj-exe"),
    ("Привет мир", "Привет мир", "privet-mir"),
    ("P\u043estgres tuning", "P\u043estgres tuning", "postgres-tuning"),  # a Cyrillic о in a Latin word
    ("日本語のメモ", "日本語のメモ", "ribenyunomemo"),
    ("\u2067Isolated\u2069 and \u200fmarked\u200e", "Isolated and marked", "isolated-and-marked"),
]


@pytest.mark.parametrize(("title", "stored", "slug"), CASES)
def test_the_write_action_strips_bidi_controls_and_transliterates_the_slug(db, title, stored, slug):
    note = do_write_raw_note(title=title, body="text")
    assert (note.title, note.slug) == (stored, slug)


def test_a_title_of_only_bidi_controls_is_refused_and_nothing_is_written(db):
    with pytest.raises(BrainInputError, match="title is empty"):
        do_write_raw_note(title="\u202e\u202d", body="text")
    assert not Note.objects.exists()


def test_an_explicit_slug_with_a_bidi_control_is_refused_and_nothing_is_written(db):
    with pytest.raises(BrainInputError, match="bad segment"):
        do_write_raw_note(title="Invoice", body="text", slug="invoice\u202egpj-exe")
    assert not Note.objects.exists()


def test_slugs_and_wikilinks_transliterate_the_same_way():
    assert slugify_title("Café Déjà Vu: Straße!") == "cafe-deja-vu-strasse"
    assert slugify_title("Ελληνικά σημειώσεις") == "ellinika-simeioseis"
    assert slugify_path("Концепции/P\u043estgres") == "kontseptsii/postgres"
    assert slugify_title("\u202e\u202d") == "note"  # nothing left: the fallback


@pytest.mark.django_db(transaction=True)
def test_mcp_and_rest_give_the_same_title_and_slug(brain_server):
    base, mcp_url = brain_server
    for title, stored, slug in CASES:
        result = call_tool(mcp_url, "brain_write", {"title": title, "body": "over MCP"}, AUTH)
        assert result["structuredContent"]["slug"] == slug, result
        response = httpx.post(f"{base}/write", json={"title": title, "body": "over REST"}, headers=AUTH, timeout=30)
        assert response.status_code == 201, response.text
        assert response.json()["slug"] == f"{slug}-2"
        assert Note.objects.get(slug=f"{slug}-2").title == stored


def test_the_edit_form_strips_bidi_controls_from_the_title(db):
    user = get_user_model().objects.create_user("reviewer", password="pw-reviewer-123", is_staff=True)
    client = Client()
    client.force_login(user)
    note = do_write_raw_note(title="Quarterly report", body="text")
    response = client.post(f"/review/{note.pk}/edit/", {"title": RLO_TITLE, "body": "text", "version": note.version})
    assert response.status_code == 302, response.content[:500]
    note.refresh_from_db()
    assert note.title == "invoicegpj.exe"
    assert "\u202e" not in client.get(f"/review/{note.pk}/").content.decode()


def test_import_strips_bidi_controls_from_titles_and_transliterates_file_names(db, tmp_path):
    (tmp_path / "raw").mkdir()
    (tmp_path / "raw" / "счёт.md").write_text(f"---\ntitle: {RLO_TITLE}\n---\nbody\n", encoding="utf-8")
    (tmp_path / "raw" / "P\u043estgres.md").write_text("# Pоstgres notes\n\nbody\n", encoding="utf-8")
    summary = import_folder(tmp_path)
    assert summary.errors == []
    assert sorted(Note.objects.values_list("slug", "title")) == [
        ("postgres", "Pоstgres notes"),
        ("schet", "invoicegpj.exe"),
    ]
