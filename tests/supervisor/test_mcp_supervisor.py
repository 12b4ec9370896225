"""The supervisor endpoint over real HTTP: roots refused, progress streamed, cancellation kills the worker."""

from __future__ import annotations

import time

import anyio
import pytest
from mcp.client.client import Client

from supervisor.models import SkillRun
from tests.conftest import call_tool
from tests.supervisor.conftest import process_alive

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def supervisor_url(asgi_server, settings):
    settings.SUPERVISOR_MCP_TOKEN = ""
    return f"{asgi_server}/mcp/supervisor"


def test_the_endpoint_lists_every_skill_with_its_schemas(supervisor_url):
    async def scenario():
        async with Client(supervisor_url, mode="legacy") as client:
            return (await client.list_tools()).tools

    tools = {tool.name: tool for tool in anyio.run(scenario)}
    assert {"tdd_red", "tdd_green", "tdd_refactor", "review", "debug", "spec", "tier"} <= set(tools)
    assert tools["tdd_red"].input_schema["required"] == ["project_root", "spec"]
    assert tools["tdd_green"].input_schema["required"] == ["project_root", "test_path"]
    assert tools["tdd_refactor"].input_schema["required"] == ["project_root", "test_path", "impl_path"]
    assert tools["debug"].input_schema["required"] == ["project_root", "symptom", "failing_cmd"]
    assert "verified" in tools["review"].output_schema["required"]


@pytest.mark.parametrize("case", ["outside", "symlink", "dotdot", "test_path_dotdot", "relative"])
def test_a_project_root_outside_the_allowed_roots_is_refused_and_nothing_runs(
    supervisor_url, fake_claude, python_project, allowed_root, tmp_path, case
):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "pyproject.toml").write_text("")
    link = allowed_root / "link"
    link.symlink_to(outside)
    arguments = {
        "outside": {"project_root": str(outside), "spec": "x"},
        "symlink": {"project_root": str(link), "spec": "x"},
        "dotdot": {"project_root": f"{python_project}/../../elsewhere", "spec": "x"},
        "test_path_dotdot": {"project_root": str(python_project), "spec": "x", "test_path": "../../elsewhere/t.py"},
        "relative": {"project_root": "allowed/calc", "spec": "x"},
    }[case]

    result = call_tool(supervisor_url, "tdd_red", arguments)

    assert result["isError"] is True
    assert any(word in result["content"][0]["text"] for word in ("outside", "'..'", "absolute"))
    assert SkillRun.objects.count() == 0
    time.sleep(0.3)
    assert fake_claude.calls() == []  # the fake never ran


def test_no_allowed_roots_configured_means_nothing_is_allowed(supervisor_url, fake_claude, python_project, settings):
    settings.SUPERVISOR_ALLOWED_ROOTS = []

    result = call_tool(supervisor_url, "review", {"project_root": str(python_project), "paths": ["calc.py"]})

    assert result["isError"] is True and "SUPERVISOR_ALLOWED_ROOTS" in result["content"][0]["text"]
    assert SkillRun.objects.count() == 0 and fake_claude.calls() == []


def test_a_long_call_streams_progress_and_returns_the_verified_result(
    supervisor_url, fake_claude, python_project, skill_worker, tmp_path
):
    test = "def test_add():\n    from calc import add\n    assert add(1, 2) == 3\n"
    # The worker works until the caller has been told it runs (at most 5 s): the progress comes during the call.
    worker_seen = tmp_path / "worker-running-seen"
    fake_claude.script(
        [
            {
                "sleep": 5,
                "tick": 0.2,
                "until": str(worker_seen),
                "write": {"tests/test_add.py": test},
                "report": {"status": "done", "file_path": "tests/test_add.py", "summary": "ok"},
            }
        ]
    )
    seen: list[str] = []

    async def on_progress(progress, total, message):
        seen.append(message or "")
        if "attempt 1: worker running" in (message or ""):
            worker_seen.touch()

    async def scenario():
        async with Client(supervisor_url, mode="legacy") as client:
            return await client.call_tool(
                "tdd_red",
                {"project_root": str(python_project), "spec": "add", "session_id": "sess-9"},
                progress_callback=on_progress,
            )

    result = anyio.run(scenario)

    assert result.is_error is False
    assert result.structured_content["verified"] is True and result.structured_content["status"] == "pass"
    assert any("attempt 1: worker running" in message for message in seen)
    assert any("verifying" in message for message in seen)
    run = SkillRun.objects.get(pk=result.structured_content["run_id"])
    assert run.session_id == "sess-9" and run.status == "pass"


def test_a_client_cancellation_kills_the_worker_process_group(
    supervisor_url, fake_claude, python_project, skill_worker
):
    fake_claude.script([{"hang": True, "children": 2}])

    async def scenario():
        async with Client(supervisor_url, mode="legacy") as client:
            async with anyio.create_task_group() as group:

                async def call():
                    await client.call_tool(
                        "tdd_red", {"project_root": str(python_project), "spec": "add"}, progress_callback=_ignore
                    )

                group.start_soon(call)
                await anyio.to_thread.run_sync(_wait_for_pids, fake_claude)
                group.cancel_scope.cancel()  # sends notifications/cancelled
            await anyio.to_thread.run_sync(_wait_for_finished_run)

    anyio.run(scenario)

    run = SkillRun.objects.get()
    assert run.cancel_requested is True and run.status == "cancelled"
    pids = fake_claude.pids()
    assert len(pids) == 3 and not [pid for pid in pids if process_alive(pid)]


async def _ignore(progress, total, message):
    return None


def _wait_for_pids(fake_claude) -> None:
    deadline = time.monotonic() + 20
    while len(fake_claude.pids()) < 3:
        assert time.monotonic() < deadline, "the worker never started"
        time.sleep(0.05)


def _wait_for_finished_run() -> None:
    deadline = time.monotonic() + 30
    while not SkillRun.objects.exclude(status__in=SkillRun.UNFINISHED).exists():
        assert time.monotonic() < deadline, "the run did not stop"
        time.sleep(0.1)


def test_tier_over_mcp(supervisor_url, settings):
    settings.SUPERVISOR_TIER_ANTHROPIC_URL = ""
    settings.SUPERVISOR_TIER_LITELLM_URL = ""

    result = call_tool(supervisor_url, "tier", {"refresh": True})

    assert result["isError"] is False and result["structuredContent"]["tier"] == 3
    assert result["structuredContent"]["label"] == "airplane"
