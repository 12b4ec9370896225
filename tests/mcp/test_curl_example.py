"""The `curl` tool call in docs/mcp.md works as written (issue 47: the docs had none): run it against the live
server, with only the address and the token put in."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from brain import bm25
from brain.actions import do_ingest_note

DOC = Path(__file__).resolve().parents[2] / "docs" / "mcp.md"
TOKEN = "curl-example-token"


def documented_command() -> str:
    block = re.search(r"<!-- curl-tools-call -->\n```sh\n(.*?)```", DOC.read_text(), re.S)
    assert block, "docs/mcp.md lost its curl example"
    return block.group(1)


def test_the_documented_curl_call_answers_a_search(asgi_server, transactional_db, settings):
    settings.BRAIN_MCP_TOKEN = TOKEN
    settings.BRAIN_EMBEDDER = "off"
    bm25.reset()
    do_ingest_note(title="Vacuum", body="Run VACUUM ANALYZE after a bulk load.", wing="concepts", slug="vacuum")
    command = documented_command().replace("http://127.0.0.1:8000", asgi_server)
    done = subprocess.run(
        ["sh", "-c", command],
        env={"BRAIN_MCP_TOKEN": TOKEN, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)["result"]
    assert result["isError"] is False and result["structuredContent"]["count"] >= 1, result
    assert result["structuredContent"]["hits"][0]["slug"] == "vacuum"
