"""Issue 17: property-based fuzzing of every MCP tool's arguments and every REST body.

Each MCP tool gets arguments drawn from its own inputSchema (valid, one field made hostile,
unknown or missing fields, anything at all); each REST endpoint gets bodies built the same
way, plus raw JSON-RPC messages and raw bytes. Every answer must be below 500 and JSON.
Calls go through Django's test client in-process: the whole middleware stack, URLconf, views,
actions and the real PostgreSQL, without a socket per call (a live server would be ~10x slower).
The number of calls is fixed by the settings below (derandomized, so runs repeat) and printed
at the end of the run.
"""

from __future__ import annotations

import json
import os
import threading
import time

import pytest
from django.test import Client
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from hyperguild.mcp.cancellation import RUNNING
from hyperguild.mcp.registry import all_endpoints
from tests.fuzz.conftest import CALLS, SERVER_ERRORS
from tests.fuzz.strategies import ANY_JSON, HOSTILE_STRINGS, from_schema, hostile_values, tool_arguments

pytestmark = pytest.mark.django_db

TOKEN = "fuzz-token"
EXAMPLES_PER_TOOL = int(os.environ.get("FUZZ_EXAMPLES_PER_TOOL", 180))  # 21 tools: with REST and raw, > 5,000 calls
EXAMPLES_PER_REST_ENDPOINT = 200
EXAMPLES_OF_RAW_MESSAGES = 300
GIVE_UP_AFTER = 0.05  # seconds; see give_up_on_slow_calls

FUZZ = dict(
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.filter_too_much],
)

TOOLS = [(endpoint.name, name) for endpoint in all_endpoints() for name in endpoint.tools]

REST_SCHEMAS = {
    "/query": {
        "type": "object",
        "required": ["query"],
        "properties": {
            "query": {"type": "string", "maxLength": 200},
            "limit": {"type": "integer", "minimum": -5, "maximum": 60},
            "wing": {"type": "string"},
            "hall": {"type": "string"},
            "status": {"enum": ["raw", "wiki", "any", "deleted", None]},
        },
    },
    "/write": {
        "type": "object",
        "required": ["title", "body"],
        "properties": {
            "title": {"type": "string", "maxLength": 120},
            "body": {"type": "string", "maxLength": 400},
            "frontmatter": {"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string"}}}},
            "slug": {"type": "string"},
            "session_id": {"type": "string"},
        },
    },
    "/ingest": {
        "type": "object",
        "required": ["title", "body"],
        "properties": {
            "title": {"type": "string", "maxLength": 120},
            "body": {"type": "string", "maxLength": 400},
            "wing": {"type": "string", "maxLength": 40},
            "hall": {"type": "string", "maxLength": 40},
            "raw": {"type": "boolean"},
            "frontmatter": {"type": "object"},
        },
    },
    "/sessions/fuzz-session/entries": {
        "type": "object",
        "required": ["kind"],
        "properties": {
            "kind": {"enum": ["note", "decision", "error", "x y", ""]},
            "message": {"type": "string"},
            "data": {"type": "object"},
            "skill": {"type": "string"},
            "idempotency_key": {"type": "string"},
            "entries": {"type": "array", "items": {"type": "object", "properties": {"kind": {"type": "string"}}}},
        },
    },
}


@pytest.fixture
def fuzz_client(settings, tmp_path, monkeypatch):
    from brain import bm25
    from supervisor import tools as supervisor_tools

    for name in ("BRAIN_MCP_TOKEN", "SUPERVISOR_MCP_TOKEN", "ROUTING_MCP_TOKEN"):
        setattr(settings, name, TOKEN)
    settings.BRAIN_EMBEDDER = "off"
    settings.BRAIN_RERANKER_URL = ""
    settings.LITELLM_BASE_URL = ""
    settings.BRAIN_DIR = ""
    # Nothing the fuzzer sends may start a worker or reach past this machine.
    settings.SUPERVISOR_ALLOWED_ROOTS = [str(tmp_path / "no-project-here")]
    settings.CLAUDE_BINARY = "/bin/false"
    settings.SUPERVISOR_QUEUE_WAIT = 0
    settings.SUPERVISOR_TIMEOUT = 5
    settings.SUPERVISOR_TIER_ANTHROPIC_URL = "http://127.0.0.1:9"
    settings.SUPERVISOR_TIER_LITELLM_URL = "http://127.0.0.1:9"
    # A valid call that needs no project (spec) queues a run that no worker picks up here: the
    # caller gets its clean "did not finish" tool error at once instead of waiting the run budget.
    monkeypatch.setattr(supervisor_tools, "run_budget_seconds", lambda: 0.0)
    bm25.reset()
    stop = threading.Event()
    watchdog = threading.Thread(target=give_up_on_slow_calls, args=(stop,), daemon=True)
    watchdog.start()
    yield Client(raise_request_exception=False)
    stop.set()
    watchdog.join(5)
    bm25.reset()


def give_up_on_slow_calls(stop: threading.Event) -> None:
    """Cancel any call in flight for more than GIVE_UP_AFTER seconds, as a client that gives up does.

    A worker skill's valid call queues a run and waits for a worker; no worker runs here, so
    without this each such call would wait out the run budget. The cancellation is the real
    path (RUNNING, then the run is cancelled before it started) and the answer is still checked.
    """
    while not stop.wait(0.02):
        now = time.time()
        for _, _, ctx in RUNNING.snapshot():
            if now - ctx.started_at > GIVE_UP_AFTER:
                ctx.cancelled.set()


def check(response, door: str, sent: bytes) -> None:
    CALLS[door] += 1
    if response.status_code >= 500:
        SERVER_ERRORS.append(f"{door}: {sent[:200]!r}")
    assert response.status_code < 500, (door, response.status_code, sent[:300], response.content[:500])
    if response.status_code == 202:
        return  # a JSON-RPC notification: accepted, no body
    assert response["Content-Type"].startswith("application/json"), (door, response["Content-Type"], sent[:300])
    json.loads(response.content)


def post(client: Client, path: str, body: bytes):
    return client.post(
        path,
        body,
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {TOKEN}",
        HTTP_ACCEPT="application/json, text/event-stream",
    )


def encode(value) -> bytes:
    # ensure_ascii: lone surrogates travel as \\udXXX escapes, the way a hostile client sends them.
    return json.dumps(value, ensure_ascii=True).encode()


@pytest.mark.parametrize(("endpoint", "tool"), TOOLS, ids=[f"{e}.{t}" for e, t in TOOLS])
def test_every_mcp_tool_answers_json_below_500_for_any_arguments(fuzz_client, endpoint, tool):
    schema = next(e for e in all_endpoints() if e.name == endpoint).tools[tool].input_schema

    @hsettings(max_examples=EXAMPLES_PER_TOOL, **FUZZ)
    @given(arguments=tool_arguments(schema), request_id=st.one_of(st.integers(0, 5), st.text(max_size=8)))
    def run(arguments, request_id):
        message = {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "tools/call",
            "params": {"name": tool, "arguments": arguments},
        }
        body = encode(message)
        check(post(fuzz_client, f"/mcp/{endpoint}", body), f"mcp/{endpoint}", body)

    run()


@pytest.mark.parametrize("path", list(REST_SCHEMAS))
def test_every_rest_body_answers_json_below_500(fuzz_client, path):
    @hsettings(max_examples=EXAMPLES_PER_REST_ENDPOINT, **FUZZ)
    @given(payload=st.one_of(tool_arguments(REST_SCHEMAS[path]), from_schema(REST_SCHEMAS[path])))
    def run(payload):
        body = encode(payload)
        check(post(fuzz_client, path, body), f"rest {path.split('/')[1]}", body)

    run()


RAW_BODIES = st.one_of(
    st.binary(max_size=200),
    st.sampled_from(
        [
            b"",
            b"{",
            b"[]",
            b"null",
            b"[" * 5000,
            b'{"id": NaN}',
            b'{"jsonrpc":"2.0","id":Infinity,"method":"ping"}',
            b'{"jsonrpc":"2.0","id":1,"method":"ping"}' * 2,
            b"\xff\xfe",
            b'"\\ud800"',
        ]
    ),
    st.builds(
        lambda method, params, request_id: encode(
            {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        ),
        st.sampled_from(
            [
                "initialize",
                "ping",
                "tools/list",
                "tools/call",
                "resources/list",
                "resources/read",
                "resources/templates/list",
                "notifications/cancelled",
                "server/discover",
                "x" * 300,
                "",
            ]
        ),
        st.one_of(
            ANY_JSON,
            st.fixed_dictionaries(
                {},
                optional={
                    "cursor": hostile_values(),
                    "uri": hostile_values(),
                    "requestId": hostile_values(),
                    "name": st.sampled_from(HOSTILE_STRINGS),
                },
            ),
        ),
        st.one_of(st.none(), st.integers(-(2**70), 2**70), st.text(max_size=10), ANY_JSON),
    ),
)


def test_raw_json_rpc_messages_and_bytes_answer_json_below_500(fuzz_client):
    @hsettings(max_examples=EXAMPLES_OF_RAW_MESSAGES, **FUZZ)
    @given(body=RAW_BODIES, endpoint=st.sampled_from(["brain", "supervisor", "routing"]))
    def run(body, endpoint):
        check(post(fuzz_client, f"/mcp/{endpoint}", body), "mcp raw", body)

    run()


@pytest.mark.parametrize("path", ["/notes/{}", "/sessions/{}/entries"])
def test_url_parameters_answer_json_below_500(fuzz_client, path):
    @hsettings(max_examples=100, **FUZZ)
    @given(value=st.one_of(st.text(min_size=1, max_size=40), st.sampled_from(HOSTILE_STRINGS[:-3])))
    def run(value):
        from urllib.parse import quote

        url = path.format(quote(value.encode("utf-8", "surrogatepass"), safe=""))
        response = fuzz_client.get(url, HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
        check(response, "rest urls", url.encode())

    run()
