"""brain_context: project seeds, 2-hop graph neighbours, recent-file boosts, through the MCP endpoint."""

from __future__ import annotations

import pytest

from brain.context import context, path_words, project_name
from brain.indexing import bump_brain_version
from brain.models import Note, NoteLink
from brain.search import search
from tests.answers.conftest import HYPERGUILD_NOTES, ingest
from tests.conftest import call_tool, free_port, mcp_post, rpc

PROJECT_ROOT = "/home/someone/dev/hyperguild"
RELEVANT = {
    "hyperguild-architecture",
    "hyperguild-deploy",
    "hyperguild-tokens",
    "hyperguild-test-database",
    "llm-gateway",
    "litellm-config-drift",
}
NOISE = {"pasta-water", "kubernetes-ingress"}


def slugs(result: dict) -> list[str]:
    return [entry["slug"] for entry in result["entries"]]


@pytest.mark.django_db(transaction=True)
def test_brain_context_returns_relevant_entries_and_a_two_hop_neighbour(brain_url):
    ingest(HYPERGUILD_NOTES)
    bm25_top3 = [hit.slug for hit in search("hyperguild", limit=3).hits]
    assert "litellm-config-drift" not in bm25_top3

    result = call_tool(brain_url, "brain_context", {"project_root": PROJECT_ROOT})

    assert result.get("isError") is not True, result
    found = result["structuredContent"]
    assert found["project"] == "hyperguild"
    assert found["degraded"] is False
    assert len(set(slugs(found)) & RELEVANT) >= 3
    assert not set(slugs(found)) & NOISE
    # The 2-hop neighbour of the best seed (architecture → llm-gateway → litellm-config-drift) surfaces,
    # behind its 1-hop neighbour.
    assert "litellm-config-drift" in slugs(found)
    assert slugs(found).index("llm-gateway") < slugs(found).index("litellm-config-drift")
    drift = found["entries"][slugs(found).index("litellm-config-drift")]
    note = Note.objects.get(slug="litellm-config-drift")
    assert drift == {
        "slug": "litellm-config-drift",
        "title": "LiteLLM config drift",
        "doc_path": note.path,
        # It never names the project: its first sentences, whole, within 200 characters.
        "excerpt": "The LiteLLM model list on the LAN box drifted from the repo copy; a model alias vanished and "
        "every call failed with an unknown model error.…",
        "verification": {  # issue 38: every entry says whether it still holds (no project here: unverified)
            "state": "unverified",
            "commit": None,
            "evidence": [],
            "unresolved": [],
            "label": "",  # issue 45: a note that claims nothing about code carries no label
            "reason": "unverified: the note belongs to no project, so there is no code to check it against",
        },
    }
    assert note.body.startswith(drift["excerpt"][:-1])


def test_without_links_it_answers_from_search_alone(db):
    ingest(HYPERGUILD_NOTES)
    NoteLink.objects.all().delete()

    found = context(PROJECT_ROOT)

    assert slugs(found) == [hit.slug for hit in search("hyperguild", limit=10).hits]
    assert len(slugs(found)) >= 3
    assert "litellm-config-drift" not in slugs(found)


def test_recent_files_bring_in_and_boost_notes_that_share_their_words(populated_brain):
    plain = slugs(context(PROJECT_ROOT))
    boosted = slugs(context(PROJECT_ROOT, recent_files=["internal/graphstore/pg.go"]))

    assert "graphstore-postgres" not in plain
    assert boosted[0] == "graphstore-postgres"
    assert set(boosted) - {"graphstore-postgres"} == set(plain)


def test_a_note_word_that_begins_a_path_word_counts_as_shared(db):
    ingest(HYPERGUILD_NOTES)
    ingest(
        [
            {
                "slug": "hyperguild-graph-walks",
                "title": "Graph walks",
                "wing": "concepts",
                "body": "Link graph walks are bounded: one query per hop. " + "Filler sentence. " * 30 + "hyperguild",
            }
        ]
    )
    plain = slugs(context(PROJECT_ROOT))
    boosted = slugs(context(PROJECT_ROOT, recent_files=["internal/graphstore/pg.go"]))

    assert plain.index("hyperguild-graph-walks") > 2
    assert boosted.index("hyperguild-graph-walks") < plain.index("hyperguild-graph-walks")
    assert boosted.index("hyperguild-graph-walks") <= 2  # behind the graphstore note and the best seed


def test_a_recent_file_boost_lifts_a_candidate_above_better_seeds(populated_brain):
    plain = slugs(context(PROJECT_ROOT))
    boosted = slugs(context(PROJECT_ROOT, recent_files=["deploy/Makefile"]))

    assert plain.index("hyperguild-deploy") > 0
    assert boosted[0] == "hyperguild-deploy"


def test_limit_caps_the_entries(populated_brain):
    assert len(context(PROJECT_ROOT, limit=2)["entries"]) == 2


def test_only_wiki_notes_are_offered(populated_brain):
    Note.objects.filter(slug="hyperguild-deploy").update(status="raw")
    bump_brain_version()
    assert "hyperguild-deploy" not in slugs(context(PROJECT_ROOT))


def test_path_words_drop_extensions_short_and_generic_words():
    assert path_words(["internal/graphstore/pg.go"]) == ["graphstore"]
    assert path_words(["src/brain/search_index.py", "src/brain/views.py", "Makefile"]) == [
        "brain",
        "search",
        "views",
        "makefile",
    ]
    assert path_words([]) == []


@pytest.mark.django_db
def test_the_project_name_is_the_last_folder_of_the_root():
    assert project_name("/home/someone/dev/hyperguild") == "hyperguild"
    assert project_name("/home/someone/dev/hyperguild/") == "hyperguild"


@pytest.mark.django_db
def test_a_project_record_is_found_from_the_full_path_not_only_the_folder_name():
    from brain.models import Project

    Project.objects.create(name="ledgerly", folders=["/srv/teams/ledgerly-main"])
    Project.objects.create(name="ledgerly-api", folders=["/srv/teams/ledgerly-main/services/api"])
    assert project_name("/srv/teams/ledgerly-main/docs") == "ledgerly"
    assert project_name("/srv/teams/ledgerly-main/services/api/src") == "ledgerly-api"  # the longest folder wins
    assert project_name("/elsewhere/ledgerly-main") == "ledgerly-main"  # no record: the folder's name, as before


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    "arguments, message",
    [
        ({}, None),
        ({"project_root": ""}, None),
        ({"project_root": "/"}, "no folder name"),
        ({"project_root": PROJECT_ROOT, "limit": 0}, None),
        ({"project_root": PROJECT_ROOT, "limit": 51}, None),
        ({"project_root": PROJECT_ROOT, "recent_files": "a.py"}, None),
        ({"project_root": PROJECT_ROOT, "recent_files": [""]}, None),
        ({"project_root": PROJECT_ROOT, "other": 1}, None),
    ],
)
def test_bad_arguments_are_refused_and_write_nothing(brain_url, arguments, message):
    ingest(HYPERGUILD_NOTES[:2])
    before = (Note.objects.count(), NoteLink.objects.count())

    response = mcp_post(brain_url, rpc("tools/call", {"name": "brain_context", "arguments": arguments}))

    body = response.json()
    if "error" in body:
        assert message is None
    else:
        assert body["result"]["isError"] is True
        if message:
            assert message in body["result"]["content"][0]["text"]
    assert (Note.objects.count(), NoteLink.objects.count()) == before


@pytest.mark.django_db(transaction=True)
def test_the_tool_contract_is_pinned(brain_url):
    tools = {tool["name"]: tool for tool in mcp_post(brain_url, rpc("tools/list")).json()["result"]["tools"]}
    tool = tools["brain_context"]
    assert tool["inputSchema"]["required"] == ["project_root"]
    assert set(tool["inputSchema"]["properties"]) == {"project_root", "recent_files", "limit"}
    assert tool["inputSchema"]["properties"]["limit"]["default"] == 10
    assert tool["annotations"]["readOnlyHint"] is True
    assert tool["annotations"]["openWorldHint"] is False
    entry = tool["outputSchema"]["properties"]["entries"]["items"]
    assert entry["required"] == ["slug", "title", "doc_path", "excerpt", "verification"]  # issue 38: the state


def test_with_hybrid_search_on_it_still_finds_the_project_notes_and_the_two_hop_neighbour(db, settings):
    from brain.tasks import sync_embeddings

    settings.BRAIN_EMBEDDER = "local"
    ingest(HYPERGUILD_NOTES)
    synced = sync_embeddings()
    assert synced["added"] > 0 and synced["pending"] == 0, synced
    assert "vector" in search("hyperguild", limit=3).hits[0].rankers

    found = context(PROJECT_ROOT)

    assert found["degraded"] is False
    assert len(set(slugs(found)) & RELEVANT) >= 3
    assert "litellm-config-drift" in slugs(found)


def test_an_embedder_outage_degrades_to_bm25_and_says_so(db, settings):
    ingest(HYPERGUILD_NOTES)
    settings.BRAIN_EMBEDDER = "ollama"
    settings.BRAIN_EMBED_URL = f"http://127.0.0.1:{free_port()}"
    settings.BRAIN_EMBED_MODEL = "nomic-embed-text"

    found = context(PROJECT_ROOT)

    assert found["degraded"] is True
    assert found["reason"]
    assert len(set(slugs(found)) & RELEVANT) >= 3
    assert "litellm-config-drift" in slugs(found)
