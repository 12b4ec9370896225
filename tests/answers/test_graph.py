"""The link graph: neighbourhoods in either direction, links in and out."""

from __future__ import annotations

from django.db import connection
from django.test.utils import CaptureQueriesContext

from brain.actions import do_ingest_note
from brain.graph import links_for, subgraph
from brain.models import Note


def test_subgraph_walks_links_in_either_direction_with_distances(populated_brain):
    found = subgraph("llm-gateway", 2)
    assert found == [
        {"slug": "hyperguild-architecture", "title": "hyperguild architecture", "distance": 1},
        {"slug": "litellm-config-drift", "title": "LiteLLM config drift", "distance": 1},
    ]


def test_subgraph_stops_at_the_requested_depth(populated_brain):
    assert [item["slug"] for item in subgraph("hyperguild-architecture", 1)] == ["llm-gateway"]
    assert subgraph("hyperguild-architecture", 2) == [
        {"slug": "llm-gateway", "title": "LLM gateway", "distance": 1},
        {"slug": "litellm-config-drift", "title": "LiteLLM config drift", "distance": 2},
    ]
    assert subgraph("hyperguild-architecture", 0) == []


def test_subgraph_costs_one_query_per_hop(populated_brain):
    with CaptureQueriesContext(connection) as queries:
        subgraph("hyperguild-architecture", 3)
    # start note, up to 3 hops (the walk stops early once nothing new is reached), the notes found
    assert len(queries) <= 5


def test_subgraph_of_an_unknown_slug_is_empty(populated_brain):
    assert subgraph("no-such-note", 2) == []


def test_a_note_without_links_has_no_neighbours(populated_brain):
    assert subgraph("pasta-water", 2) == []


def test_unresolved_links_are_not_edges_until_the_target_appears(db):
    do_ingest_note(title="Alpha", body="See [[beta]].", wing="concepts", slug="alpha")
    assert subgraph("alpha", 1) == []
    assert links_for(Note.objects.get(slug="alpha"))["out"] == [
        {"slug": "beta", "title": None, "kind": "wikilink", "resolved": False}
    ]

    do_ingest_note(title="Beta", body="Second.", wing="concepts", slug="beta")
    assert subgraph("alpha", 1) == [{"slug": "beta", "title": "Beta", "distance": 1}]


def test_links_for_lists_links_out_and_in(populated_brain):
    links = links_for(populated_brain["llm-gateway"])
    assert links == {
        "out": [
            {"slug": "litellm-config-drift", "title": "LiteLLM config drift", "kind": "wikilink", "resolved": True}
        ],
        "in": [{"slug": "hyperguild-architecture", "title": "hyperguild architecture", "kind": "wikilink"}],
    }


def test_frontmatter_related_links_count_as_edges(db):
    do_ingest_note(title="One", body="First.", wing="concepts", slug="one")
    do_ingest_note(title="Two", body="Second.", wing="concepts", slug="two", frontmatter={"related": ["[[one]]"]})
    assert subgraph("one", 1) == [{"slug": "two", "title": "Two", "distance": 1}]
    assert links_for(Note.objects.get(slug="one"))["in"] == [{"slug": "two", "title": "Two", "kind": "related"}]
