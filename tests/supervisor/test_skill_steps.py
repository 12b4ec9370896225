"""Review, debug and consensus are written once (supervisor.skill_steps) for both backends.

The `claude` worker (a fake `claude` executable) and the routed model (a fake OpenAI-compatible
gateway on 127.0.0.1) give the same answer; the skill's grounding and result are then the same.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

import supervisor
from supervisor import routing_service
from supervisor.skills import DebugInput, ReviewInput
from tests.fakes.helpers import run_skill_inline
from tests.fakes.openai import Reply

pytestmark = pytest.mark.django_db(transaction=True)

FAST, THINKING = "fast-model", "thinking-model"
# The parts of a skill's judgement: called from the skill steps alone, never from a backend.
JUDGEMENT = {"ground_findings", "review_verified", "agree", "check_review", "check_debug"}
OWN_MODULES = {"skill_steps.py", "grounding.py", "consensus.py"}


def finding(**values: object) -> dict[str, object]:
    base = {
        "file": "calc.py",
        "line": 2,
        "severity": "major",
        "title": "doubles wrong",
        "rationale": "the docstring says triple",
        "suggestion": "return 3 * x",
        "confidence": 0.9,
        "quote": "return 2 * x",
    }
    return {**base, **values}


REVIEW = {
    "verdict": "request_changes",
    "summary": "one real bug, one invented",
    "findings": [finding(), finding(title="invented", line=1, quote="os.system(x)")],
}
DIAGNOSIS = {
    "hypotheses": [{"hypothesis": "double multiplies by 2", "evidence": "calc.py:2", "ruled_out": False}],
    "root_cause": "double returns 2 * x",
    "fix": "return 3 * x",
    "findings": [finding()],
}
SHARED_REVIEW_FIELDS = ("status", "verified", "verdict", "findings", "dropped_findings", "summary", "reviewed_commit")
SHARED_DEBUG_FIELDS = ("hypotheses", "root_cause", "fix", "findings", "dropped_findings", "reviewed_commit")


@pytest.fixture
def both_backends(fake_claude, gateway, settings):
    """The fake claude for /mcp/supervisor and the fake gateway for /mcp/routing, both answering `answer`."""
    settings.HYPERGUILD_FAST_MODEL, settings.HYPERGUILD_THINKING_MODEL = FAST, THINKING

    def answer(report: dict[str, object]) -> None:
        fake_claude.script([{"report": report}])
        for model in (FAST, THINKING):
            gateway.on(model, lambda request: Reply.json(report))

    return answer


def test_the_judgement_of_review_debug_and_consensus_is_called_from_the_skill_steps_alone():
    folder = Path(supervisor.__file__).parent
    callers = {}
    for path in sorted(folder.glob("*.py")):
        if path.name in OWN_MODULES:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
                if name in JUDGEMENT:
                    callers.setdefault(path.name, set()).add(name)

    assert callers == {}


def test_one_review_answer_is_grounded_and_judged_the_same_by_both_backends(both_backends, python_project):
    both_backends(REVIEW)

    worker = run_skill_inline("review", {"project_root": str(python_project), "paths": ["calc.py"]}).result
    routed = routing_service.review(
        ReviewInput(project_root=str(python_project), paths=["calc.py"]), lambda *a: None, lambda: False
    ).model_dump(mode="json")

    assert (worker["status"], worker["verified"], [f["title"] for f in worker["findings"]]) == (
        "pass",
        True,
        ["doubles wrong"],
    )
    assert [(d["title"], d["gate"]) for d in worker["dropped_findings"]] == [("invented", "quote")]
    assert {name: routed[name] for name in SHARED_REVIEW_FIELDS} == {
        name: worker[name] for name in SHARED_REVIEW_FIELDS
    }
    assert worker["message"].startswith("1 grounded finding(s); 1 dropped")
    assert routed["message"].startswith(worker["message"] + ". Answered by ")


def test_one_diagnosis_is_grounded_the_same_by_both_backends_and_only_the_worker_is_verified(
    both_backends, python_project
):
    both_backends(DIAGNOSIS)
    failing = f"{sys.executable} -c \"import calc; assert calc.double(2) == 6, 'calc.py:2'\""
    arguments = {"project_root": str(python_project), "symptom": "double(2) is not 6", "failing_cmd": failing}

    worker = run_skill_inline("debug", arguments).result
    routed = routing_service.debug(DebugInput(**arguments), lambda *a: None, lambda: False).model_dump(mode="json")

    assert {name: routed[name] for name in SHARED_DEBUG_FIELDS} == {name: worker[name] for name in SHARED_DEBUG_FIELDS}
    assert [f["title"] for f in worker["findings"]] == ["doubles wrong"]
    # The worker may edit files: its fix is verified by re-running failing_cmd (the fake edits nothing).
    assert (worker["status"], worker["verified"], worker["failing_cmd_passes"]) == ("fail", False, False)
    # The routed model only answers: a diagnosis, failing_cmd run before it, nothing verified.
    assert (routed["status"], routed["verified"], routed["failing_cmd_passes"]) == ("pass", None, None)
    assert "AssertionError" in routed["runner_output"] and routed["message"].startswith(
        "Diagnosis only (failing_cmd exit code 1"
    )
