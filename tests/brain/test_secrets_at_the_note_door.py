"""Secrets never enter the brain (issue 28, problem 2): one redaction pass at the note door, whatever the writer.

The four kinds an attacker tried: an AWS access key id, an `sk-…` API key, a GitHub `ghp_…` token and
a PEM private key. Written through MCP, REST, the edit form, an import or the mirror, none of them is
stored (title, slug, body, frontmatter), indexed or exported; the note says a secret was removed.
"""

from __future__ import annotations

import io
from pathlib import Path

import httpx
import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client

from brain.actions import do_edit_note, do_promote_note, do_write_raw_note
from brain.folder import import_folder, sync_mirror
from brain.models import AreaDescription, Note
from tests.brain.conftest import AUTH
from tests.conftest import call_tool

AWS = "AKIAIOSFODNN7EXAMPLE"
OPENAI = "sk-proj-4f9Qx2LmT8vBn3RkZp7WcY1d"
GITHUB = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEowIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM2v1pR0eCzX4kq3E3nL2sE6W8b9Qx\n"
    "-----END RSA PRIVATE KEY-----"
)
SECRETS = [AWS, OPENAI, GITHUB, "MIIEowIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM2v1pR0eCzX4kq3E3nL2sE6W8b9Qx"]
BODY = f"Deploy with\n\n    aws key {AWS}\n    openai {OPENAI}\n    github {GITHUB}\n\n{PEM}\n"


def assert_no_secret(text: str) -> None:
    for secret in SECRETS:
        assert secret.lower() not in text.lower(), f"{secret[:12]}… is still there"


def stored_text(note: Note) -> str:
    note.refresh_from_db()
    return "\n".join([note.slug, note.title, note.body, str(note.frontmatter), note.path, str(note.revisions.values())])


def test_brain_write_of_the_four_kinds_stores_none_flags_the_note_and_the_review_page_says_so(db, tmp_path):
    note = do_write_raw_note(title=f"Deploy creds {AWS}", body=BODY, frontmatter={"token": GITHUB, "keys": [OPENAI]})
    assert_no_secret(stored_text(note))
    assert note.slug == "deploy-creds-redacted-aws-access-key"
    assert note.title == "Deploy creds [REDACTED:aws_access_key]"
    assert note.frontmatter == {"token": "[REDACTED:github_token]", "keys": ["[REDACTED:openai_key]"]}
    assert {(flag["field"], flag["pattern"]) for flag in note.redactions} == {
        ("title", "aws_access_key"),
        ("body", "aws_access_key"),
        ("body", "openai_key"),
        ("body", "github_token"),
        ("body", "private_key"),
        ("frontmatter", "github_token"),
        ("frontmatter", "openai_key"),
    }
    assert note.secret_removed

    out = io.StringIO()
    call_command("brain_export", str(tmp_path), "--no-progress", stdout=out, stderr=io.StringIO())
    exported = [path.read_text(encoding="utf-8") for path in Path(tmp_path).rglob("*.md")]
    assert exported and all("[REDACTED:" in text or "title:" in text for text in exported)
    assert_no_secret("\n".join(exported))

    reviewer = get_user_model().objects.create_user("reviewer", password="pw-reviewer-123", is_staff=True)
    client = Client()
    client.force_login(reviewer)
    page = client.get(f"/review/{note.pk}/").content.decode()
    assert 'id="secret-removed"' in page and "secret removed" in page
    assert "aws_access_key" in page and "private_key" in page
    assert_no_secret(page)


def test_an_explicit_slug_with_a_secret_in_any_case_is_cleaned(db):
    note = do_write_raw_note(title="creds", body="text", slug=f"deploy-{AWS.lower()}")
    assert note.slug == "deploy-redacted"
    assert note.redactions == [{"field": "slug", "pattern": "aws_access_key", "count": 1}]
    other = do_write_raw_note(title="creds", body="text", slug=f"ops/{OPENAI.lower()}")
    assert other.slug == "ops/redacted"


def test_edits_and_promotions_go_through_the_same_door(db):
    reviewer = get_user_model().objects.create_user("reviewer2", password="pw-reviewer-123", is_staff=True)
    note = do_write_raw_note(title="Clean note", body="nothing secret")
    assert not note.secret_removed
    note = do_edit_note(note, body=f"now with {GITHUB}", user=reviewer)
    assert "[REDACTED:github_token]" in note.body and note.secret_removed
    note = do_promote_note(
        note, reviewer=reviewer, wing="concepts", title=f"Promoted {OPENAI}", slug=f"key-{AWS.lower()}"
    )
    assert_no_secret(stored_text(note))
    assert {flag["field"] for flag in note.redactions} == {"body", "title", "slug"}


@pytest.mark.django_db(transaction=True)
def test_mcp_and_rest_writers_are_redacted_and_told_what_was_removed(brain_server):
    base, mcp_url = brain_server
    result = call_tool(mcp_url, "brain_write", {"title": f"creds {AWS}", "body": BODY}, AUTH)
    assert not result.get("isError"), result
    written = result["structuredContent"]
    assert {flag["pattern"] for flag in written["redactions"]} == {
        "aws_access_key",
        "openai_key",
        "github_token",
        "private_key",
    }
    assert_no_secret(str(result))
    ingest = call_tool(mcp_url, "brain_ingest", {"title": "wiki creds", "body": BODY, "wing": "ops"}, AUTH)
    assert ingest["structuredContent"]["redactions"]
    for path, payload in (
        ("/write", {"title": "rest creds", "body": BODY}),
        ("/ingest", {"title": "rest wiki", "body": BODY, "wing": "ops"}),
    ):
        response = httpx.post(f"{base}{path}", json=payload, headers=AUTH, timeout=30)
        assert response.status_code == 201, response.text
        assert response.json()["redactions"]
    for note in Note.objects.all():
        assert_no_secret(stored_text(note))
    found = call_tool(mcp_url, "brain_query", {"query": AWS, "status": "any"}, AUTH)
    assert_no_secret(str(found))
    got = call_tool(mcp_url, "brain_get", {"slug": written["slug"]}, AUTH)
    assert got["structuredContent"]["redactions"] and "[REDACTED:private_key]" in got["structuredContent"]["body"]


def test_a_wing_description_file_is_redacted_too(db, tmp_path):
    (tmp_path / "wiki" / "ops").mkdir(parents=True)
    (tmp_path / "wiki" / "ops" / "_index.md").write_text(f"---\ntitle: Ops {AWS}\n---\n{BODY}", encoding="utf-8")
    assert import_folder(tmp_path).errors == []
    description = AreaDescription.objects.get(wing="ops")
    assert_no_secret(f"{description.title}\n{description.body}\n{description.frontmatter}")


def test_an_imported_file_is_redacted_and_the_mirror_rewrites_the_file_on_disk(db, tmp_path):
    (tmp_path / "raw").mkdir()
    path = tmp_path / "raw" / "creds.md"
    path.write_text(f"---\ntitle: Creds\ntoken: {GITHUB}\n---\n{BODY}", encoding="utf-8")
    assert import_folder(tmp_path).errors == []
    assert_no_secret(stored_text(Note.objects.get(slug="creds")))
    assert import_folder(tmp_path).unchanged == 1  # importing twice changes nothing

    mirror = tmp_path / "mirror"
    (mirror / "raw").mkdir(parents=True)
    (mirror / "raw" / "keys.md").write_text(f"# Keys\n\n{BODY}", encoding="utf-8")
    summary = sync_mirror(mirror)
    assert summary.errors == []
    assert_no_secret((mirror / "raw" / "keys.md").read_text(encoding="utf-8"))
    assert "[REDACTED:aws_access_key]" in (mirror / "raw" / "keys.md").read_text(encoding="utf-8")
    again = sync_mirror(mirror)
    assert (again.added, again.updated, again.written) == (0, 0, 0)


def test_a_note_with_the_kinds_issue_35_found_is_stored_without_them(db):
    from tests.sessions.test_redaction import MISSED_KINDS

    body = "\n".join(f"- {secret}" for secret, _, _ in MISSED_KINDS)
    note = do_write_raw_note(title="Ops creds", body=body, frontmatter={"db": MISSED_KINDS[2][0]})
    stored = stored_text(note)
    assert not any(part in stored for _, _, part in MISSED_KINDS), stored
    assert {flag["pattern"] for flag in note.redactions} == {name for _, name, _ in MISSED_KINDS}
