"""Conformance side by side (issue 49): both official MCP suites against /mcp/brain, scored with the same
not-applicable lists as tests/mcp/test_conformance.py, printed rather than asserted. Run once per server:

    .venv/bin/python -m pytest -p tests.conftest -p bench.plumbing.swap -s -q \\
        bench/plumbing/test_conformance_scores.py --timeout 1800                        # hyperguild/mcp/
    HYPERGUILD_PLUMBING=mcp .venv/bin/python -m pytest -p tests.conftest -p bench.plumbing.swap -s -q \\
        bench/plumbing/test_conformance_scores.py --timeout 1800                        # the mcp SDK's server

Prints one line per revision: scored checks, passed, failed, and the failed checks by scenario.
"""

from __future__ import annotations

import os
import subprocess
from collections import Counter

import pytest

from tests.mcp.test_conformance import NODE, NOT_APPLICABLE, NOT_APPLICABLE_CHECKS, SUITES, _checks_by_scenario

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize("revision", list(SUITES))
def test_print_the_conformance_score(asgi_server, revision, tmp_path):
    suite, extra = SUITES[revision]
    subprocess.run(
        [str(NODE), str(suite), "server", "--url", f"{asgi_server}/mcp/brain", "--output-dir", str(tmp_path), *extra],
        capture_output=True,
        text=True,
        timeout=1500,
    )
    scored, failed = 0, Counter[str]()
    for scenario, checks in sorted(_checks_by_scenario(tmp_path).items()):
        if scenario in NOT_APPLICABLE:
            continue
        for check in checks:
            if (scenario, check.get("id")) in NOT_APPLICABLE_CHECKS:
                continue
            scored += 1
            if check.get("status") not in ("SUCCESS", "INFO", "SKIPPED"):
                failed[f"{scenario}/{check.get('id')}"] += 1
    server = "mcp SDK" if "mcp" in os.environ.get("HYPERGUILD_PLUMBING", "") else "hyperguild/mcp"
    if os.environ.get("HYPERGUILD_PLUMBING_MCP_STATEFUL") == "1":
        server += " (stateful)"
    print(
        f"\nCONFORMANCE {revision} {server}: {scored} scored, {scored - sum(failed.values())} passed, "
        f"{sum(failed.values())} failed"
    )
    for name, count in sorted(failed.items()):
        print(f"  failed: {name}" + (f" x{count}" if count > 1 else ""))
    assert scored > 0
