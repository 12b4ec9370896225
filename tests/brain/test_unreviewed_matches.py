"""What you write can be found (issue 28, problem 3).

Search stays wiki-only by default (the review gate), but every answer says how many unreviewed
(raw) notes matched and names the best of them; brain_query can include them, each hit with its
status; brain_context lists the project's own recent raw notes apart from the wiki entries.
"""

from __future__ import annotations

import httpx
import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from brain.actions import do_ingest_note, do_write_raw_note
from sessions.actions import do_log_entry
from tests.brain.conftest import AUTH
from tests.conftest import call_tool

pytestmark = pytest.mark.django_db(transaction=True)

PROJECT_ROOT = "/home/someone/dev/zephyrdb"


def tool(url: str, name: str, arguments: dict) -> dict:
    result = call_tool(url, name, arguments, AUTH)
    assert result.get("isError") is not True, result
    return result["structuredContent"]


def test_a_just_written_raw_note_is_named_by_the_next_brain_query(brain_server):
    _, url = brain_server
    written = tool(
        url, "brain_write", {"title": "Flaky fixture teardown", "body": "The teardown races the pool reaper."}
    )
    answer = tool(url, "brain_query", {"query": "teardown races"})
    assert answer["abstained"] is True and answer["hits"] == []
    assert answer["unreviewed_matches"] == 1
    assert answer["unreviewed"] == [{"slug": written["slug"], "title": "Flaky fixture teardown", "status": "raw"}]
    assert "1 unreviewed (raw) note also matches" in answer["unreviewed_hint"]
    assert "include_raw" in answer["unreviewed_hint"] and "include_raw" in answer["reason"]


def test_include_raw_ranks_raw_and_wiki_notes_together_with_their_status_and_never_rejected_ones(brain_server):
    _, url = brain_server
    do_ingest_note(title="Pool reaper", body="The pool reaper closes idle connections.", wing="concepts")
    do_write_raw_note(title="Reaper races", body="The pool reaper races the teardown.")
    rejected = do_write_raw_note(title="Reaper rumour", body="The pool reaper is haunted.")
    reviewer = get_user_model().objects.create_user("reviewer", password="pw-reviewer-123", is_staff=True)
    from brain.actions import do_reject_note

    do_reject_note(rejected, reviewer=reviewer, reason="nonsense")
    default = tool(url, "brain_query", {"query": "pool reaper"})
    assert [hit["status"] for hit in default["hits"]] == ["wiki"]
    assert default["unreviewed_matches"] == 1
    both = tool(url, "brain_query", {"query": "pool reaper", "include_raw": True})
    assert sorted((hit["slug"], hit["status"]) for hit in both["hits"]) == [
        ("pool-reaper", "wiki"),
        ("reaper-races", "raw"),
    ]
    assert both["unreviewed_matches"] == 0 and both["unreviewed_hint"] is None


def test_brain_answer_says_unreviewed_notes_matched(brain_server):
    _, url = brain_server
    do_write_raw_note(title="Vacuum schedule", body="Autovacuum runs every night on the events table.")
    answer = tool(url, "brain_answer", {"question": "when does autovacuum run on the events table?"})
    assert answer["sources"] == []
    assert answer["unreviewed_matches"] == 1 and answer["unreviewed"][0]["slug"] == "vacuum-schedule"
    assert "include_raw" in answer["unreviewed_hint"]


def test_brain_context_lists_the_projects_own_raw_notes_apart(brain_server):
    _, url = brain_server
    do_ingest_note(title="Zephyrdb architecture", body="zephyrdb stores events in segments.", wing="concepts")
    do_log_entry("sess-zephyr-1", kind="note", message="started", project_root=PROJECT_ROOT)
    own = tool(
        url,
        "brain_write",
        {"title": "Segment compaction stalls", "body": "Compaction stalls under load.", "session_id": "sess-zephyr-1"},
    )
    do_write_raw_note(title="Unrelated raw idea", body="Pasta water should be salty.", session_id="sess-other")
    context = tool(url, "brain_context", {"project_root": PROJECT_ROOT})
    assert [entry["slug"] for entry in context["entries"]] == ["zephyrdb-architecture"]
    assert [note["slug"] for note in context["unreviewed"]] == [own["slug"]]
    assert context["unreviewed"][0]["status"] == "raw"


def test_rest_query_and_the_search_page_say_so_too(brain_server):
    base, _ = brain_server
    do_write_raw_note(title="Flaky fixture teardown", body="The teardown races the pool reaper.")
    response = httpx.post(f"{base}/query", json={"query": "teardown races"}, headers=AUTH, timeout=30)
    assert response.json()["unreviewed_matches"] == 1
    with_raw = httpx.post(
        f"{base}/query", json={"query": "teardown races", "include_raw": True}, headers=AUTH, timeout=30
    )
    assert [hit["status"] for hit in with_raw.json()["hits"]] == ["raw"]
    user = get_user_model().objects.create_user("reader", password="pw-reader-123")
    client = Client()
    client.force_login(user)
    page = client.get("/search/", {"q": "teardown races"}).content.decode()
    assert 'id="unreviewed-matches"' in page and "1 unreviewed (raw) note also matches" in page
    page = client.get("/search/", {"q": "teardown races", "include_raw": "on"}).content.decode()
    assert "Flaky fixture teardown" in page and 'id="unreviewed-matches"' not in page


@pytest.fixture
def fresh_index():
    """The in-process index starts over with the emptied test database (as brain_server's does)."""
    from brain import bm25

    bm25.reset()
    yield
    bm25.reset()


def test_a_wiki_search_goes_over_the_postings_once_for_its_hits_and_its_raw_count(monkeypatch, fresh_index, settings):
    from brain import bm25
    from brain.search import search

    settings.BRAIN_BM25_PRUNING = False  # the exhaustive path: one pass over every posting, shared by both rankings

    for number in range(6):
        do_ingest_note(
            title=f"Reaper wiki {number}",
            body=f"The pool reaper closes idle connections, case {number}.",
            wing="concepts",
        )
        do_write_raw_note(title=f"Reaper raw {number}", body=f"The pool reaper races the teardown, case {number}.")
    passes = []
    score = bm25.Snapshot.score

    def counted(snapshot, tokens, **options):
        scored = score(snapshot, tokens, **options)
        if scored is not options.get("reuse"):
            passes.append(tokens)
        return scored

    monkeypatch.setattr(bm25.Snapshot, "score", counted)
    found = search("pool reaper connections")
    assert sorted(hit.title for hit in found.hits) == [f"Reaper wiki {number}" for number in range(6)]
    assert found.unreviewed_matches == 6
    raw_titles = {f"Reaper raw {number}" for number in range(6)}
    assert len(found.unreviewed) == 5 and {note["title"] for note in found.unreviewed} <= raw_titles
    assert len(passes) == 1, f"{len(passes)} passes over the postings for one wiki search"
    # A different index (after a write) is scored afresh: a pass is only reused on its own snapshot.
    do_write_raw_note(title="Reaper raw 6", body="The pool reaper races the teardown, case 6.")
    passes.clear()
    assert search("pool reaper connections").unreviewed_matches == 7
    assert len(passes) == 1


def test_a_tagged_wiki_search_counts_and_names_only_the_raw_notes_with_those_tags(fresh_index):
    from brain.search import search

    do_ingest_note(
        title="Reaper wiki",
        body="The pool reaper closes idle connections.",
        wing="concepts",
        frontmatter={"tags": ["pool"]},
    )
    tagged = do_write_raw_note(title="Reaper tagged", body="The pool reaper races.", frontmatter={"tags": ["pool"]})
    do_write_raw_note(title="Reaper untagged", body="The pool reaper races again.")
    found = search("pool reaper", tags=["pool"])
    assert [hit.title for hit in found.hits] == ["Reaper wiki"]
    assert found.unreviewed_matches == 1
    assert found.unreviewed == [{"slug": tagged.slug, "title": "Reaper tagged", "status": "raw"}]
    assert search("pool reaper").unreviewed_matches == 2


def test_a_search_of_an_empty_brain_abstains_without_a_numeric_warning(fresh_index):
    import warnings

    from brain.search import search

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a division by an average length of zero would raise here
        found = search("pool reaper")
    assert found.hits == [] and found.abstained and found.unreviewed_matches == 0


def test_with_pruning_a_wiki_search_scores_no_whole_pass_and_counts_the_same_raw_notes(
    monkeypatch, fresh_index, settings
):
    from brain import bm25
    from brain.search import search

    for number in range(6):
        do_ingest_note(
            title=f"Reaper wiki {number}",
            body=f"The pool reaper closes idle connections, case {number}.",
            wing="concepts",
        )
        do_write_raw_note(title=f"Reaper raw {number}", body=f"The pool reaper races the teardown, case {number}.")
    settings.BRAIN_BM25_PRUNING = False
    exhaustive = search("pool reaper connections")
    passes = []
    score = bm25.Snapshot.score

    def counted(snapshot, tokens, **options):
        passes.append(tokens)
        return score(snapshot, tokens, **options)

    monkeypatch.setattr(bm25.Snapshot, "score", counted)
    settings.BRAIN_BM25_PRUNING = True
    pruned_before = bm25.stats.pruned_queries
    pruned = search("pool reaper connections")
    assert passes == []  # the wiki ranking and the raw count are each a pruned top-k, not a pass over every posting
    assert bm25.stats.pruned_queries == pruned_before + 2
    assert [(hit.note_id, hit.score) for hit in pruned.hits] == [(hit.note_id, hit.score) for hit in exhaustive.hits]
    assert pruned.unreviewed_matches == exhaustive.unreviewed_matches == 6
    assert pruned.unreviewed == exhaustive.unreviewed
