"""Grounding and gates of review findings: a finding survives only if its file, line and quoted code exist."""

from __future__ import annotations

import pytest

from supervisor.grounding import QUOTE_WINDOW, fingerprint, ground_findings
from tests.fakes.helpers import run_skill_inline

pytestmark = pytest.mark.django_db


def finding(**values):
    base = {
        "file": "calc.py",
        "line": 2,
        "severity": "minor",
        "title": "t",
        "rationale": "r",
        "suggestion": "s",
        "confidence": 0.9,
        "quote": "return 2 * x",
    }
    return {**base, **values}


def test_grounding_keeps_real_findings_and_drops_invented_lines_code_and_files(python_project):
    findings = [
        finding(),
        finding(line=99),
        finding(quote="return x ** 3"),
        finding(file="nope.py"),
        finding(file="../calc/calc.py"),
        finding(file=str(python_project / "calc.py"), line=1, quote="def double(x):"),
    ]

    grounding = ground_findings(python_project, findings)

    assert [(f["file"], f["line"]) for f in grounding.kept] == [("calc.py", 2), ("calc.py", 1)]
    assert [d["gate"] for d in grounding.dropped] == ["line", "quote", "file", "file"]
    assert "line 99 does not exist" in grounding.dropped[0]["reason"]


def test_a_finding_without_a_quote_is_dropped_with_the_reason(python_project):
    no_quote = finding()
    del no_quote["quote"]

    grounding = ground_findings(python_project, [no_quote, finding(quote="  "), finding(quote=")")])

    assert grounding.kept == []
    assert [d["gate"] for d in grounding.dropped] == ["quote", "quote", "quote"]
    assert grounding.dropped[0]["reason"].startswith("no quote")
    assert "too short" in grounding.dropped[2]["reason"]


def test_the_quote_must_lie_within_the_window_of_the_cited_line(allowed_root):
    project = allowed_root / "far"
    project.mkdir()
    lines = [f"value_{n} = {n}" for n in range(1, 41)]
    (project / "mod.py").write_text("\n".join(lines) + "\n")

    near = finding(file="mod.py", line=20, quote=f"value_{20 + QUOTE_WINDOW} = {20 + QUOTE_WINDOW}")
    far = finding(file="mod.py", line=20, quote=f"value_{20 + QUOTE_WINDOW + 1} = {20 + QUOTE_WINDOW + 1}")
    spaced = finding(file="mod.py", line=5, quote="value_5    =\t5")

    grounding = ground_findings(project, [near, far, spaced])

    assert [f["quote"] for f in grounding.kept] == [near["quote"], spaced["quote"]]
    assert grounding.dropped[0]["quote"] == far["quote"] and grounding.dropped[0]["gate"] == "quote"


def test_a_multi_line_quote_must_match_consecutive_lines(python_project):
    real = finding(line=1, quote="def double(x):\n    return 2 * x")
    stitched = finding(line=1, quote="return 2 * x\ndef double(x):")

    grounding = ground_findings(python_project, [real, stitched])

    assert [f["quote"] for f in grounding.kept] == [real["quote"]]


def test_gates_drop_low_confidence_and_missing_rationale_and_refuse_large_patches(python_project, settings):
    settings.SUPERVISOR_MIN_CONFIDENCE = 0.6
    settings.SUPERVISOR_MAX_PATCH_LINES = 2
    big = "\n".join(f"line {n}" for n in range(5))

    grounding = ground_findings(
        python_project,
        [
            finding(confidence=0.59, title="unsure"),
            finding(rationale=" ", title="no why"),
            finding(suggestion=big),
            finding(suggestion="return x * 2"),
        ],
    )

    assert [(d["title"], d["gate"]) for d in grounding.dropped] == [("unsure", "confidence"), ("no why", "rationale")]
    assert "below SUPERVISOR_MIN_CONFIDENCE (0.6)" in grounding.dropped[0]["reason"]
    large, small = grounding.kept
    assert large["patch"] is None and "over SUPERVISOR_MAX_PATCH_LINES (2)" in large["patch_refused"]
    assert small["patch"] == "return x * 2" and small["patch_refused"] == ""


def test_a_bug_fingerprint_is_the_kind_and_the_top_three_identifiers_sorted():
    quoted = {"kind": "Off By One", "quote": "for index in range(len(items) - 1): total += items[index]"}

    assert fingerprint(quoted) == "off-by-one:index,items,total"
    assert fingerprint({"severity": "major", "quote": "return a - b"}) == "major:a,b"


def test_review_drops_a_finding_that_cites_a_line_or_code_that_does_not_exist(fake_claude, python_project):
    fake_claude.script(
        [
            {
                "report": {
                    "verdict": "request_changes",
                    "summary": "two issues",
                    "findings": [
                        finding(title="real"),
                        finding(line=40, title="invented line"),
                        finding(quote="os.system(user_input)", title="invented code"),
                    ],
                }
            }
        ]
    )

    skill_run = run_skill_inline("review", {"project_root": str(python_project), "paths": ["calc.py"]})

    result = skill_run.result
    assert result["status"] == "pass" and result["verdict"] == "request_changes" and result["verified"] is True
    assert [f["title"] for f in result["findings"]] == ["real"]
    assert [(d["title"], d["gate"]) for d in result["dropped_findings"]] == [
        ("invented line", "line"),
        ("invented code", "quote"),
    ]
    assert "2 dropped" in result["message"]
    argv = fake_claude.calls()[0]["argv"]
    assert argv[argv.index("--model") + 1] == "opus"  # the table's entry for review
    assert argv[argv.index("--allowedTools") + 1] == "Read,Glob,Grep"


def test_a_review_whose_findings_were_all_dropped_is_not_verified(fake_claude, python_project):
    fake_claude.script(
        [
            {
                "report": {
                    "verdict": "comment",
                    "summary": "made up",
                    "findings": [
                        finding(quote="os.system(user_input)", title="invented code"),
                    ],
                }
            }
        ]
    )

    skill_run = run_skill_inline("review", {"project_root": str(python_project), "paths": ["calc.py"]})

    assert skill_run.status == "fail" and skill_run.verified is False
    assert "all 1 finding(s) were dropped" in skill_run.result["message"]
    assert skill_run.result["dropped_findings"][0]["title"] == "invented code"


def test_a_review_that_asks_for_changes_without_findings_is_not_verified(fake_claude, python_project):
    fake_claude.script([{"report": {"verdict": "request_changes", "summary": "trust me", "findings": []}}])

    skill_run = run_skill_inline("review", {"project_root": str(python_project), "paths": ["calc.py"]})

    assert skill_run.status == "fail" and skill_run.verified is False
    assert "no grounded finding" in skill_run.result["message"]
