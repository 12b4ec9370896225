"""Consensus reviews on /mcp/supervisor: independent fake-`claude` reviewers, a finding kept only where two agree."""

from __future__ import annotations

import pytest

from supervisor.consensus import ReviewAnswer, agree
from supervisor.grounding import Grounding
from supervisor.tasks import run_skill
from supervisor.tools import start_skill_run

pytestmark = pytest.mark.django_db


def bug(title: str, line: int, quote: str, kind: str = "logic", **extra) -> dict:
    return {
        "file": "calc.py",
        "line": line,
        "severity": "major",
        "kind": kind,
        "title": title,
        "rationale": f"{title}: wrong",
        "suggestion": "fix it",
        "confidence": 0.9,
        "quote": quote,
        **extra,
    }


def answer(*findings: dict) -> dict:
    return {"report": {"verdict": "request_changes", "summary": "review", "findings": list(findings)}}


def test_consensus_three_runs_three_reviewers_from_the_model_table_and_keeps_what_two_agree_on(
    fake_claude, python_project, settings, tmp_path
):
    table = tmp_path / "models.yaml"
    table.write_text("default: sonnet\nskills:\n  review: opus\nconsensus: [opus, sonnet, haiku]\n")
    settings.SUPERVISOR_MODELS_FILE = str(table)
    fake_claude.script(
        [
            answer(bug("doubles wrong", 2, "return 2 * x")),
            answer(
                bug("double multiplies", 2, "return 2 * x", confidence=0.95), bug("name", 1, "def double(x):", "naming")
            ),
            answer(bug("signature", 1, "def double(x):", "api")),
        ]
    )

    run = start_skill_run("review", {"project_root": str(python_project), "paths": ["calc.py"], "consensus": 3})
    run_skill(run.pk)
    run.refresh_from_db()

    result = run.result
    assert (result["status"], result["verified"], result["attempts"]) == ("pass", True, 3)
    [kept] = result["findings"]
    assert (kept["title"], kept["agreed_by"]) == ("double multiplies", [1, 2])
    # Same lines but another kind of bug is no agreement: both lone findings are dropped.
    assert sorted((d["title"], d["gate"], d["review"]) for d in result["dropped_findings"]) == [
        ("name", "consensus", 2),
        ("signature", "consensus", 3),
    ]
    models = [call["argv"][call["argv"].index("--model") + 1] for call in fake_claude.calls()]
    assert models == ["opus", "sonnet", "haiku"]
    assert result["model_used"] == "opus, sonnet, haiku" and run.model == "opus, sonnet, haiku"
    assert [entry["model"] for entry in run.attempt_log] == ["opus", "sonnet", "haiku"]


def test_without_table_reviewers_a_consensus_is_independent_samples_of_the_review_model(fake_claude, python_project):
    fake_claude.script([answer(bug("a", 2, "return 2 * x")), answer(bug("b", 1, "def double(x):"))])

    run = start_skill_run("review", {"project_root": str(python_project), "paths": ["calc.py"], "consensus": 2})
    run_skill(run.pk)
    run.refresh_from_db()

    # The two reviews disagree: nothing is kept, so the review is not verified.
    assert (run.result["status"], run.result["verified"], run.result["findings"]) == ("fail", False, [])
    assert {d["gate"] for d in run.result["dropped_findings"]} == {"consensus"}
    models = [call["argv"][call["argv"].index("--model") + 1] for call in fake_claude.calls()]
    assert models == ["opus", "opus"]


def test_agreement_needs_the_same_file_kind_and_overlapping_quoted_lines(python_project):
    def review(number: int, *findings: dict) -> ReviewAnswer:
        return ReviewAnswer(number, f"m{number}", Grounding(kept=list(findings)))

    # Cited lines 1 and 2, but both quote line 2: the quote's place decides, not the cited number.
    outcome = agree(python_project, [review(1, bug("x", 1, "return 2 * x")), review(2, bug("y", 2, "return 2 * x"))])
    assert [f["agreed_by"] for f in outcome.grounding.kept] == [[1, 2]]

    outcome = agree(python_project, [review(1, bug("x", 1, "def double(x):")), review(2, bug("y", 2, "return 2 * x"))])
    assert outcome.grounding.kept == [] and len(outcome.grounding.dropped) == 2
