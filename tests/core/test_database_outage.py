"""Issue 17 problem 6: with the database unreachable, REST answers 503 JSON with Retry-After, the UI a
friendly 503 page, MCP a clean tool error; no socket path or SQL reaches the client, the log keeps the detail.

The outage is real: the connection is pointed at a socket directory where no server listens.
"""

from __future__ import annotations

import json
import logging

import pytest
from django.db import connection
from django.test import Client

pytestmark = pytest.mark.django_db(transaction=True)

TOKEN = "outage-token"
DEAD_SOCKET_DIR = "/nonexistent/hyperguild-db-down"


@pytest.fixture
def database_down(settings):
    from brain import bm25

    settings.BRAIN_MCP_TOKEN = TOKEN
    settings.BRAIN_EMBEDDER = "off"
    bm25.reset()
    saved = dict(connection.settings_dict)

    def down() -> None:
        connection.close()
        connection.settings_dict["HOST"] = DEAD_SOCKET_DIR
        connection.settings_dict["PORT"] = "5432"

    yield down
    connection.close()
    connection.settings_dict.clear()
    connection.settings_dict.update(saved)
    bm25.reset()


def assert_clean(text: str) -> None:
    assert DEAD_SOCKET_DIR not in text and ".s.PGSQL" not in text and "SELECT" not in text, text


def test_rest_answers_503_json_with_retry_after_and_no_socket_path(database_down, caplog):
    client = Client(raise_request_exception=False)
    database_down()
    caplog.set_level(logging.ERROR, logger="hyperguild.http")
    for path, payload in [("/query", {"query": "x"}), ("/write", {"title": "t", "body": "b"})]:
        response = client.post(path, payload, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
        assert response.status_code == 503, (path, response.content[:300])
        assert response["Retry-After"] == "5"
        error = response.json()["error"]
        assert error["code"] == "unavailable" and response["X-Request-Id"] in error["message"]
        assert_clean(response.content.decode())
    response = client.get("/notes/some-note", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 503 and response["Content-Type"].startswith("application/json")
    # The log keeps the detail under the request id the client got.
    assert any(
        DEAD_SOCKET_DIR in record.getMessage() and response["X-Request-Id"] in record.getMessage()
        for record in caplog.records
    )


def test_the_ui_answers_a_friendly_503_page(database_down, django_user_model):
    user = django_user_model.objects.create_user("staff", password="pw-123456", is_staff=True)
    client = Client(raise_request_exception=False)
    client.force_login(user)
    database_down()
    response = client.get("/review/")
    assert response.status_code == 503
    assert response["Retry-After"] == "5"
    page = response.content.decode()
    assert "back shortly" in page and response["X-Request-Id"] in page
    assert_clean(page)


def test_mcp_answers_a_clean_tool_error(database_down):
    client = Client(raise_request_exception=False)
    database_down()
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "brain_get", "arguments": {"slug": "x"}},
    }
    response = client.post(
        "/mcp/brain", json.dumps(message), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {TOKEN}"
    )
    assert response.status_code == 200
    result = response.json()["result"]
    assert result["isError"] is True and "could not reach the database" in result["content"][0]["text"]
    assert_clean(response.content.decode())


def test_health_reports_the_outage_without_the_socket_path(database_down):
    client = Client(raise_request_exception=False)
    database_down()
    response = client.get("/health")
    assert response.status_code == 503 and response.json()["database"]["ok"] is False
    assert_clean(response.content.decode())
