from __future__ import annotations

import os

import pytest

from tests.conftest import test_database_url


@pytest.fixture
def child_env():
    """Environment for child processes (manage.py serve, qcluster) on the test database."""
    env = dict(os.environ)
    env["DATABASE_URL"] = test_database_url()
    for name in ("BRAIN_MCP_TOKEN", "SUPERVISOR_MCP_TOKEN", "ROUTING_MCP_TOKEN", "HYPERGUILD_ALLOW_NO_AUTH"):
        env.pop(name, None)
    env["BRAIN_EMBEDDER"] = "off"
    return env
