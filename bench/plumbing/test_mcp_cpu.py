"""CPU per MCP call, hyperguild/mcp/ against the `mcp` SDK's server (bench/plumbing/mcp_sdk.py), side by side in
one process: two uvicorn servers on 127.0.0.1 (the product's ASGI app, and the same app with /mcp/<endpoint>
answered by the SDK, stateless, JSON responses), the same client calls alternating. Printed, not asserted:

    .venv/bin/python -m pytest -p tests.conftest -s -q bench/plumbing/test_mcp_cpu.py --timeout 1800

Rounds alternate the two servers, 100 calls each, 5 rounds. The process's CPU covers the client (httpx, the same for both), the server's Python (transport, JSON-RPC,
validation, the tool) and the database driver; PostgreSQL's own CPU is another process, not counted.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import httpx
import pytest

from bench.contract_overhead import cpu_per_call
from bench.plumbing.mcp_sdk import sdk_application
from brain.actions import do_write_raw_note
from tests.conftest import ThreadedServer, free_port

pytestmark = pytest.mark.django_db(transaction=True)

HEADERS = {
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
    "MCP-Protocol-Version": "2025-11-25",
}
CALLS = {
    "tools/list": {"method": "tools/list", "params": {}},
    "tools/call brain_query": {
        "method": "tools/call",
        "params": {"name": "brain_query", "arguments": {"query": "retry backoff policy"}},
    },
    "tools/call brain_get (missing)": {
        "method": "tools/call",
        "params": {"name": "brain_get", "arguments": {"slug": "no-such-note"}},
    },
}


def caller(client: httpx.Client, url: str, message: dict) -> Callable[[], object]:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, **message}).encode()

    def call() -> object:
        response = client.post(url, content=body, headers=HEADERS)
        assert response.status_code == 200 and "result" in response.json(), response.text[:300]
        return response

    return call


def test_print_cpu_per_call(django_db_setup, django_db_blocker, settings):
    # No embedder: brain_query is BM25 alone, and no thread embeds notes in the background, whose CPU this
    # process-wide clock would otherwise charge to whichever side happened to be measured then.
    settings.BRAIN_EMBEDDER = "off"
    # Imported here: hyperguild.asgi starts Django's handler and its pool, only once the test database exists.
    from hyperguild.asgi import application

    for index in range(20):
        do_write_raw_note(title=f"Retry policy {index}", body=f"Backoff doubles with jitter; note {index}.")
    servers = {
        "hyperguild/mcp": ThreadedServer(application, free_port()),
        "mcp SDK": ThreadedServer(sdk_application(application), free_port()),
    }
    with django_db_blocker.unblock():
        for server in servers.values():
            server.start()
    try:
        with httpx.Client(timeout=30) as client:
            for label, message in CALLS.items():
                calls = {name: caller(client, f"{server.url}/mcp/brain", message) for name, server in servers.items()}
                for call in calls.values():
                    call(), call()  # warm up
                figures: dict[str, list[float]] = {name: [] for name in calls}
                for _ in range(5):
                    for name, call in calls.items():
                        figures[name].append(cpu_per_call(call, 100))
                medians = {name: sorted(values)[2] for name, values in figures.items()}
                for name, values in figures.items():
                    print(
                        f"\nMCP CPU {label:32} {name:15}: median {medians[name]:7.0f} µs "
                        f"(min {min(values):.0f}, max {max(values):.0f})",
                        end="",
                    )
                print(f"\nMCP CPU {label:32} SDK / ours = {medians['mcp SDK'] / medians['hyperguild/mcp']:.2f}")
    finally:
        for server in servers.values():
            server.stop()
