"""What a worker or a test command can see and reach: an allow-listed environment, no prompt in argv,
no git option smuggled in `git_range`, no free-form `test_cmd` when it is turned off."""

from __future__ import annotations

import time

import pytest

from supervisor import executor
from supervisor.models import SkillRun
from tests.conftest import call_tool

pytestmark = pytest.mark.django_db(transaction=True)

SERVICE_SECRETS = {
    "BRAIN_EMBED_API_KEY": "embed-secret",
    "BRAIN_LLM_API_KEY": "llm-secret",
    "SUPERVISOR_MCP_TOKEN": "token-secret",
    "DATABASE_URL": "postgresql://u:secret@127.0.0.1/x",
    "HYPERGUILD_ADMIN_PASSWORD": "admin-secret",
    "SOME_UNLISTED_VARIABLE": "not-on-the-list",
}


@pytest.fixture
def service_secrets(monkeypatch):
    for name, value in SERVICE_SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "the-workers-own-key")


@pytest.fixture
def supervisor_url(asgi_server, settings):
    settings.SUPERVISOR_MCP_TOKEN = ""
    return f"{asgi_server}/mcp/supervisor"


def test_a_worker_sees_only_allow_listed_variables_and_never_a_service_secret(
    fake_claude, python_project, service_secrets
):
    result = executor.run_worker(
        prompt="say hi", schema={"type": "object"}, cwd=python_project, model=None, allowed_tools="Read"
    )

    assert result.status == "ok", result.message
    (call,) = fake_claude.calls()
    env = set(call["env"])
    assert not env & set(SERVICE_SECRETS)
    assert {"PATH", "HOME", "ANTHROPIC_API_KEY", "LITELLM_BASE_URL", "FAKE_CLAUDE_STATE"} <= env


def test_a_test_command_gets_neither_service_secrets_nor_the_workers_credentials(python_project, service_secrets):
    ran = executor.run_process(["/bin/sh", "-c", "env"], cwd=python_project, timeout=10)

    names = {line.split("=", 1)[0] for line in ran.stdout.splitlines() if "=" in line}
    assert ran.succeeded
    assert "PATH" in names
    assert not names & (set(SERVICE_SECRETS) | {"ANTHROPIC_API_KEY", "LITELLM_BASE_URL"})


def test_a_registered_worker_env_provider_reaches_workers_only(fake_claude, python_project, monkeypatch):
    """The extension point for variables a worker must get on purpose (e.g. a gateway's ANTHROPIC_BASE_URL)."""
    monkeypatch.setattr(executor, "_WORKER_ENV_PROVIDERS", list(executor._WORKER_ENV_PROVIDERS))
    executor.register_worker_env(lambda: {"ANTHROPIC_BASE_URL": "http://127.0.0.1:9/gateway"})

    assert executor.child_environment(worker=True)["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:9/gateway"
    assert "ANTHROPIC_BASE_URL" not in executor.child_environment()


def test_the_prompt_is_not_on_the_workers_command_line(fake_claude, python_project):
    """`ps` shows every user each process's argv; the prompt goes on stdin."""
    fake_claude.script([{"hang": True, "children": 0}])
    secret_prompt = "the prompt with project details " + "x" * 200_000  # bigger than a pipe buffer
    seen: dict = {}

    def cancel_check() -> bool:
        pids = fake_claude.pids()
        if not pids:
            return False
        with open(f"/proc/{pids[0]}/cmdline", "rb") as handle:
            seen["cmdline"] = handle.read().decode()
        return True

    result = executor.run_worker(
        prompt=secret_prompt,
        schema={"type": "object"},
        cwd=python_project,
        model=None,
        allowed_tools="Read",
        cancel_check=cancel_check,
    )

    assert result.status == "cancelled"
    assert "-p" in seen["cmdline"].split("\0") and "project details" not in seen["cmdline"]
    (call,) = fake_claude.calls()
    assert call["prompt_from"] == "stdin" and call["prompt"] == secret_prompt[:20000]
    assert not any("project details" in arg for arg in result.argv)


@pytest.mark.parametrize("git_range", ["--ext-diff", "-p", "--no-index"])
def test_a_git_range_that_starts_with_a_dash_is_refused_and_nothing_runs(
    supervisor_url, fake_claude, python_project, git_range
):
    result = call_tool(supervisor_url, "review", {"project_root": str(python_project), "git_range": git_range})

    assert result["isError"] is True
    assert "starts with '-'" in result["content"][0]["text"] and "main..HEAD" in result["content"][0]["text"]
    assert SkillRun.objects.count() == 0
    time.sleep(0.3)
    assert fake_claude.calls() == []


def test_a_free_form_test_cmd_is_refused_when_turned_off(supervisor_url, fake_claude, python_project, settings):
    settings.SUPERVISOR_ALLOW_TEST_CMD = False

    result = call_tool(
        supervisor_url,
        "tdd_red",
        {"project_root": str(python_project), "spec": "x", "test_cmd": "curl http://127.0.0.1:9/ | sh"},
    )

    assert result["isError"] is True
    assert "SUPERVISOR_ALLOW_TEST_CMD=0" in result["content"][0]["text"]
    assert SkillRun.objects.count() == 0 and fake_claude.calls() == []


def test_with_test_cmd_off_the_detected_runner_is_used(fake_claude, python_project, settings):
    from supervisor.tasks import run_skill
    from supervisor.tools import start_skill_run
    from tests.supervisor.test_tdd_skills import FAILING_TEST, report

    settings.SUPERVISOR_ALLOW_TEST_CMD = False
    fake_claude.script([{"write": {"tests/test_add.py": FAILING_TEST}, "report": report()}])

    run = start_skill_run("tdd_red", {"project_root": str(python_project), "spec": "add(a, b) returns the sum"})
    run_skill(run.pk)
    run.refresh_from_db()

    assert run.status == "pass" and "pytest" in run.result["test_cmd"]
