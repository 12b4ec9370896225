"""GET /routing/stats, the /mcp/routing tool contract and its access rules, the settings checks."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from hyperguild.mcp.contracts import output_schema
from hyperguild.mcp.registry import get_endpoint
from ledger.usage import UsageReport
from supervisor import skills
from supervisor.models import RoutingEntry
from supervisor.system_checks import routing_problems
from tests.conftest import call_tool, mcp_post, rest_error, rpc
from tests.fakes.openai import Reply
from tests.routing.conftest import AUTH, FAST, GOOD_REVIEW, THINKING, log, seed_history

REPO = Path(__file__).resolve().parents[2]


# --- /routing/stats ----------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_stats_report_pass_rates_model_counts_and_the_fast_share(asgi_server):
    log("review", FAST, "floor", "pass")
    log("review", FAST, "floor", "pass")
    first = log("review", FAST, "floor", "fail", is_final=False)
    log("review", THINKING, "fail-open retry", "pass", attempt_of=first)
    log("debug", THINKING, "ceil", "fail")
    log("debug", THINKING, "ceil", "pass", hours_ago=48)  # outside the window

    response = httpx.get(f"{asgi_server}/routing/stats?window=24", headers=AUTH)

    assert response.status_code == 200, response.text
    body = response.json()
    assert body["calls"] == 4
    assert body["calls_by_model"] == {FAST: 2, THINKING: 2}
    assert body["fast_share"] == 0.5
    assert body["skills"]["review"] == {
        "calls": 3,
        "pass_rate": 1.0,
        "router_pass_rate": pytest.approx(0.6667),
        "calls_by_model": {FAST: 2, THINKING: 1},
        "fast_share": pytest.approx(0.6667),
        "fail_open_retries": 1,
        "outages": 0,
    }
    assert body["skills"]["debug"]["pass_rate"] == 0.0
    assert body["window_hours"] == 24
    assert body["settings"]["fast_model"] == FAST


@pytest.mark.django_db(transaction=True)
def test_stats_over_a_wider_window_include_older_calls(asgi_server):
    log("debug", THINKING, "ceil", "pass", hours_ago=48)
    body = httpx.get(f"{asgi_server}/routing/stats?window=72", headers=AUTH).json()
    assert body["skills"]["debug"]["calls"] == 1


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic cm91dGluZw=="}])
def test_stats_refuse_a_missing_or_wrong_token(asgi_server, headers):
    response = httpx.get(f"{asgi_server}/routing/stats", headers=headers)
    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"].startswith("Bearer")
    rest_error(response)


@pytest.mark.django_db(transaction=True)
def test_stats_refuse_the_brain_token(asgi_server, settings):
    settings.BRAIN_MCP_TOKEN = "brain-secret"
    response = httpx.get(f"{asgi_server}/routing/stats", headers={"Authorization": "Bearer brain-secret"})
    assert response.status_code == 401


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("window", ["0", "-3", "abc", "100000"])
def test_stats_refuse_a_bad_window(asgi_server, window):
    response = httpx.get(f"{asgi_server}/routing/stats", params={"window": window}, headers=AUTH)
    assert response.status_code == 400
    assert "window" in rest_error(response)["details"]


@pytest.mark.django_db(transaction=True)
def test_stats_are_read_only(asgi_server):
    response = httpx.post(f"{asgi_server}/routing/stats", headers=AUTH, json={})
    assert response.status_code == 405
    assert RoutingEntry.objects.count() == 0


# --- the tool contract ----------------------------------------------------------------


def test_the_routing_tools_share_their_schemas_with_the_supervisor_skills():
    tools = get_endpoint("routing").tools
    assert {"review", "debug"} <= set(tools)
    for name in tools:
        assert tools[name].input_schema == skills.input_schema(name)
        expected = skills.result_schema(name)
        if tools[name].reports_usage:  # a tool that asks a model says what it cost (issue 39)
            assert output_schema(UsageReport)["properties"].items() <= expected["properties"].items()
        assert tools[name].output_schema == expected
    assert tools["review"].reports_usage and tools["retrospective"].reports_usage and not tools["trainer"].reports_usage
    assert tools["review"].read_only is True
    assert set(tools["review"].input_schema["properties"]) == {
        "project_root",
        "paths",
        "git_range",
        "focus",
        "consensus",
        "model",
        "session_id",
    }
    assert tools["debug"].input_schema["required"] == ["project_root", "symptom", "failing_cmd"]


@pytest.mark.django_db(transaction=True)
def test_a_project_root_outside_the_allowed_roots_is_refused_and_nothing_is_logged(
    gateway, project, asgi_server, tmp_path_factory
):
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    (elsewhere / "app.py").write_text("x = 1\n")
    result = call_tool(
        f"{asgi_server}/mcp/routing", "review", {"project_root": str(elsewhere), "paths": ["app.py"]}, headers=AUTH
    )
    assert result["isError"] is True
    assert "SUPERVISOR_ALLOWED_ROOTS" in result["content"][0]["text"]
    assert RoutingEntry.objects.count() == 0
    assert gateway.requests == []


@pytest.mark.django_db(transaction=True)
def test_a_path_that_climbs_out_of_the_project_is_refused_and_nothing_is_logged(gateway, project, asgi_server):
    result = call_tool(
        f"{asgi_server}/mcp/routing",
        "review",
        {"project_root": str(project), "paths": ["../../etc/passwd"]},
        headers=AUTH,
    )
    assert result["isError"] is True
    assert ".." in result["content"][0]["text"]
    assert RoutingEntry.objects.count() == 0
    assert gateway.requests == []


@pytest.mark.django_db(transaction=True)
def test_bad_arguments_are_refused_before_anything_runs(gateway, project, asgi_server):
    result = call_tool(f"{asgi_server}/mcp/routing", "review", {"project_root": str(project), "bogus": 1}, headers=AUTH)
    assert result["isError"] is True
    assert RoutingEntry.objects.count() == 0
    assert gateway.requests == []


@pytest.mark.django_db(transaction=True)
def test_without_a_gateway_the_tools_say_what_to_set_and_log_nothing(project, asgi_server, settings):
    settings.LITELLM_BASE_URL = ""
    result = call_tool(
        f"{asgi_server}/mcp/routing", "review", {"project_root": str(project), "paths": ["app.py"]}, headers=AUTH
    )
    assert result["isError"] is True
    assert "LITELLM_BASE_URL" in result["content"][0]["text"]
    assert RoutingEntry.objects.count() == 0


@pytest.mark.django_db(transaction=True)
def test_the_routing_endpoint_refuses_a_call_without_its_token(gateway, project, asgi_server):
    response = mcp_post(
        f"{asgi_server}/mcp/routing",
        rpc("tools/call", {"name": "review", "arguments": {"project_root": str(project), "paths": ["app.py"]}}),
    )
    assert response.status_code == 401
    assert RoutingEntry.objects.count() == 0
    assert gateway.requests == []


@pytest.mark.django_db(transaction=True)
def test_debug_runs_the_failing_command_and_returns_the_routed_diagnosis(gateway, project, asgi_server):
    seed_history("debug", 0.95)
    (project / "test_app.py").write_text("from app import add\n\n\ndef test_add():\n    assert add(2, 2) == 4\n")
    diagnosis = {
        "hypotheses": [{"hypothesis": "add subtracts", "evidence": "app.py line 2 returns a - b", "ruled_out": False}],
        "root_cause": "add uses - instead of +",
        "fix": "return a + b",
        "files_changed": ["app.py"],
    }
    gateway.on(FAST, lambda request: Reply.json(diagnosis))

    result = call_tool(
        f"{asgi_server}/mcp/routing",
        "debug",
        {
            "project_root": str(project),
            "symptom": "test_app.py fails",
            "failing_cmd": f"{sys.executable} -c \"import app; assert app.add(2, 2) == 4, 'add(2,2) != 4 in app.py'\"",
            "session_id": "s-debug",
        },
        headers=AUTH,
    )

    assert result.get("isError") is not True, result
    content = result["structuredContent"]
    assert content["root_cause"] == "add uses - instead of +"
    assert content["model_used"] == FAST
    assert "add(2,2) != 4" in content["runner_output"]
    prompt = gateway.requests[0].body["messages"][1]["content"]
    assert "return a - b" in prompt  # app.py was named in the output, so the model saw it
    assert RoutingEntry.objects.get(session_id="s-debug").status == "pass"


@pytest.mark.django_db(transaction=True)
def test_review_of_a_git_range_sends_the_diff(gateway, project, asgi_server):
    seed_history("review", 0.95)
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    for command in (["git", "init", "-q"], ["git", "add", "."], ["git", "commit", "-qm", "one"]):
        subprocess.run(command, cwd=project, check=True, env=env)
    (project / "app.py").write_text("def add(a, b):\n    return a - b\n\n\ndef double(x):\n    return x * 3\n")
    subprocess.run(["git", "commit", "-qam", "two"], cwd=project, check=True, env=env)
    gateway.on(FAST, lambda request: Reply.json(GOOD_REVIEW))

    result = call_tool(
        f"{asgi_server}/mcp/routing",
        "review",
        {"project_root": str(project), "git_range": "HEAD~1..HEAD"},
        headers=AUTH,
    )

    assert result.get("isError") is not True, result
    assert "+    return x * 3" in gateway.requests[0].body["messages"][1]["content"]


@pytest.mark.django_db(transaction=True)
def test_review_refuses_a_git_range_that_git_would_read_as_an_option(gateway, project, asgi_server):
    result = call_tool(
        f"{asgi_server}/mcp/routing", "review", {"project_root": str(project), "git_range": "--ext-diff"}, headers=AUTH
    )

    assert result["isError"] is True and "starts with '-'" in result["content"][0]["text"]
    assert gateway.requests == [] and RoutingEntry.objects.count() == 0


@pytest.mark.django_db(transaction=True)
def test_review_of_a_git_range_git_cannot_read_is_a_tool_error_and_nothing_is_asked(gateway, project, asgi_server):
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)

    result = call_tool(
        f"{asgi_server}/mcp/routing", "review", {"project_root": str(project), "git_range": "nope..HEAD"}, headers=AUTH
    )

    assert result["isError"] is True and "git diff nope..HEAD failed" in result["content"][0]["text"]
    assert gateway.requests == [] and RoutingEntry.objects.count() == 0


# --- settings that contradict each other --------------------------------------------


def test_ceil_above_floor_is_a_configuration_error(settings):
    settings.HYPERGUILD_ROUTE_LOCAL_CEIL = 0.95
    settings.HYPERGUILD_ROUTE_LOCAL_FLOOR = 0.90
    [problem] = routing_problems()
    assert "HYPERGUILD_ROUTE_LOCAL_CEIL=0.95 is above HYPERGUILD_ROUTE_LOCAL_FLOOR=0.9" in problem


def test_a_rate_outside_0_to_1_is_a_configuration_error(settings):
    settings.HYPERGUILD_ROUTE_LOCAL_FLOOR = 1.5
    assert any("HYPERGUILD_ROUTE_LOCAL_FLOOR=1.5" in p and "between 0 and 1" in p for p in routing_problems())


def test_min_samples_above_the_window_is_allowed(settings):
    settings.HYPERGUILD_ROUTE_MIN_SAMPLES = 500
    settings.HYPERGUILD_ROUTE_WINDOW = 50
    assert routing_problems() == []


def test_start_up_stops_on_contradictory_routing_settings():
    env = {**os.environ, "HYPERGUILD_ROUTE_LOCAL_CEIL": "0.95", "HYPERGUILD_ROUTE_LOCAL_FLOOR": "0.9"}
    completed = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )
    assert completed.returncode != 0
    assert "HYPERGUILD_ROUTE_LOCAL_CEIL=0.95 is above HYPERGUILD_ROUTE_LOCAL_FLOOR=0.9" in completed.stderr


def test_the_routed_prompt_uses_the_supervisors_discipline_file(settings, tmp_path):
    from supervisor.routing_service import discipline

    (tmp_path / "review.md").write_text("# House review rules\n")
    settings.SUPERVISOR_CONFIG_DIR = str(tmp_path)
    assert discipline("review") == "# House review rules\n"
    settings.SUPERVISOR_CONFIG_DIR = str(tmp_path / "missing")
    assert "You review code" in discipline("review")
