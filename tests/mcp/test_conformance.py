"""The official MCP conformance suite against the live server.

`make test` installs it (tests/conformance/package.json: Node 22 and
@modelcontextprotocol/conformance, pinned); this test runs its server
scenarios against /mcp/brain with no token, as a local user would.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.django_db(transaction=True)

ROOT = Path(__file__).resolve().parents[2] / "tests" / "conformance"
NODE = ROOT / "node_modules" / ".bin" / "node"
SUITE = ROOT / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"

SCENARIOS = ["server-initialize", "ping", "tools-list", "dns-rebinding-protection"]


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_the_official_conformance_scenario_passes(asgi_server, scenario, tmp_path):
    assert NODE.exists() and SUITE.exists(), "run `make test` (it installs tests/conformance with npm ci)"
    version = subprocess.run([str(NODE), "--version"], capture_output=True, text=True, check=True).stdout
    assert version.startswith("v22."), version
    completed = subprocess.run(
        [str(NODE), str(SUITE), "server", "--url", f"{asgi_server}/mcp/brain", "--scenario", scenario,
         "--output-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    output = completed.stdout + completed.stderr
    assert completed.returncode == 0, output
    checks = _checks(tmp_path)
    assert checks, f"the suite wrote no results:\n{output}"
    failed = [c for c in checks if c.get("status") not in ("SUCCESS", "INFO", "SKIPPED")]
    assert not failed, json.dumps(failed, indent=1)


def _checks(folder: Path) -> list[dict]:
    found: list[dict] = []
    for path in folder.rglob("*.json"):
        data = json.loads(path.read_text())
        if isinstance(data, list):
            found.extend(item for item in data if isinstance(item, dict) and "status" in item)
        elif isinstance(data, dict):
            found.extend(item for item in data.get("checks", []) if isinstance(item, dict))
    return found
