"""Issue 17 problems 3, 5, 7 and 8: hostile input gets a clear JSON error, never an HTML 500, and writes nothing.

In-process through Django's test client (the whole middleware stack and URLconf), which is
what a live server runs too; the bad-Host and surrogate-URL cases go over real HTTP.
"""

from __future__ import annotations

import json
import logging

import httpx
import pytest
from django.test import Client

from brain.models import Note
from hyperguild.lib.limits import json_depth_exceeds, loads_limited
from sessions.models import SessionEntry
from tests.conftest import rest_error

pytestmark = pytest.mark.django_db

TOKEN = "door-token"
AUTH = {"HTTP_AUTHORIZATION": f"Bearer {TOKEN}"}
DEEP = b"[" * 10_000 + b"]" * 10_000
DEEP_OBJECT = b'{"a":' * 10_000 + b"1" + b"}" * 10_000


@pytest.fixture
def client(settings) -> Client:
    from brain import bm25

    settings.BRAIN_MCP_TOKEN = TOKEN
    settings.BRAIN_EMBEDDER = "off"
    bm25.reset()
    yield Client()
    bm25.reset()


def mcp(client: Client, message, endpoint: str = "brain"):
    body = message if isinstance(message, bytes) else json.dumps(message).encode()
    return client.post(
        f"/mcp/{endpoint}",
        body,
        content_type="application/json",
        HTTP_ACCEPT="application/json, text/event-stream",
        **AUTH,
    )


def call(client: Client, tool: str, arguments: dict, request_id=1) -> dict:
    response = mcp(
        client,
        {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {"name": tool, "arguments": arguments}},
    )
    assert response.status_code in (200, 400), response.content
    return response.json()


def strict_json(text: bytes):
    """What a strict client (any JSON parser but Python's default) accepts: no NaN, no Infinity."""
    return json.loads(text, parse_constant=lambda name: pytest.fail(f"answer holds {name}"))


# -- problem 5: JSON depth, cursors, NUL and surrogates ---------------------------------------------


def test_the_depth_scan_ignores_brackets_inside_strings():
    assert not json_depth_exceeds(b'{"a": "[[[[[[[[[[[[[[[["}', 4)
    assert json_depth_exceeds(b"[[[[[]]]]]", 4)
    assert loads_limited(b'{"a": "[[[[[[[[[[[[[[[["}', 4) == {"a": "[[[[[[[[[[[[[[[["}


@pytest.mark.parametrize("body", [DEEP, DEEP_OBJECT])
def test_json_nested_ten_thousand_deep_is_a_400_json_parse_error_on_mcp(client, body):
    response = mcp(client, body)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == -32700 and "nested deeper than 64" in error["message"]
    assert response.json()["id"] is None


@pytest.mark.parametrize("path", ["/query", "/write", "/ingest", "/sessions/s-1/entries"])
def test_json_nested_ten_thousand_deep_is_a_400_json_error_on_every_rest_body(client, path):
    response = client.post(path, DEEP_OBJECT, content_type="application/json", **AUTH)
    assert response.status_code == 400, response.content[:300]
    assert "nested deeper than 64" in rest_error(response)["message"]
    assert Note.objects.count() == 0 and SessionEntry.objects.count() == 0


def test_a_resources_list_cursor_past_bigint_is_an_invalid_params_error(client):
    import base64

    for offset in (2**63, 10**40, -1):
        cursor = base64.urlsafe_b64encode(f"o:{offset}".encode()).decode()
        body = mcp(client, {"jsonrpc": "2.0", "id": 3, "method": "resources/list", "params": {"cursor": cursor}}).json()
        assert body["error"]["code"] == -32602 and "Invalid cursor" in body["error"]["message"], body


@pytest.mark.parametrize("uri", ["brain://note/a\x00b", "brain://note/\ud800"])
def test_a_nul_or_lone_surrogate_in_a_resources_read_uri_is_refused_clearly(client, uri):
    message = json.dumps({"jsonrpc": "2.0", "id": 4, "method": "resources/read", "params": {"uri": uri}})
    response = mcp(client, message.encode())
    assert response.status_code == 200
    body = response.json()
    assert body["id"] == 4 and body["error"]["code"] == -32602
    assert "params.uri contains" in body["error"]["message"]


def test_a_nul_in_get_notes_slug_is_a_400_json_error(client):
    response = client.get("/notes/a%00b", **AUTH)
    assert response.status_code == 400
    assert "NUL" in rest_error(response)["message"]


def test_a_lone_surrogate_in_get_notes_slug_over_http_is_a_400_not_a_500(asgi_server, settings, transactional_db):
    settings.BRAIN_MCP_TOKEN = TOKEN
    for raw in ("/notes/%ED%A0%80", "/notes/%C0%AF", "/notes/a%00b"):
        response = httpx.get(f"{asgi_server}{raw}", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=10)
        assert response.status_code in (400, 404), (raw, response.status_code, response.text[:200])
        assert response.headers["content-type"].startswith("application/json"), raw


# -- problem 7: NUL, surrogates, NaN never reach SQL; NaN ids never echoed ----------------------------


@pytest.mark.parametrize(
    ("tool", "arguments", "field"),
    [
        ("brain_write", {"title": "a\x00b", "body": "text"}, "params.arguments.title"),
        ("brain_write", {"title": "a\ud800b", "body": "text"}, "params.arguments.title"),
        ("brain_write", {"title": "t", "body": "x", "frontmatter": {"k\x00": 1}}, "params.arguments.frontmatter"),
        ("session_log", {"session_id": "s-1", "kind": "note", "message": "a\x00b"}, "params.arguments.message"),
        ("session_log", {"session_id": "s-1", "kind": "note", "data": {"x": "\udfff"}}, "params.arguments.data.x"),
    ],
)
def test_nul_and_lone_surrogates_in_tool_arguments_get_a_clear_error_and_write_nothing(client, tool, arguments, field):
    raw = json.dumps(
        {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
    )
    response = mcp(client, raw.encode())
    body = response.json()
    assert body["error"]["code"] == -32602, body
    message = body["error"]["message"]
    assert field in message and ("NUL" in message or "surrogate" in message), message
    assert "SQL" not in message and "LINE 1" not in message and "DataError" not in message
    assert Note.objects.count() == 0 and SessionEntry.objects.count() == 0


def test_nan_in_session_log_data_is_refused_before_any_sql(client):
    raw = (
        b'{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"session_log",'
        b'"arguments":{"session_id":"s-1","kind":"note","data":{"x":NaN}}}}'
    )
    response = mcp(client, raw)
    assert response.status_code == 400
    body = strict_json(response.content)
    assert body["error"]["code"] == -32700 and "NaN" in body["error"]["message"]
    assert SessionEntry.objects.count() == 0


@pytest.mark.parametrize("request_id", [b"NaN", b"Infinity", b"-Infinity"])
def test_a_nan_id_is_never_echoed_as_invalid_json(client, request_id):
    response = mcp(client, b'{"jsonrpc":"2.0","id":' + request_id + b',"method":"ping"}')
    assert response.status_code == 400
    body = strict_json(response.content)  # the answer itself is strict JSON
    assert body["id"] is None and body["error"]["code"] == -32700


def test_the_actions_refuse_nul_surrogates_and_nan_whatever_the_door():
    from brain.actions import do_write_raw_note
    from brain.errors import BrainError
    from sessions.actions import do_log_checked_entry
    from sessions.errors import EntryRefused

    with pytest.raises(BrainError, match="title contains a NUL"):
        do_write_raw_note(title="a\x00", body="b")
    with pytest.raises(BrainError, match="body contains a lone UTF-16 surrogate"):
        do_write_raw_note(title="a", body="\ud800")
    with pytest.raises(BrainError, match="frontmatter.x is nan"):
        do_write_raw_note(title="a", body="b", frontmatter={"x": float("nan")})
    with pytest.raises(EntryRefused, match="data.y is inf"):
        do_log_checked_entry("s-1", {"kind": "note", "data": {"y": float("inf")}}, source="rest")
    assert Note.objects.count() == 0 and SessionEntry.objects.count() == 0


def test_rest_refuses_nul_surrogates_and_nan_in_bodies(client):
    cases = [
        ("/write", b'{"title": "a\\u0000", "body": "b"}', "NUL"),
        ("/write", b'{"title": "a", "body": "\\ud800"}', "surrogate"),
        ("/sessions/s-1/entries", b'{"kind": "note", "data": {"x": NaN}}', "NaN"),
        ("/ingest", b'{"title": "a", "body": "b", "wing": "w\\u0000"}', "NUL"),
    ]
    for path, body, word in cases:
        response = client.post(path, body, content_type="application/json", **AUTH)
        assert response.status_code == 400, (path, response.content)
        assert word in rest_error(response)["message"], (path, response.content)
    assert Note.objects.count() == 0 and SessionEntry.objects.count() == 0


# -- problem 3: frontmatter caps at every door ----------------------------------------------------------


def nested(levels: int):
    value: object = "leaf"
    for _ in range(levels):
        value = {"k": value}
    return value


def test_deep_frontmatter_is_refused_by_brain_write_and_rest_write(client):
    result = call(client, "brain_write", {"title": "Deep", "body": "b", "frontmatter": nested(20)})["result"]
    assert result["isError"] is True
    assert "frontmatter nests 20 levels deep, over the limit of 16" in result["content"][0]["text"]
    response = client.post(
        "/write", {"title": "Deep", "body": "b", "frontmatter": nested(20)}, content_type="application/json", **AUTH
    )
    assert response.status_code == 400 and "over the limit of 16" in rest_error(response)["message"]
    big = {"k": "x" * 70_000}
    response = client.post(
        "/ingest",
        {"title": "Big", "body": "b", "wing": "concepts", "frontmatter": big},
        content_type="application/json",
        **AUTH,
    )
    assert response.status_code == 400 and "frontmatter is" in rest_error(response)["message"]
    assert Note.objects.count() == 0


def test_a_file_with_900_levels_of_frontmatter_is_reported_and_the_others_imported(tmp_path):
    from brain.folder import import_folder

    (tmp_path / "raw").mkdir()
    deep_yaml = "---\ndeep: " + "[" * 900 + "]" * 900 + "\n---\nbody\n"
    (tmp_path / "raw" / "deep.md").write_text(deep_yaml)
    (tmp_path / "raw" / "fine.md").write_text("---\ntitle: Fine\n---\nbody\n")
    summary = import_folder(tmp_path)
    assert summary.added == 1
    assert [name for name, _ in summary.errors] == ["raw/deep.md"]
    assert "nest" in summary.errors[0][1]


def test_export_and_mirror_report_a_bad_note_and_go_on(tmp_path, settings):
    from brain.actions import do_write_raw_note
    from brain.folder import export_folder, sync_mirror

    notes = [do_write_raw_note(title=f"Note {i}", body="b") for i in range(30)]
    # A note stored before the caps existed: frontmatter too deep for the YAML writer.
    deep = nested(700)
    Note.objects.filter(pk=notes[3].pk).update(frontmatter=deep)
    summary = export_folder(tmp_path / "export", sessions=False)
    assert summary.written == 29
    assert len(summary.errors) == 1 and "nested too deeply" in summary.errors[0][1]
    mirror = sync_mirror(tmp_path / "mirror")
    assert mirror.written == 29 and len(mirror.errors) == 1


def test_resources_read_of_a_note_with_too_deep_frontmatter_is_a_json_rpc_error(client):
    from brain.actions import do_ingest_note

    note = do_ingest_note(title="Deep wiki", body="b", wing="concepts")
    Note.objects.filter(pk=note.pk).update(frontmatter=nested(700))
    body = mcp(
        client, {"jsonrpc": "2.0", "id": 5, "method": "resources/read", "params": {"uri": f"brain://note/{note.slug}"}}
    ).json()
    assert body["error"]["code"] == -32603 and "request id" in body["error"]["message"]


# -- problem 8: body size and bad Host ---------------------------------------------------------------


def test_a_rest_body_over_the_limit_is_413_json(client, settings):
    body = json.dumps({"title": "t", "body": "x" * (3 * 1024 * 1024)}).encode()
    response = client.post("/write", body, content_type="application/json", **AUTH)
    assert response.status_code == 413
    assert "HYPERGUILD_REST_MAX_BODY" in rest_error(response)["message"]
    assert Note.objects.count() == 0


def test_an_mcp_body_over_the_limit_is_413_json(client, settings):
    response = mcp(client, b'{"x": "' + b"y" * (2 * 1024 * 1024) + b'"}')
    assert response.status_code == 413 and response.json()["error"]["code"] == -32600


def test_a_bad_host_is_400_json_without_a_traceback_or_a_log_flood(asgi_server, caplog, transactional_db):
    caplog.set_level(logging.DEBUG)
    for _ in range(25):
        response = httpx.post(f"{asgi_server}/query", json={"query": "x"}, headers={"Host": "evil.example"}, timeout=10)
        assert response.status_code == 400
        assert rest_error(response)["code"] == "bad_host"
    host_records = [
        record for record in caplog.records if "evil.example" in record.getMessage() or "Host" in record.getMessage()
    ]
    assert len(host_records) <= 1, [record.getMessage() for record in host_records]
    assert not any(record.exc_info for record in caplog.records)


def test_a_nul_in_a_ui_form_or_query_parameter_is_a_400_and_changes_nothing(django_user_model):
    from brain.actions import do_write_raw_note

    user = django_user_model.objects.create_user("staff", password="pw-123456", is_staff=True)
    note = do_write_raw_note(title="Keep me", body="b")
    ui = Client(raise_request_exception=False)
    ui.force_login(user)
    response = ui.post(f"/review/{note.pk}/reject/", {"reason": "bad\x00reason"})
    assert response.status_code == 400 and b"NUL" in response.content
    note.refresh_from_db()
    assert note.status == "raw"
    response = ui.get("/search/?q=a%00b")
    assert response.status_code == 400 and b"NUL" in response.content
