"""Routing request/response bodies are stored with secrets redacted, and the redactions are counted."""

from __future__ import annotations

import json

import pytest

from supervisor.models import RoutingEntry
from tests.conftest import call_tool
from tests.fakes.openai import Reply
from tests.routing.conftest import AUTH, GOOD_REVIEW, THINKING

pytestmark = pytest.mark.django_db(transaction=True)

AWS_KEY = "AKIAIOSFODNN7EXAMPLE"
SK_TOKEN = "sk-proj-" + "Q" * 30
PRIVATE_KEY = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----"


def test_a_routed_review_stores_request_and_response_redacted_and_flagged(gateway, project, asgi_server):
    with (project / "app.py").open("a") as handle:
        handle.write(f"\nAWS = '{AWS_KEY}'\nKEY = '''{PRIVATE_KEY}'''\n")
    answer = {**GOOD_REVIEW, "summary": f"add is wrong; and do not commit {SK_TOKEN}"}
    gateway.on(THINKING, lambda request: Reply.json(answer))

    arguments = {"project_root": str(project), "paths": ["app.py"], "session_id": "s-secret", "model": THINKING}
    result = call_tool(f"{asgi_server}/mcp/routing", "review", arguments, headers=AUTH)

    assert result.get("isError") is not True, result
    entry = RoutingEntry.objects.get(session_id="s-secret")
    stored = json.dumps(entry.request) + entry.response
    assert AWS_KEY not in stored and SK_TOKEN not in stored and "MIIEowIBAAKCAQEA" not in stored
    assert "[REDACTED:aws_access_key]" in json.dumps(entry.request) and "[REDACTED:private_key]" in json.dumps(
        entry.request
    )
    assert "[REDACTED:openai_key]" in entry.response
    flagged = {(flag["field"], flag["pattern"]) for flag in entry.redactions}
    assert {("request", "aws_access_key"), ("request", "private_key"), ("response", "openai_key")} <= flagged
