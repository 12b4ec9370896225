"""A pytest plugin that puts the library-built alternatives in place of hyperguild's own modules, before any
test module imports them, so the product's own tests run against them unchanged:

    PYTHONPATH=<libraries> HYPERGUILD_PLUMBING=http .venv/bin/python -m pytest -p bench.plumbing.swap \\
        tests/core/test_outbound_http.py

HYPERGUILD_PLUMBING is a comma-separated list of: http (bench/plumbing/http_libs.py: tenacity + pybreaker),
llm (bench/plumbing/llm_sdks.py: the openai SDK), mcp (bench/plumbing/mcp_sdk.py: the mcp SDK's server answers
/mcp/<endpoint> on the tests' ASGI server, `asgi_server`; HYPERGUILD_PLUMBING_MCP_STATEFUL=1 for its sessions).
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Iterator

import pytest

ALTERNATIVES = {
    "http": ("hyperguild.lib.http", "bench.plumbing.http_libs"),
    "llm": ("hyperguild.lib.llm", "bench.plumbing.llm_sdks"),
}


def swap(name: str, alternative: str) -> None:
    module = importlib.import_module(alternative)
    sys.modules[name] = module
    package, _, attribute = name.rpartition(".")
    setattr(importlib.import_module(package), attribute, module)


CHOICES = [choice.strip() for choice in os.environ.get("HYPERGUILD_PLUMBING", "").split(",") if choice.strip()]
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hyperguild.settings")
for choice in CHOICES:
    if choice in ALTERNATIVES:
        swap(*ALTERNATIVES[choice])
        print(f"bench.plumbing.swap: {ALTERNATIVES[choice][0]} is {ALTERNATIVES[choice][1]}", file=sys.stderr)


@pytest.fixture(scope="session", autouse=True)
def _sdk_mcp_server(request: pytest.FixtureRequest) -> Iterator[None]:
    """With `mcp`: the ASGI application the `asgi_server` fixture serves answers /mcp/<endpoint> with the SDK's server
    (after the test database exists, before that fixture imports hyperguild.asgi.application)."""
    if "mcp" in CHOICES:
        request.getfixturevalue("django_db_setup")
        # Imported here: hyperguild.asgi starts Django's handler and its pool, only once the test database exists.
        import hyperguild.asgi
        from bench.plumbing.mcp_sdk import sdk_application

        stateful = os.environ.get("HYPERGUILD_PLUMBING_MCP_STATEFUL") == "1"
        hyperguild.asgi.application = sdk_application(hyperguild.asgi.application, stateful=stateful)  # type: ignore[assignment]
        print("bench.plumbing.swap: /mcp/<endpoint> is the mcp SDK's server", file=sys.stderr)
    yield
