"""A small populated brain, the settings that switch services off, and the brain endpoint URL."""

from __future__ import annotations

import pytest

from brain import bm25
from brain.actions import do_ingest_note
from tests.search.test_projects_excerpt import click_brain  # noqa: F401 (a fixture: Click's docs, imported)

# The project whose context the tests ask for, and notes about it. The graph
# note chain hyperguild-architecture → llm-gateway → litellm-config-drift makes
# the last one a 2-hop neighbour that never says "hyperguild".
HYPERGUILD_NOTES = [
    {
        "slug": "hyperguild-architecture",
        "title": "hyperguild architecture",
        "wing": "concepts",
        "body": "hyperguild is a Django service. hyperguild talks to models through the [[llm-gateway]]. "
        "The hyperguild supervisor verifies skill workers.",
    },
    {
        "slug": "hyperguild-deploy",
        "title": "Deploying hyperguild",
        "wing": "concepts",
        "body": "Deploy hyperguild with make run behind a reverse proxy; hyperguild needs PostgreSQL.",
    },
    {
        "slug": "hyperguild-tokens",
        "title": "hyperguild MCP tokens",
        "wing": "concepts",
        "body": "Each hyperguild endpoint has its own bearer token. Rotate the hyperguild tokens monthly.",
    },
    {
        "slug": "hyperguild-test-database",
        "title": "Test databases per helper",
        "wing": "concepts",
        "body": "Every helper on hyperguild runs its tests against its own test database name.",
    },
    {
        "slug": "llm-gateway",
        "title": "LLM gateway",
        "wing": "entities",
        "body": "All chat completions go through LiteLLM. Known problem: [[litellm-config-drift]].",
    },
    {
        "slug": "litellm-config-drift",
        "title": "LiteLLM config drift",
        "wing": "entities",
        "body": "The LiteLLM model list on the LAN box drifted from the repo copy; a model alias vanished and "
        "every call failed with an unknown model error. Check the config into git and diff it at every deploy, "
        "and alert when the two differ.",
    },
    {
        "slug": "graphstore-postgres",
        "title": "Graph store on PostgreSQL",
        "wing": "concepts",
        "body": "The graphstore package keeps note links in PostgreSQL and walks them with one query per hop.",
    },
    {
        "slug": "pasta-water",
        "title": "Salting pasta water",
        "wing": "sources",
        "body": "Salt the pasta water generously; it should taste like the sea.",
    },
    {
        "slug": "kubernetes-ingress",
        "title": "Kubernetes ingress annotations",
        "wing": "sources",
        "body": "Ingress annotations configure timeouts and body sizes on nginx.",
    },
]


@pytest.fixture(autouse=True)
def quiet_services(settings):
    """No embedder, no reranker, no LLM unless a test turns one on; no slow retries."""
    settings.BRAIN_EMBEDDER = "off"
    settings.BRAIN_RERANKER_URL = ""
    settings.BRAIN_ANSWER_MODEL = ""
    settings.LITELLM_BASE_URL = ""
    settings.HYPERGUILD_HTTP_RETRIES = 0
    settings.BRAIN_MCP_TOKEN = ""
    # Each test starts from its own database: never reuse an index built for another one.
    bm25.reset()
    yield
    bm25.reset()


def ingest(notes: list[dict]) -> dict:
    """Ingest notes into the wiki through the brain's action; {slug: Note}."""
    created = {}
    for spec in notes:
        created[spec["slug"]] = do_ingest_note(
            title=spec["title"], body=spec["body"], wing=spec["wing"], slug=spec["slug"], source="test"
        )
    return created


@pytest.fixture
def populated_brain(db) -> dict:
    return ingest(HYPERGUILD_NOTES)


@pytest.fixture
def brain_url(asgi_server) -> str:
    return f"{asgi_server}/mcp/brain"
