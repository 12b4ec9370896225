"""The brain MCP tools and resources, through the official MCP client and plain JSON-RPC over real HTTP."""

from __future__ import annotations

import threading

import anyio
import httpx2
import pytest
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client

from brain.models import Note, NoteLink
from tests.brain.conftest import AUTH, BRAIN_TOKEN
from tests.conftest import call_tool, mcp_post, rpc

pytestmark = pytest.mark.django_db(transaction=True)

EXPECTED_TOOLS = {
    "brain_query": (
        {"query", "limit", "wing", "hall", "status", "include_raw", "tags", "include_superseded"},
        ["query"],
    ),
    "brain_get": ({"slug"}, ["slug"]),
    "brain_write": ({"title", "body", "frontmatter", "slug", "session_id", "anchors"}, ["title", "body"]),
    "brain_ingest": ({"title", "body", "wing", "hall", "frontmatter", "slug", "anchors"}, ["title", "body", "wing"]),
    "brain_ingest_raw": ({"title", "body", "frontmatter", "slug", "session_id", "anchors"}, ["title", "body"]),
    # issue 28: change, archive, undo and list existing notes
    "brain_edit": ({"slug", "version", "title", "body", "frontmatter"}, ["slug", "version"]),
    "brain_archive": ({"slug", "version", "reason"}, ["slug", "version"]),
    "brain_undo": ({"change"}, ["change"]),
    # issue 38: knowledge that stays true
    "brain_verify": ({"slug"}, ["slug"]),
    "brain_supersede": ({"slug", "by", "reason"}, ["slug", "by", "reason"]),
}


def with_client(url: str, scenario):
    async def run():
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {BRAIN_TOKEN}"}) as http:
            async with Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
                return await scenario(client)

    return anyio.run(run)


def test_the_tool_contract_is_pinned(brain_server):
    _, url = brain_server
    listed = mcp_post(url, rpc("tools/list"), AUTH).json()["result"]["tools"]
    tools = {tool["name"]: tool for tool in listed}
    for name, (arguments, required) in EXPECTED_TOOLS.items():
        assert set(tools[name]["inputSchema"]["properties"]) == arguments, name
        assert tools[name]["inputSchema"]["required"] == required, name
        assert tools[name]["inputSchema"]["additionalProperties"] is False
    for name in ("brain_query", "brain_get"):
        assert tools[name]["annotations"]["readOnlyHint"] is True
    for name in ("brain_write", "brain_ingest", "brain_ingest_raw"):
        annotations = tools[name]["annotations"]
        assert (annotations["readOnlyHint"], annotations["idempotentHint"], annotations["destructiveHint"]) == (
            False,
            False,
            False,
        )
    assert tools["brain_query"]["inputSchema"]["properties"]["status"]["enum"] == [
        "raw",
        "wiki",
        "rejected",
        "archived",
        "any",
    ]


def test_brain_query_through_the_official_client_finds_notes_and_filters(corpus, brain_server):
    _, url = brain_server

    async def scenario(client):
        plain = await client.call_tool("brain_query", {"query": "event loop"})
        python_only = await client.call_tool(
            "brain_query", {"query": "event loop", "wing": "concepts", "hall": "python"}
        )
        raw_only = await client.call_tool("brain_query", {"query": "event loop", "status": "raw"})
        anything = await client.call_tool("brain_query", {"query": "event loop", "status": "any", "limit": 50})
        vacuum = await client.call_tool("brain_query", {"query": "dead tuples vacuum", "limit": 1})
        return plain, python_only, raw_only, anything, vacuum

    plain, python_only, raw_only, anything, vacuum = with_client(url, scenario)
    assert plain.is_error is False
    slugs = [hit["slug"] for hit in plain.structured_content["hits"]]
    assert set(slugs) == {"asyncio-event-loop", "paper-on-event-loops"}
    assert [hit["slug"] for hit in python_only.structured_content["hits"]] == ["asyncio-event-loop"]
    assert [hit["slug"] for hit in raw_only.structured_content["hits"]] == ["raw-idea-about-event-loops"]
    assert {hit["slug"] for hit in anything.structured_content["hits"]} == set(slugs) | {"raw-idea-about-event-loops"}
    top = vacuum.structured_content["hits"][0]
    assert (top["slug"], top["wing"], top["hall"], top["status"]) == (
        "postgresql-vacuum",
        "concepts",
        "databases",
        "wiki",
    )
    assert "dead tuples" in top["excerpt"] and top["rankers"] == {"bm25": 1}
    assert vacuum.structured_content["degraded"] is False


def test_the_index_is_built_once_and_a_write_is_applied_without_a_rebuild(corpus, brain_server):
    from brain import bm25

    _, url = brain_server
    call_tool(url, "brain_query", {"query": "vacuum"}, AUTH)
    builds, tokenised = bm25.stats.full_builds, bm25.stats.tokenised
    call_tool(url, "brain_query", {"query": "coroutines"}, AUTH)
    assert bm25.stats.full_builds == builds
    call_tool(url, "brain_ingest", {"title": "Autovacuum", "body": "autovacuum tuning", "wing": "concepts"}, AUTH)
    found = call_tool(url, "brain_query", {"query": "autovacuum"}, AUTH)["structuredContent"]
    assert bm25.stats.full_builds == builds
    assert bm25.stats.tokenised == tokenised + 1
    assert [hit["slug"] for hit in found["hits"]] == ["autovacuum"]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"query": ""}, "query"),
        ({"query": "   "}, "empty"),
        ({"query": "x", "limit": 0}, "limit"),
        ({"query": "x", "limit": 51}, "limit"),
        ({"query": "x", "status": "deleted"}, "status"),
    ],
)
def test_brain_query_refuses_bad_input(brain_server, arguments, message):
    _, url = brain_server
    result = call_tool(url, "brain_query", arguments, AUTH)
    assert result["isError"] is True
    assert message in result["content"][0]["text"]


def test_brain_write_puts_a_note_into_raw_with_frontmatter_and_session(brain_server):
    _, url = brain_server
    result = call_tool(
        url,
        "brain_write",
        {
            "title": "Retry flaky DB tests",
            "body": "Use [[pytest-rerun]].",
            "frontmatter": {"tags": ["tests"]},
            "session_id": "sess-9",
        },
        AUTH,
    )
    assert result["isError"] is False
    ref = result["structuredContent"]
    assert (ref["slug"], ref["status"], ref["path"], ref["uri"]) == (
        "retry-flaky-db-tests",
        "raw",
        "raw/retry-flaky-db-tests.md",
        "brain://note/retry-flaky-db-tests",
    )
    note = Note.objects.get(slug="retry-flaky-db-tests")
    assert (note.frontmatter, note.session_id, note.source) == ({"tags": ["tests"]}, "sess-9", "mcp")
    assert NoteLink.objects.filter(source=note, target_slug="pytest-rerun", target__isnull=True).exists()


@pytest.mark.parametrize(
    ("tool", "arguments", "message"),
    [
        ("brain_write", {"title": "t", "body": "b", "slug": "../etc/passwd"}, "'..'"),
        ("brain_write", {"title": "t", "body": "b", "slug": "/etc/passwd"}, "absolute"),
        ("brain_write", {"title": "t", "body": "b", "frontmatter": ["not", "a", "mapping"]}, "frontmatter"),
        ("brain_write", {"title": "t", "body": "b", "frontmatter": "title: x"}, "frontmatter"),
        ("brain_write", {"title": "t", "body": "x" * 2048}, "BRAIN_MAX_NOTE_BYTES"),
        ("brain_write", {"title": "", "body": "b"}, "title"),
        ("brain_write", {"title": "t", "body": "   "}, "body is empty"),
        ("brain_ingest", {"title": "t", "body": "b", "wing": "Not A Wing"}, "wing"),
        ("brain_ingest_raw", {"title": "t", "body": "b", "slug": "a/../b"}, "'..'"),
    ],
)
def test_bad_writes_get_a_clear_error_and_write_nothing(brain_server, settings, tool, arguments, message):
    _, url = brain_server
    settings.BRAIN_MAX_NOTE_BYTES = 1024
    result = call_tool(url, tool, arguments, AUTH)
    assert result["isError"] is True
    assert message in result["content"][0]["text"]
    assert Note.objects.count() == 0
    assert NoteLink.objects.count() == 0


def test_brain_ingest_goes_into_the_wiki_and_brain_ingest_raw_into_raw(brain_server):
    _, url = brain_server
    wiki = call_tool(
        url, "brain_ingest", {"title": "RFC 9110", "body": "HTTP semantics", "wing": "sources", "hall": "rfcs"}, AUTH
    )
    raw = call_tool(url, "brain_ingest_raw", {"title": "RFC 9111", "body": "HTTP caching"}, AUTH)
    assert wiki["structuredContent"]["path"] == "wiki/sources/rfcs/rfc-9110.md"
    assert raw["structuredContent"]["status"] == "raw"


def test_brain_get_returns_the_whole_note_with_links_in_and_out(corpus, brain_server):
    _, url = brain_server
    call_tool(url, "brain_write", {"title": "Pending", "body": "links to [[not-yet]]"}, AUTH)
    got = call_tool(url, "brain_get", {"slug": "gil"}, AUTH)["structuredContent"]
    assert got["title"] == "The GIL" and got["wing"] == "concepts"
    assert got["links_in"] == [
        {
            "source_slug": "asyncio-event-loop",
            "source_title": "Asyncio event loop",
            "kind": "wikilink",
            "resolved": True,
        }
    ]
    outgoing = call_tool(url, "brain_get", {"slug": "asyncio-event-loop"}, AUTH)["structuredContent"]["links_out"]
    assert outgoing == [
        {
            "target_slug": "gil",
            "kind": "wikilink",
            "resolved": True,
            "target_title": "The GIL",
            "resolved_slug": "gil",
            "ambiguous": [],
        }
    ]
    pending = call_tool(url, "brain_get", {"slug": "pending"}, AUTH)["structuredContent"]["links_out"]
    assert pending == [
        {
            "target_slug": "not-yet",
            "kind": "wikilink",
            "resolved": False,
            "target_title": None,
            "resolved_slug": None,
            "ambiguous": [],
        }
    ]
    missing = call_tool(url, "brain_get", {"slug": "nope"}, AUTH)
    assert missing["isError"] is True and "brain_query" in missing["content"][0]["text"]


def test_sixteen_concurrent_writes_with_the_same_title_all_get_distinct_slugs(brain_server):
    _, url = brain_server
    results: list[dict] = []
    errors: list[BaseException] = []
    start = threading.Barrier(16)

    def write(i: int) -> None:
        try:
            start.wait()
            results.append(
                call_tool(url, "brain_write", {"title": "Same title", "body": f"body {i}"}, AUTH, request_id=i)
            )
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []
    assert [result["isError"] for result in results] == [False] * 16
    slugs = {result["structuredContent"]["slug"] for result in results}
    assert len(slugs) == 16
    assert set(Note.objects.values_list("slug", flat=True)) == slugs
    assert sorted(Note.objects.values_list("body", flat=True)) == sorted(f"body {i}" for i in range(16))


def test_wiki_notes_are_resources_listed_in_pages_and_read_as_markdown(corpus, brain_server):
    _, url = brain_server
    first = mcp_post(url, rpc("resources/list"), AUTH).json()["result"]
    uris = [item["uri"] for item in first["resources"]]
    while "nextCursor" in first:
        first = mcp_post(url, rpc("resources/list", {"cursor": first["nextCursor"]}), AUTH).json()["result"]
        uris += [item["uri"] for item in first["resources"]]
    assert uris == [
        "brain://note/asyncio-event-loop",
        "brain://note/gil",
        "brain://note/paper-on-event-loops",
        "brain://note/postgresql-vacuum",
    ]  # fmt: skip  (raw notes are not resources)
    read = mcp_post(url, rpc("resources/read", {"uri": "brain://note/gil"}), AUTH).json()["result"]
    assert read["contents"] == [
        {
            "uri": "brain://note/gil",
            "mimeType": "text/markdown",
            "text": "---\ntitle: The GIL\n---\nThe global interpreter lock serialises Python bytecode.",
        }
    ]
    missing = mcp_post(url, rpc("resources/read", {"uri": "brain://note/raw-idea-about-event-loops"}), AUTH).json()
    assert missing["error"]["code"] == -32002
    templates = mcp_post(url, rpc("resources/templates/list"), AUTH).json()["result"]["resourceTemplates"]
    assert templates[0]["uriTemplate"] == "brain://note/{slug}"


def test_resources_list_paginates(brain_server):
    from brain.actions import do_ingest_note

    _, url = brain_server
    for i in range(120):
        do_ingest_note(title=f"Page note {i:03d}", body="x", wing="concepts")
    seen, cursor, pages = [], None, 0
    while True:
        params = {"cursor": cursor} if cursor else {}
        page = mcp_post(url, rpc("resources/list", params), AUTH).json()["result"]
        seen += [item["name"] for item in page["resources"]]
        pages += 1
        cursor = page.get("nextCursor")
        if not cursor:
            break
    assert pages > 1
    assert seen == sorted(seen) and len(seen) == len(set(seen)) == 120


def test_the_brain_endpoint_refuses_calls_without_the_token(brain_server):
    _, url = brain_server
    assert (
        mcp_post(url, rpc("tools/call", {"name": "brain_write", "arguments": {"title": "t", "body": "b"}})).status_code
        == 401
    )
    wrong = mcp_post(
        url,
        rpc("tools/call", {"name": "brain_write", "arguments": {"title": "t", "body": "b"}}),
        {"Authorization": "Bearer nope"},
    )
    assert wrong.status_code == 401
    assert Note.objects.count() == 0
