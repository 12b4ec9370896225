"""Grounding of review findings: a finding survives only if its file, line and quoted code exist."""

from __future__ import annotations

import pytest

from supervisor.grounding import ground_findings
from supervisor.tasks import run_skill
from supervisor.tools import start_skill_run

pytestmark = pytest.mark.django_db


def finding(**values):
    base = {"file": "calc.py", "line": 2, "severity": "minor", "title": "t", "rationale": "r", "suggestion": "s", "confidence": 0.5}
    return {**base, **values}


def test_grounding_keeps_real_findings_and_drops_invented_lines_code_and_files(python_project):
    findings = [
        finding(quote="return 2 * x"),
        finding(line=99),
        finding(quote="return x ** 3"),
        finding(file="nope.py"),
        finding(file="../calc/calc.py"),
        finding(file=str(python_project / "calc.py"), line=1, quote="def double(x):"),
    ]

    kept, dropped = ground_findings(python_project, findings)

    assert dropped == 4
    assert [(f["file"], f["line"]) for f in kept] == [("calc.py", 2), ("calc.py", 1)]


def test_review_drops_a_finding_that_cites_a_line_or_code_that_does_not_exist(fake_claude, python_project):
    fake_claude.script([{"report": {"verdict": "request_changes", "summary": "two issues", "findings": [
        finding(quote="return 2 * x", title="real"),
        finding(line=40, title="invented line"),
        finding(quote="os.system(user_input)", title="invented code"),
    ]}}])

    skill_run = start_skill_run("review", {"project_root": str(python_project), "paths": ["calc.py"]})
    run_skill(skill_run.pk)
    skill_run.refresh_from_db()

    result = skill_run.result
    assert result["status"] == "pass" and result["verdict"] == "request_changes"
    assert [f["title"] for f in result["findings"]] == ["real"]
    assert result["dropped_findings"] == 2 and result["verified"] is False
    assert "2 dropped" in result["message"]
    argv = fake_claude.calls()[0]["argv"]
    assert argv[argv.index("--model") + 1] == "opus"  # the table's entry for review
    assert argv[argv.index("--allowedTools") + 1] == "Read,Glob,Grep"
