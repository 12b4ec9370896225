"""Debug and spec runs, the tier probe, the model table."""

from __future__ import annotations

import pytest

from supervisor.model_table import resolve_model
from supervisor.tier import current_tier
from tests.fakes.helpers import run_skill_inline
from tests.fakes.http import FakeHTTPServer, Response

pytestmark = pytest.mark.django_db


def test_debug_reruns_the_failing_command_and_reports_it_passes_now(fake_claude, python_project):
    (python_project / "calc.py").write_text("def double(x):\n    return x\n")
    fake_claude.script(
        [
            {
                "write": {"calc.py": "def double(x):\n    return 2 * x\n"},
                "report": {
                    "hypotheses": [{"hypothesis": "double returns x", "evidence": "assert 2 == 4"}],
                    "root_cause": "missing factor",
                    "fix": "multiply by 2",
                    "files_changed": ["calc.py"],
                },
            }
        ]
    )

    skill_run = run_skill_inline(
        "debug",
        {
            "project_root": str(python_project),
            "symptom": "test_double fails",
            "failing_cmd": "python -m pytest -q tests/test_double.py",
        },
    )

    result = skill_run.result
    assert result["status"] == "pass" and result["failing_cmd_passes"] is True and result["verified"] is True
    assert result["files_changed"] == ["calc.py"] and result["root_cause"] == "missing factor"


def test_spec_returns_the_spec_with_numbered_acceptance_criteria(fake_claude, settings, tmp_path):
    fake_claude.script(
        [
            {
                "report": {
                    "title": "Export",
                    "spec": "Users export notes.",
                    "acceptance_criteria": ["CSV downloads", "UTF-8"],
                }
            }
        ]
    )
    settings.DATA_DIR = tmp_path

    skill_run = run_skill_inline("spec", {"text": "we talked about exporting notes", "project": "hg"})

    result = skill_run.result
    assert result["status"] == "pass" and result["title"] == "Export"
    assert "1. CSV downloads\n2. UTF-8" in result["spec"]


def test_a_specs_raw_note_names_who_asked_and_is_written_only_for_a_role_that_writes_raw_notes(
    fake_claude, settings, tmp_path
):
    """Issue 46: the spec skill was a side door for raw notes (written with no author, whoever asked)."""
    from brain.models import Note
    from supervisor.tasks import run_skill
    from supervisor.tools import start_skill_run
    from tests.people.conftest import make_person

    settings.DATA_DIR = tmp_path
    report = {"report": {"title": "Export", "spec": "Users export notes.", "acceptance_criteria": ["CSV downloads"]}}
    outcomes = {}
    for who in (make_person("otto", "operator"), make_person("sue", is_staff=True)):
        fake_claude.script([report])
        skill_run = start_skill_run("spec", {"text": "exporting notes", "project": "hg"}, requested_by=who)
        run_skill(skill_run.pk)
        skill_run.refresh_from_db()
        outcomes[who.username] = skill_run.result
    assert outcomes["otto"]["status"] == "pass" and outcomes["otto"]["note_id"] is None
    assert "otto's role cannot write raw notes" in outcomes["otto"]["message"]
    note = Note.objects.get()
    assert (note.pk, note.status, note.created_by.username) == (outcomes["sue"]["note_id"], "raw", "sue")


@pytest.fixture
def probe_server():
    """Answers every request (404 is an answer: the tier probe only asks whether something is there)."""
    with FakeHTTPServer(handle=lambda request: Response(404, raw=b"")) as server:
        yield server.url


@pytest.fixture
def dead_url():
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


@pytest.mark.parametrize(("anthropic", "litellm", "tier"), [(True, True, 1), (False, True, 2), (False, False, 3)])
def test_tier_follows_which_probe_servers_answer(settings, probe_server, dead_url, anthropic, litellm, tier):
    settings.SUPERVISOR_TIER_ANTHROPIC_URL = probe_server if anthropic else dead_url
    settings.SUPERVISOR_TIER_LITELLM_URL = probe_server if litellm else dead_url
    settings.SUPERVISOR_TIER_PROBE_TIMEOUT = 1.0

    found, cached = current_tier(refresh=True)

    assert found["tier"] == tier and cached is False


def test_tier_is_cached_until_refreshed(settings, probe_server, dead_url):
    settings.SUPERVISOR_TIER_ANTHROPIC_URL = probe_server
    settings.SUPERVISOR_TIER_LITELLM_URL = dead_url
    assert current_tier(refresh=True)[0]["tier"] == 1
    settings.SUPERVISOR_TIER_ANTHROPIC_URL = dead_url

    found, cached = current_tier()

    assert found["tier"] == 1 and cached is True
    assert current_tier(refresh=True)[0]["tier"] == 3


def test_model_resolution_prefers_the_caller_then_the_skill_entry_then_the_default(tmp_path):
    table = tmp_path / "models.yaml"
    table.write_text("default: haiku\nskills:\n  review: opus\n")

    assert resolve_model("review", "my-model", path=table) == "my-model"
    assert resolve_model("review", None, path=table) == "opus"
    assert resolve_model("debug", None, path=table) == "haiku"


def test_the_models_file_setting_is_read_at_call_time(tmp_path, settings):
    table = tmp_path / "models.yaml"
    table.write_text("default: local-qwen\n")
    settings.SUPERVISOR_MODELS_FILE = str(table)

    assert resolve_model("tdd_red") == "local-qwen"
