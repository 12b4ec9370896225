"""A skill call end to end through the real django-q2 cluster.

The other supervisor tests run queued SkillRuns in a thread of the test
process (so they can change settings per test); this one runs `manage.py
qcluster` as a separate process on the test database, as `make run` does,
and calls tdd_red over MCP: the handler enqueues, the cluster's worker runs
the fake claude and pytest, the handler streams progress and returns.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from mcp.client.client import Client

from supervisor.models import SkillRun
from tests.fakes.helpers import start_qcluster
from tests.supervisor.conftest import stop_process_group
from tests.supervisor.test_tdd_skills import FAILING_TEST, report

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def qcluster(fake_claude, allowed_root, settings):
    process = start_qcluster(settings, allowed_root, SUPERVISOR_TIMEOUT="30")
    yield process
    stop_process_group(process)


def test_tdd_red_runs_in_the_django_q2_worker_and_streams_progress(asgi_server, qcluster, fake_claude, python_project):
    fake_claude.script([{"write": {"tests/test_add.py": FAILING_TEST}, "report": report()}])
    messages: list[str] = []

    async def on_progress(progress, total, message):
        messages.append(message or "")

    async def scenario():
        async with Client(f"{asgi_server}/mcp/supervisor", mode="legacy") as client:
            return await client.call_tool(
                "tdd_red",
                {"project_root": str(python_project), "spec": "add(a, b) returns the sum"},
                progress_callback=on_progress,
            )

    result = anyio.run(scenario)
    assert result.is_error is False, result.content
    assert result.structured_content["verified"] is True
    assert result.structured_content["status"] == "pass"
    run = SkillRun.objects.get(pk=result.structured_content["run_id"])
    assert run.status == "pass" and run.verified is True
    assert (python_project / "tests" / "test_add.py").read_text() == FAILING_TEST
    assert any("queued" in m for m in messages)
    assert len(fake_claude.calls()) == 1
