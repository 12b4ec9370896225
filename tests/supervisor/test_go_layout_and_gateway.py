"""The Go hyperguild's discipline layout and model table, and `provider/name` models run through the gateway.

The gateway run is end to end: the real supervisor spawns the fake `claude`,
which (like Claude Code) reads ANTHROPIC_BASE_URL / ANTHROPIC_AUTH_TOKEN from
its environment and asks an Anthropic messages-format server on 127.0.0.1;
that server's answer is what the worker writes, and the supervisor's own
pytest run verifies it.
"""

from __future__ import annotations

import json

import pytest

from supervisor.errors import SupervisorError
from supervisor.model_table import load_table, resolve_model
from supervisor.models import SkillRun
from supervisor.prompts import build_prompt
from supervisor.skills import SkillFailed
from supervisor.tasks import run_skill
from supervisor.tools import start_skill_run
from tests.fakes.anthropic import FakeAnthropic
from tests.fakes.helpers import run_skill_inline

pytestmark = pytest.mark.django_db

LOCAL_MODEL = "ollama/qwen3-coder-30b-tuned"
GATEWAY_KEY = "sk-litellm-master-123"
FAILING_TEST = "def test_add_sums_two_numbers():\n    from calc import add\n\n    assert add(2, 3) == 5\n"


@pytest.fixture
def go_models_file(tmp_path, settings):
    table = tmp_path / "go-models.yaml"
    table.write_text(f"default: sonnet\nskills:\n  tdd: {LOCAL_MODEL}\n  tdd_green: sonnet\n  review: opus\n")
    settings.SUPERVISOR_MODELS_FILE = str(table)
    return table


def test_a_tdd_key_applies_to_every_phase_and_a_phase_key_wins(go_models_file):
    assert resolve_model("tdd_red") == LOCAL_MODEL
    assert resolve_model("tdd_refactor") == LOCAL_MODEL
    assert resolve_model("tdd_green") == "sonnet"
    assert resolve_model("review") == "opus"
    assert "tdd" not in load_table().skills


def test_the_go_discipline_layout_is_read(tmp_path, settings):
    folder = tmp_path / "go-config"
    folder.mkdir()
    (folder / "CLAUDE.md").write_text("# Go team rules\n\nNever push to main.\n")
    (folder / "tdd.md").write_text("# Go TDD discipline\n\nRed, green, refactor.\n")
    (folder / "review.md").write_text("# Review\n")
    settings.SUPERVISOR_CONFIG_DIR = str(folder)

    red = build_prompt("tdd_red", "specify add")
    green = build_prompt("tdd_green", "make it pass")

    assert red.startswith("# Go team rules") and "# Go TDD discipline" in red
    assert "This run is the tdd_red phase." in red and "This run is the tdd_green phase." in green
    assert "Never push to main." in build_prompt("review", "look")


def test_a_phase_file_wins_over_tdd_md_and_rules_md_over_claude_md(tmp_path, settings):
    folder = tmp_path / "mixed"
    folder.mkdir()
    (folder / "CLAUDE.md").write_text("go rules\n")
    (folder / "rules.md").write_text("our rules\n")
    (folder / "tdd.md").write_text("shared tdd\n")
    (folder / "tdd_green.md").write_text("green only\n")
    settings.SUPERVISOR_CONFIG_DIR = str(folder)

    assert build_prompt("tdd_green", "x").startswith("our rules") and "green only" in build_prompt("tdd_green", "x")
    assert "shared tdd" not in build_prompt("tdd_green", "x") and "shared tdd" in build_prompt("tdd_refactor", "x")


def test_a_missing_discipline_names_both_layouts(tmp_path, settings):
    settings.SUPERVISOR_CONFIG_DIR = str(tmp_path)

    with pytest.raises(SkillFailed) as caught:
        build_prompt("tdd_red", "x")

    assert f"{tmp_path}/rules.md or {tmp_path}/CLAUDE.md" in str(caught.value)


def test_a_gateway_model_without_a_gateway_is_refused_and_nothing_is_written(go_models_file, settings, python_project):
    settings.LITELLM_BASE_URL = ""

    with pytest.raises(SupervisorError) as caught:
        start_skill_run("tdd_red", {"project_root": str(python_project), "spec": "add"})

    assert "set LITELLM_BASE_URL" in str(caught.value) and LOCAL_MODEL in str(caught.value)
    assert SkillRun.objects.count() == 0


def test_a_tdd_run_on_a_provider_model_runs_claude_code_through_the_gateway_and_is_verified(
    fake_claude, python_project, go_models_file, settings, monkeypatch
):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-real-key-must-not-leak")
    fake_claude.script(
        [{"report": {"status": "done", "file_path": "wrong", "summary": "scripted, not from the model"}}]
    )
    with FakeAnthropic(key=GATEWAY_KEY, models={LOCAL_MODEL}) as gateway:
        settings.LITELLM_BASE_URL = gateway.url
        settings.LITELLM_API_KEY = GATEWAY_KEY
        gateway.answer = lambda request: json.dumps(
            {
                "write": {"tests/test_add.py": FAILING_TEST},
                "report": {
                    "status": "done",
                    "file_path": "tests/test_add.py",
                    "summary": "wrote the failing test",
                    "test_name": "test_add_sums_two_numbers",
                },
            }
        )

        skill_run = run_skill_inline("tdd_red", {"project_root": str(python_project), "spec": "add(a, b) sums"})

    result = skill_run.result
    assert result["status"] == "pass" and result["verified"] is True, result
    assert result["model_used"] == LOCAL_MODEL and skill_run.model == LOCAL_MODEL
    assert "test_add_sums_two_numbers" in result["runner_output"]  # the supervisor's own pytest run
    (request,) = gateway.messages()
    assert request.body["model"] == LOCAL_MODEL
    assert request.headers["authorization"] == f"Bearer {GATEWAY_KEY}"
    assert "x-api-key" not in request.headers
    assert "add(a, b) sums" in json.dumps(request.body["messages"])
    (call,) = fake_claude.calls()
    assert call["anthropic_base_url"] == gateway.url and call["anthropic_api_key_set"] is False
    argv = call["argv"]
    assert argv[argv.index("--model") + 1] == LOCAL_MODEL
    assert GATEWAY_KEY not in argv[argv.index("-p") + 1]  # never a key in the prompt
    assert GATEWAY_KEY not in json.dumps(skill_run.arguments)


def test_a_gateway_that_refuses_the_key_is_a_worker_error_not_a_pass(
    fake_claude, python_project, go_models_file, settings
):
    with FakeAnthropic(key="the-right-key", models={LOCAL_MODEL}) as gateway:
        settings.LITELLM_BASE_URL = gateway.url
        settings.LITELLM_API_KEY = "a-wrong-key"
        skill_run = run_skill_inline("tdd_red", {"project_root": str(python_project), "spec": "add(a, b) sums"})

    assert skill_run.result["verified"] is False and skill_run.result["status"] != "pass"
    assert "401" in skill_run.attempt_log[0]["worker_message"]
    assert len(gateway.messages()) >= 1


def test_a_claude_model_keeps_the_worker_off_the_gateway(fake_claude, python_project, settings):
    fake_claude.script(
        [
            {
                "write": {"tests/test_add.py": FAILING_TEST},
                "report": {"status": "done", "file_path": "tests/test_add.py", "summary": "ok"},
            }
        ]
    )

    skill_run = start_skill_run("tdd_red", {"project_root": str(python_project), "spec": "add", "model": "sonnet"})
    run_skill(skill_run.pk)

    (call,) = fake_claude.calls()
    assert call["anthropic_base_url"] is None


def test_check_warns_about_gateway_models_without_a_gateway(go_models_file, settings):
    from django.core.checks import run_checks

    settings.LITELLM_BASE_URL = ""
    found = [message for message in run_checks() if message.id == "hyperguild.W070"]

    assert len(found) == 1 and "tdd_red: ollama/qwen3-coder-30b-tuned" in found[0].msg
    settings.LITELLM_BASE_URL = "http://127.0.0.1:4000"
    assert not [message for message in run_checks() if message.id == "hyperguild.W070"]


def test_the_go_database_dsn_never_reaches_a_worker(monkeypatch, settings):
    from supervisor.executor import child_environment

    monkeypatch.setenv("BRAIN_PG_DSN", "postgres://go:secret@db/brain")
    monkeypatch.setenv("INGEST_BRAIN_DIR", "/srv/brain")

    assert "BRAIN_PG_DSN" not in child_environment()
    # Even when an operator allows it by name, the DSN stays out (the worker env is an allow-list
    # with a never-list on top); another Go variable allowed by name gets through.
    settings.SUPERVISOR_WORKER_ENV_ALLOW = ["BRAIN_PG_DSN", "INGEST_BRAIN_DIR"]
    env = child_environment()

    assert "BRAIN_PG_DSN" not in env and env["INGEST_BRAIN_DIR"] == "/srv/brain"
