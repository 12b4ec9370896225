"""Issue 45: what a writer cites that is not in the project's code is said to the writer at once, in the result of
the write (MCP brain_write, brain_ingest, brain_edit; REST /write and /ingest), and shown on the note (brain_get).

A live server over real HTTP; the project's code is a real git repository.
"""

from __future__ import annotations

import httpx
import pytest

from brain.models import Note
from tests.conftest import call_tool
from tests.people.conftest import bearer, make_person, token_for

pytestmark = pytest.mark.django_db(transaction=True)

BODY = "Invoices are sent by `send_invoce` after `invoice_total` in `ledgerly/invoices.py`."


def test_the_write_result_names_each_anchor_that_is_not_in_the_projects_code(live, ledgerly):
    make_person("rita", "reviewer")
    token = bearer(token_for("rita", "brain:read", "brain:write"))
    mcp = f"{live}/mcp/brain"
    said = f"`send_invoce` is not in ledgerly at {ledgerly.first[:7]}"

    written = call_tool(
        mcp,
        "brain_write",
        {"title": "Sending invoices", "body": BODY, "frontmatter": {"project": "ledgerly"}},
        headers=token,
    )
    assert written["isError"] is False, written
    assert written["structuredContent"]["unresolved"] == [said]
    ingested = call_tool(
        mcp,
        "brain_ingest",
        {"title": "Sending invoices", "body": BODY, "wing": "concepts", "frontmatter": {"project": "ledgerly"}},
        headers=token,
    )
    assert ingested["structuredContent"]["unresolved"] == [said]
    slug = ingested["structuredContent"]["slug"]

    got = call_tool(mcp, "brain_get", {"slug": slug}, headers=token)["structuredContent"]
    assert got["verification"]["unresolved"] == [said] and got["verification"]["state"] == "verified"

    edited = call_tool(
        mcp,
        "brain_edit",
        {"slug": slug, "version": got["version"], "body": BODY.replace("send_invoce", "send_invoice_now")},
        headers=token,
    )
    assert edited["isError"] is False, edited
    assert edited["structuredContent"]["unresolved"] == [said.replace("send_invoce", "send_invoice_now")]
    fixed = call_tool(
        mcp,
        "brain_edit",
        {
            "slug": slug,
            "version": edited["structuredContent"]["version"],
            "body": "Invoice totals come from `invoice_total`.",
        },
        headers=token,
    )
    assert fixed["structuredContent"]["unresolved"] == []

    rest = httpx.post(
        f"{live}/write",
        json={"title": "Sending invoices", "body": BODY, "frontmatter": {"project": "ledgerly"}},
        headers=token,
        timeout=30,
    )
    assert rest.status_code == 201, rest.text
    assert rest.json()["unresolved"] == [said]
    rest = httpx.post(
        f"{live}/ingest",
        json={"title": "Sending invoices", "body": BODY, "wing": "concepts", "frontmatter": {"project": "ledgerly"}},
        headers=token,
        timeout=30,
    )
    assert rest.status_code == 201 and rest.json()["unresolved"] == [said], rest.text
    assert Note.objects.get(slug=rest.json()["slug"]).verification_state == "verified"


def test_a_note_page_shows_what_it_cites_that_is_not_in_the_code(live, ledgerly, client):
    from brain.actions import do_ingest_note

    note = do_ingest_note(title="Sending invoices", body=BODY, wing="concepts", frontmatter={"project": "ledgerly"})
    client.force_login(make_person("rita", "reviewer"))

    page = client.get(f"/review/{note.pk}/")

    assert page.status_code == 200
    assert f"`send_invoce` is not in ledgerly at {ledgerly.first[:7]}" in page.content.decode()
