"""Routed consensus reviews: several routed reviews, a finding kept only where two agree (scripted gateway)."""

from __future__ import annotations

import pytest

from supervisor.models import Pathway, RoutingEntry
from tests.conftest import call_tool
from tests.fakes.openai import Reply
from tests.routing.conftest import AUTH, FAST, seed_history

pytestmark = pytest.mark.django_db(transaction=True)


def review_answer(*findings: dict) -> dict:
    return {"findings": list(findings), "verdict": "request_changes", "summary": "found something"}


def bug(title: str, line: int, quote: str, **extra) -> dict:
    return {
        "file": "app.py",
        "line": line,
        "severity": "major",
        "kind": "logic",
        "title": title,
        "rationale": f"{title}: wrong result",
        "suggestion": "fix it",
        "confidence": 0.9,
        "quote": quote,
        **extra,
    }


def test_consensus_of_three_keeps_the_bug_two_reviews_agree_on_and_drops_the_lone_one(gateway, project, asgi_server):
    seed_history("review", 0.95)
    # Reviews 1 and 3 find the same bug (worded and placed a little differently); review 2 finds another.
    gateway.queue(
        Reply.json(review_answer(bug("add subtracts", 2, "return a - b"))),
        Reply.json(review_answer(bug("double is odd", 5, "def double(x):"))),
        Reply.json(review_answer(bug("add returns the difference", 1, "return a - b", confidence=0.95))),
    )

    result = call_tool(
        f"{asgi_server}/mcp/routing",
        "review",
        {"project_root": str(project), "paths": ["app.py"], "consensus": 3, "session_id": "s-consensus"},
        headers=AUTH,
    )

    assert result.get("isError") is not True, result
    content = result["structuredContent"]
    assert (content["status"], content["verified"], content["verdict"]) == ("pass", True, "request_changes")
    [kept] = content["findings"]
    assert kept["title"] == "add returns the difference" and kept["agreed_by"] == [1, 3]  # the more confident one
    [dropped] = content["dropped_findings"]
    assert (dropped["title"], dropped["gate"], dropped["review"]) == ("double is odd", "consensus", 2)
    assert "only review 2" in dropped["reason"]
    assert len(gateway.requests) == 3
    # Each review is a routed call like any other: its own final entry, counted on the pathway.
    entries = RoutingEntry.objects.filter(session_id="s-consensus")
    assert entries.count() == 3 and entries.filter(is_final=True, status="pass", model=FAST).count() == 3
    pathway = Pathway.objects.get(skill="review")
    assert pathway.attempts_by_model[FAST]["attempts"] == 3
    assert [item["title"] for item in pathway.fingerprints] == ["add returns the difference"]


def test_consensus_accepts_only_two_or_three(gateway, project, asgi_server):
    result = call_tool(
        f"{asgi_server}/mcp/routing",
        "review",
        {"project_root": str(project), "paths": ["app.py"], "consensus": 5},
        headers=AUTH,
    )

    assert result["isError"] is True and "consensus" in result["content"][0]["text"]
    assert gateway.requests == [] and RoutingEntry.objects.count() == 0
