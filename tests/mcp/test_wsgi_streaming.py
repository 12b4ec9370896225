"""Streamed tool calls under a WSGI server (`hyperguild.wsgi`, what granian and gunicorn serve): progress
goes out as it happens, not collected until the end, and a client that goes away cancels its call."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator

import httpx
import pytest
from django.core.servers.basehttp import ThreadedWSGIServer, WSGIRequestHandler

from tests.conftest import MCP_HEADERS, free_port, parse_sse, rpc

pytestmark = pytest.mark.django_db(transaction=True)


class QuietHandler(WSGIRequestHandler):
    def log_message(self, format, *args) -> None:  # noqa: A002 - the base class's name
        pass


@pytest.fixture
def wsgi_url(selftest_endpoint, django_db_blocker) -> Iterator[tuple[str, object]]:
    """The self-test endpoint served by Django's WSGI application on a threaded WSGI server on 127.0.0.1."""
    from hyperguild.wsgi import application

    _, state, _ = selftest_endpoint
    server = ThreadedWSGIServer(("127.0.0.1", free_port()), QuietHandler, allow_reuse_address=True)
    server.set_app(application)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    with django_db_blocker.unblock():
        thread.start()
        yield f"http://127.0.0.1:{server.server_address[1]}/mcp/selftest", state
    server.shutdown()
    server.server_close()


def test_a_streamed_call_sends_progress_then_the_result_under_wsgi(wsgi_url):
    url, _ = wsgi_url
    message = rpc("tools/call", {"name": "progress", "arguments": {"steps": 3}, "_meta": {"progressToken": "t"}})
    response = httpx.post(url, content=json.dumps(message), headers=MCP_HEADERS, timeout=10)
    assert response.headers["content-type"].startswith("text/event-stream")
    messages = parse_sse(response.text)
    assert [m["params"]["progress"] for m in messages if m.get("method") == "notifications/progress"] == [1, 2, 3]
    assert messages[-1]["result"]["structuredContent"] == {"done": 3}


def test_progress_arrives_while_the_call_runs_and_leaving_cancels_it_under_wsgi(wsgi_url, monkeypatch):
    url, state = wsgi_url
    # A WSGI server learns that the client left when a write fails: keep-alives come often here.
    monkeypatch.setattr("hyperguild.mcp.views.SSE_KEEPALIVE_SECONDS", 0.2)
    message = rpc("tools/call", {"name": "wait_for_cancel", "arguments": {}, "_meta": {"progressToken": 5}}, 44)
    with httpx.Client(timeout=10) as client:
        with client.stream("POST", url, content=json.dumps(message), headers=MCP_HEADERS) as response:
            assert response.headers["content-type"].startswith("text/event-stream")
            lines = response.iter_lines()
            first = next(lines)
            while not first.startswith("data:"):
                first = next(lines)
            assert json.loads(first[5:])["params"]["message"] == "waiting"  # sent while the tool still waits
            assert not state.cancel_seen.is_set()
    started = time.monotonic()
    assert state.cancel_seen.wait(10)
    assert time.monotonic() - started < 5
