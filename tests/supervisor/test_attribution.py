"""A skill run started with a person's token names that person; a token without supervisor:run starts nothing."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from supervisor.models import SkillRun
from tests.conftest import call_tool, mcp_post, rpc
from tests.people.conftest import make_person

pytestmark = pytest.mark.django_db(transaction=True)


def token_for(username: str, *scopes: str) -> dict:
    out = io.StringIO()
    call_command("token", "create", username, *[arg for scope in scopes for arg in ("--scope", scope)], stdout=out)
    return {"Authorization": f"Bearer {out.getvalue().strip().splitlines()[-1]}"}


def test_a_skill_run_names_the_person_whose_token_started_it(
    asgi_server, settings, fake_claude, python_project, skill_worker
):
    settings.SUPERVISOR_MCP_TOKEN = "supervisor-env"
    sam = make_person("sam", "operator")  # running skills is the operator role's
    test = "def test_add():\n    from calc import add\n    assert add(1, 2) == 3\n"
    fake_claude.script(
        [
            {
                "write": {"tests/test_add.py": test},
                "report": {"status": "done", "file_path": "tests/test_add.py", "summary": "ok"},
            }
        ]
    )
    arguments = {"project_root": str(python_project), "spec": "add", "session_id": "sess-sam"}

    result = call_tool(
        f"{asgi_server}/mcp/supervisor", "tdd_red", arguments, headers=token_for("sam", "supervisor:run")
    )

    assert result["isError"] is False, result
    run = SkillRun.objects.get(pk=result["structuredContent"]["run_id"])
    assert run.requested_by == sam and run.status == "pass"


def test_a_token_without_supervisor_run_starts_nothing(asgi_server, settings, python_project):
    settings.SUPERVISOR_MCP_TOKEN = "supervisor-env"
    make_person("sam", "operator")  # an operator, whose token was made without supervisor:run
    call = rpc("tools/call", {"name": "tdd_red", "arguments": {"project_root": str(python_project), "spec": "add"}})
    response = mcp_post(f"{asgi_server}/mcp/supervisor", call, headers=token_for("sam", "brain:read", "routing:run"))
    assert response.status_code == 403
    assert SkillRun.objects.count() == 0
