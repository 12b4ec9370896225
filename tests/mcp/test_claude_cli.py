"""The real Claude Code CLI against the three endpoints, through a recording stand-in proxy.

The CLI (`@anthropic-ai/claude-code`, latest on npm) is installed in
tests/claude_cli by `make test`. It runs with a scratch HOME, so the user's
own configuration never leaks in; the proxy in front of the server records
every request the CLI sends, so the test sees which revision it speaks.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
CLAUDE = ROOT / "tests" / "claude_cli" / "node_modules" / ".bin" / "claude"
NODE = ROOT / "tests" / "conformance" / "node_modules" / ".bin" / "node"
ENDPOINTS = ("brain", "supervisor", "routing")
HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host", "accept-encoding"}

pytestmark = pytest.mark.django_db(transaction=True)


class RecordingProxy:
    """Forwards every request to `upstream` and remembers (path, MCP headers, JSON body) of each."""

    def __init__(self, upstream: str):
        self.upstream = upstream
        self.seen: list[dict] = []
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                pass

            def _forward(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                try:
                    message = json.loads(body) if body else None
                except ValueError:
                    message = None
                proxy.seen.append(
                    {
                        "verb": self.command,
                        "path": self.path,
                        "headers": {k.lower(): v for k, v in self.headers.items() if k.lower().startswith("mcp-")},
                        "message": message,
                    }
                )
                headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
                answer = httpx.request(
                    self.command, proxy.upstream + self.path, content=body, headers=headers, timeout=60
                )
                self.send_response(answer.status_code)
                for key, value in answer.headers.items():
                    if key.lower() not in HOP_BY_HOP and key.lower() != "content-encoding":
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(answer.content)))
                self.end_headers()
                self.wfile.write(answer.content)

            do_GET = do_POST = do_DELETE = _forward

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True, name="recording-proxy")

    def __enter__(self) -> RecordingProxy:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    def requests(self, endpoint: str) -> list[dict]:
        """The JSON-RPC requests sent to /mcp/<endpoint>, each with the headers that came with it."""
        return [
            {**item["message"], "headers": item["headers"]}
            for item in self.seen
            if item["path"].rstrip("/") == f"/mcp/{endpoint}"
            and isinstance(item["message"], dict)
            and "method" in item["message"]
        ]


def claude(home: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {
        "HOME": str(home),
        "PATH": f"{NODE.resolve().parent}:/usr/bin:/bin",
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "NO_PROXY": "127.0.0.1,localhost",
    }
    return subprocess.run([str(CLAUDE), *args], cwd=home, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def cli_home(tmp_path, asgi_server, settings):
    assert CLAUDE.exists(), "run `make test` (it installs the Claude Code CLI in tests/claude_cli)"
    for name in ("BRAIN_MCP_TOKEN", "SUPERVISOR_MCP_TOKEN", "ROUTING_MCP_TOKEN"):
        setattr(settings, name, "")
    home = tmp_path / "home"
    home.mkdir()
    return home


def test_claude_code_speaks_2026_after_server_discover_and_lists_three_connected(cli_home, asgi_server):
    with RecordingProxy(asgi_server) as proxy:
        for name in ENDPOINTS:
            added = claude(
                cli_home, "mcp", "add", "--transport", "http", "--scope", "user", name, f"{proxy.url}/mcp/{name}"
            )
            assert added.returncode == 0, added.stdout + added.stderr
        listed = claude(cli_home, "mcp", "list")

    output = listed.stdout + listed.stderr
    assert listed.returncode == 0, output
    for name in ENDPOINTS:
        line = next((line for line in output.splitlines() if line.startswith(f"{name}:")), "")
        assert "Connected" in line, output
    for name in ENDPOINTS:
        sent = proxy.requests(name)
        methods = [request["method"] for request in sent]
        assert methods and methods[0] == "server/discover", methods
        assert "initialize" not in methods, methods  # no fall-back to the handshake era
        for request in sent:
            meta = request.get("params", {}).get("_meta", {})
            assert meta.get("io.modelcontextprotocol/protocolVersion") == "2026-07-28", request
            assert request["headers"].get("mcp-protocol-version") == "2026-07-28", request
            assert request["headers"].get("mcp-method") == request["method"], request
        assert "tools/list" in methods[1:], methods  # listed on 2026-07-28, after the discovery
    assert os.path.exists(cli_home / ".claude.json")  # the CLI wrote the scratch HOME, not the user's
