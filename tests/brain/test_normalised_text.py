"""Issue 31, item 1: text written over REST and MCP is stored in the one normal form (plain line endings)."""

from __future__ import annotations

import httpx
import pytest

from brain.models import Note
from tests.brain.conftest import AUTH
from tests.conftest import call_tool

pytestmark = pytest.mark.django_db(transaction=True)


def test_text_written_over_rest_and_mcp_is_stored_with_plain_line_endings(brain_server):
    base, mcp = brain_server
    response = httpx.post(f"{base}/write", json={"title": "Rest", "body": "a\r\nb\r\n"}, headers=AUTH, timeout=30)
    assert response.status_code == 201, response.text
    result = call_tool(mcp, "brain_write", {"title": "Mcp", "body": "c\r\nd\r\n"}, headers=AUTH)
    assert not result.get("result", {}).get("isError"), result
    assert sorted(Note.objects.values_list("body", flat=True)) == ["a\nb\n", "c\nd\n"]
