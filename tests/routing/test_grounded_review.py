"""Routed review and debug: strict grounding, gates, and the tree-split of long files, against a scripted gateway."""

from __future__ import annotations

import json
import re
import sys

import pytest

from supervisor.models import RoutingEntry
from supervisor.tree_split import SCRATCHPAD_OPEN, split_parts
from tests.conftest import call_tool
from tests.fakes.openai import Reply
from tests.routing.conftest import AUTH, FAST, GOOD_REVIEW, THINKING, seed_history

pytestmark = pytest.mark.django_db(transaction=True)

REAL = GOOD_REVIEW["findings"][0]


def review(asgi_server: str, project, session_id: str, paths=("app.py",)) -> dict:
    arguments = {"project_root": str(project), "paths": list(paths), "session_id": session_id}
    return call_tool(f"{asgi_server}/mcp/routing", "review", arguments, headers=AUTH)


def test_a_finding_with_a_fabricated_quote_is_dropped_with_the_reason(gateway, project, asgi_server):
    seed_history("review", 0.95)
    fabricated = {**REAL, "title": "invented", "line": 2, "quote": "return eval(a) - b"}
    gateway.on(FAST, lambda request: Reply.json({**GOOD_REVIEW, "findings": [REAL, fabricated]}))

    content = review(asgi_server, project, "s-fab")["structuredContent"]

    assert (content["status"], content["verified"], content["model_used"]) == ("pass", True, FAST)
    assert [f["title"] for f in content["findings"]] == ["add subtracts"]
    assert content["findings"][0]["patch"] == "return a + b"
    [dropped] = content["dropped_findings"]
    assert (dropped["title"], dropped["gate"]) == ("invented", "quote")
    assert "not in app.py within 3 lines of line 2" in dropped["reason"]


def test_a_review_whose_findings_were_all_dropped_is_not_verified(gateway, project, asgi_server):
    seed_history("review", 0.95)
    no_quote = {key: value for key, value in REAL.items() if key != "quote"}
    gateway.on(FAST, lambda request: Reply.json({**GOOD_REVIEW, "findings": [no_quote]}))
    gateway.on(THINKING, lambda request: Reply.json({**GOOD_REVIEW, "findings": [{**REAL, "quote": "os.system(x)"}]}))

    result = review(asgi_server, project, "s-none")

    assert result.get("isError") is not True, result
    content = result["structuredContent"]
    assert (content["status"], content["verified"], content["attempts"]) == ("fail", False, 2)
    assert content["findings"] == [] and content["dropped_findings"][0]["gate"] == "quote"
    assert "no quote" in RoutingEntry.objects.get(session_id="s-none", model=FAST).error
    assert set(RoutingEntry.objects.filter(session_id="s-none").values_list("status", flat=True)) == {"fail"}


def test_a_finding_below_the_confidence_floor_is_dropped_with_the_reason(gateway, project, asgi_server, settings):
    settings.SUPERVISOR_MIN_CONFIDENCE = 0.6
    seed_history("review", 0.95)
    unsure = {**REAL, "title": "maybe double", "line": 6, "quote": "return x * 2", "confidence": 0.3}
    gateway.on(FAST, lambda request: Reply.json({**GOOD_REVIEW, "findings": [REAL, unsure]}))

    content = review(asgi_server, project, "s-conf")["structuredContent"]

    assert [f["title"] for f in content["findings"]] == ["add subtracts"]
    [dropped] = content["dropped_findings"]
    assert dropped["gate"] == "confidence"
    assert dropped["reason"] == "confidence 0.3 is below SUPERVISOR_MIN_CONFIDENCE (0.6)"


def big_module() -> str:
    """~200 KB of plain functions; only the last one has a bug (it subtracts)."""
    blocks = []
    for n in range(1200):
        blocks.append(
            f"def helper_{n}(values):\n"
            f'    """Sum the values scaled by {n}: a harmless helper, one of many."""\n'
            f"    total = 0\n"
            f"    for value in values:\n"
            f"        total += value * {n}\n"
            f"    return total\n"
        )
    blocks.append('def add_totals(a, b):\n    """The sum of two totals."""\n    return a - b\n')
    return "\n\n".join(blocks)


NUMBERED = re.compile(r"^\s*(\d+)  (.*)$")


def scripted_reviewer(seen: dict):
    """Answers like a careful model: summaries as text; reviews cite the numbered line they can see."""

    def answer(request: dict) -> Reply:
        system, user = request["messages"][0]["content"], request["messages"][-1]["content"]
        seen.setdefault("sizes", []).append(len(user))
        if system.startswith("Summarise"):
            seen["summaries"] = seen.get("summaries", 0) + 1
            return Reply.text("helpers that sum scaled values" if "add_totals" not in user else "add_totals(a, b)")
        seen["reviews"] = seen.get("reviews", 0) + 1
        seen.setdefault("scratchpads", []).append(SCRATCHPAD_OPEN in user)
        for line in user.splitlines():
            match = NUMBERED.match(line)
            if match and match.group(2).strip() == "return a - b":
                return Reply.json(
                    {
                        "findings": [
                            {**REAL, "file": "big.py", "line": int(match.group(1)), "title": "add_totals subtracts"}
                        ],
                        "verdict": "request_changes",
                        "summary": "add_totals subtracts",
                    }
                )
        return Reply.json({"findings": [], "verdict": "approve", "summary": "nothing wrong here"})

    return answer


def test_a_200_kb_file_whose_only_bug_is_in_its_last_function_gets_a_grounded_finding(gateway, project, asgi_server):
    seed_history("review", 0.95)
    text = big_module()
    assert len(text) > 200_000
    (project / "big.py").write_text(text)
    bug_line = text.splitlines().index("    return a - b") + 1
    seen: dict = {}
    gateway.on(FAST, scripted_reviewer(seen))

    result = review(asgi_server, project, "s-big", paths=("big.py",))

    content = result["structuredContent"]
    assert (content["status"], content["verified"]) == ("pass", True), content["message"]
    [finding] = content["findings"]
    assert (finding["file"], finding["line"], finding["title"]) == ("big.py", bug_line, "add_totals subtracts")
    assert content["verdict"] == "request_changes" and "Tree-split into" in content["message"]
    parts = split_parts(text)
    assert seen["summaries"] == len(parts) == seen["reviews"] and len(parts) > 3
    assert all(seen["scratchpads"])
    assert max(seen["sizes"]) < 100_000  # no call carries the whole file
    # Every part starts at a function boundary.
    assert all(part.text.startswith("def ") for part in parts)


def test_a_quote_copied_from_the_scratchpad_is_not_grounded(gateway, project, asgi_server):
    seed_history("review", 0.95)
    (project / "big.py").write_text(big_module())
    gateway.on(
        FAST,
        lambda request: (
            Reply.text("helpers that sum scaled values")
            if request["messages"][0]["content"].startswith("Summarise")
            else Reply.json(
                {
                    "findings": [{**REAL, "file": "big.py", "line": 3, "quote": "helpers that sum scaled values"}],
                    "verdict": "comment",
                    "summary": "s",
                }
            )
        ),
    )
    gateway.on(THINKING, lambda request: Reply.json({"findings": [], "verdict": "approve", "summary": "fine"}))

    content = review(asgi_server, project, "s-pad", paths=("big.py",))["structuredContent"]

    assert content["model_used"] == THINKING and content["findings"] == []
    first = RoutingEntry.objects.get(session_id="s-pad", model=FAST)
    assert first.status == "fail" and "not in big.py" in first.error


def test_routed_debug_grounds_its_findings_and_shows_the_cited_part_of_a_long_file(gateway, project, asgi_server):
    text = big_module()
    (project / "big.py").write_text(text)
    bug_line = text.splitlines().index("    return a - b") + 1
    (project / "test_big.py").write_text(
        "from big import add_totals\n\n\ndef test_add():\n    assert add_totals(2, 2) == 4\n"
    )
    requests: list[str] = []

    def answer(request: dict) -> Reply:
        if request["messages"][0]["content"].startswith("Summarise"):
            return Reply.text("summary")
        requests.append(request["messages"][-1]["content"])
        return Reply.json(
            {
                "hypotheses": [{"hypothesis": "add_totals subtracts", "evidence": "4 != 0"}],
                "root_cause": "add_totals subtracts",
                "fix": "return a + b",
                "findings": [
                    {**REAL, "file": "big.py", "line": bug_line, "title": "subtracts"},
                    {**REAL, "file": "big.py", "line": 1, "title": "invented", "quote": "import os"},
                ],
            }
        )

    gateway.default = answer
    command = f"{sys.executable} -c \"import big; assert big.add_totals(2, 2) == 4, 'big.py:{bug_line}'\""
    result = call_tool(
        f"{asgi_server}/mcp/routing",
        "debug",
        {"project_root": str(project), "symptom": "add_totals is wrong", "failing_cmd": command},
        headers=AUTH,
    )

    content = result["structuredContent"]
    assert content["status"] == "pass", content
    assert [f["title"] for f in content["findings"]] == ["subtracts"]
    assert content["dropped_findings"][0]["title"] == "invented"
    assert "return a - b" in requests[-1] and SCRATCHPAD_OPEN in requests[-1]
    entry = RoutingEntry.objects.get(is_final=True, skill="debug")
    assert entry.pathway.signal == "assertion" and entry.pathway.area == "big.py"
    assert json.loads(entry.response)["root_cause"] == "add_totals subtracts"
