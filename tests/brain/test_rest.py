"""REST endpoints over real HTTP: same token as /mcp/brain, JSON errors a user can act on."""

from __future__ import annotations

import httpx
import pytest

from brain.models import Note, NoteLink
from tests.brain.conftest import AUTH
from tests.conftest import rest_error

pytestmark = pytest.mark.django_db(transaction=True)


def post(base: str, path: str, payload, headers=AUTH) -> httpx.Response:
    return httpx.post(f"{base}{path}", json=payload, headers=headers, timeout=30)


def test_post_query_returns_the_expected_notes_with_filters(corpus, brain_server):
    base, _ = brain_server
    response = post(base, "/query", {"query": "event loop"})
    assert response.status_code == 200, response.text
    assert {hit["slug"] for hit in response.json()["hits"]} == {"asyncio-event-loop", "paper-on-event-loops"}
    filtered = post(base, "/query", {"query": "event loop", "wing": "sources"}).json()
    assert [hit["slug"] for hit in filtered["hits"]] == ["paper-on-event-loops"]
    hall = post(base, "/query", {"query": "python lock", "hall": "python"}).json()
    assert [hit["slug"] for hit in hall["hits"]] == ["gil"]
    raw = post(base, "/query", {"query": "event loop", "status": "raw"}).json()
    assert [hit["slug"] for hit in raw["hits"]] == ["raw-idea-about-event-loops"]
    assert raw["count"] == 1 and raw["degraded"] is False


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"query": ""}, "query"),
        ({"query": "   "}, "query"),
        ({}, "query"),
        ({"query": "x", "limit": 0}, "limit"),
        ({"query": "x", "limit": 51}, "limit"),
        ({"query": "x", "status": "deleted"}, "status"),
    ],
)
def test_post_query_refuses_bad_input_with_a_json_error(brain_server, payload, field):
    base, _ = brain_server
    response = post(base, "/query", payload)
    assert response.status_code == 400
    assert field in rest_error(response)["details"]


def test_post_write_creates_a_raw_note(brain_server):
    base, _ = brain_server
    response = post(
        base, "/write", {"title": "From REST", "body": "hi [[there]]", "frontmatter": {"k": "v"}, "session_id": "s1"}
    )
    assert response.status_code == 201, response.text
    assert response.json()["slug"] == "from-rest" and response.json()["status"] == "raw"
    note = Note.objects.get(slug="from-rest")
    assert (note.source, note.session_id, note.frontmatter) == ("rest", "s1", {"k": "v"})


def test_post_ingest_goes_into_the_wiki_or_into_raw(brain_server):
    base, _ = brain_server
    wiki = post(base, "/ingest", {"title": "Spec", "body": "text", "wing": "sources", "hall": "specs"})
    assert wiki.status_code == 201 and wiki.json()["path"] == "wiki/sources/specs/spec.md"
    raw = post(base, "/ingest", {"title": "Draft", "body": "text", "raw": True})
    assert raw.status_code == 201 and raw.json()["status"] == "raw"


@pytest.mark.parametrize(
    ("path", "payload", "message"),
    [
        ("/write", {"title": "t", "body": "b", "slug": "../x"}, "'..'"),
        ("/write", {"title": "t", "body": "b", "slug": "/x"}, "absolute"),
        ("/write", {"title": "t", "body": "b", "frontmatter": ["a"]}, "mapping"),
        ("/write", {"title": "t", "body": "b", "frontmatter": "a: 1"}, "mapping"),
        ("/write", {"title": "t", "body": "y" * 2000}, "BRAIN_MAX_NOTE_BYTES"),
        ("/write", {"title": "", "body": "b"}, "title"),
        ("/write", {"body": "b"}, "title"),
        ("/ingest", {"title": "t", "body": "b"}, "wing is required"),
        ("/ingest", {"title": "t", "body": "b", "wing": "Bad Wing"}, "wing"),
    ],
)
def test_bad_writes_are_refused_and_write_nothing(brain_server, settings, path, payload, message):
    base, _ = brain_server
    settings.BRAIN_MAX_NOTE_BYTES = 1024
    response = post(base, path, payload)
    assert response.status_code == 400
    assert message in rest_error(response)["message"]
    assert Note.objects.count() == 0 and NoteLink.objects.count() == 0


def test_get_note_returns_the_whole_note_and_404_names_the_way_out(corpus, brain_server):
    base, _ = brain_server
    response = httpx.get(f"{base}/notes/gil", headers=AUTH)
    assert response.status_code == 200
    assert response.json()["links_in"][0]["source_slug"] == "asyncio-event-loop"
    missing = httpx.get(f"{base}/notes/concepts/none", headers=AUTH)
    assert missing.status_code == 404 and "POST /query" in rest_error(missing)["message"]
    assert rest_error(missing)["code"] == "not_found"


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic abc"}])
def test_rest_needs_the_brain_token(corpus, brain_server, headers):
    base, _ = brain_server
    before = Note.objects.count()
    for method, path, payload in [
        ("post", "/query", {"query": "event"}),
        ("post", "/write", {"title": "t", "body": "b"}),
        ("post", "/ingest", {"title": "t", "body": "b", "wing": "concepts"}),
        ("get", "/notes/gil", None),
    ]:
        response = httpx.request(method, f"{base}{path}", json=payload, headers=headers, timeout=30)
        assert response.status_code == 401, (path, response.text)
        assert response.headers["WWW-Authenticate"].startswith("Bearer")
        rest_error(response)
    assert Note.objects.count() == before
