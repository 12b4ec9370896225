"""Every REST family asks for its endpoint's token the same way."""

from __future__ import annotations

import pytest

from tests.conftest import rest_error

pytestmark = pytest.mark.django_db

CASES = [
    ("post", "/query", {"query": "x"}, "BRAIN_MCP_TOKEN"),
    ("post", "/sessions/s-1/entries", {"kind": "note"}, "BRAIN_MCP_TOKEN"),
    ("get", "/routing/stats", None, "ROUTING_MCP_TOKEN"),
]


@pytest.mark.parametrize(("method", "path", "body", "setting"), CASES)
def test_no_token_is_401_naming_the_token_to_send(client, settings, method, path, body, setting):
    settings.BRAIN_MCP_TOKEN = settings.ROUTING_MCP_TOKEN = "s3cret"
    response = getattr(client, method)(path, body, content_type="application/json")
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert setting in rest_error(response)["message"]


@pytest.mark.parametrize(("method", "path", "body", "setting"), CASES)
def test_a_wrong_token_is_401_and_writes_nothing(client, settings, method, path, body, setting):
    from sessions.models import SessionEntry

    settings.BRAIN_MCP_TOKEN = settings.ROUTING_MCP_TOKEN = "s3cret"
    response = getattr(client, method)(path, body, content_type="application/json", HTTP_AUTHORIZATION="Bearer wrong")
    assert response.status_code == 401
    assert SessionEntry.objects.count() == 0
