"""`make run`'s first minute (issue 28, problem 4): progress, no alarming log lines, a loud warning when an
endpoint is open to every local process, and a busy port that says how to pick another."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import free_port
from tests.fakes.helpers import lines_until_banner

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.django_db(transaction=True)


def serve_until_ready(env: dict, port: int, *extra: str) -> str:
    """Everything `manage.py serve` prints up to its banner's last line, plus two more seconds; then Ctrl-C."""
    process = subprocess.Popen(
        [sys.executable, "manage.py", "serve", "--port", str(port), "--web-workers", "1", *extra],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: list[str] = []
    try:
        lines = lines_until_banner(process)
        time.sleep(2)  # anything logged just after the banner (a late 503) would land here
    finally:
        process.send_signal(signal.SIGINT)
        # Read on through the same buffered reader (communicate() would skip what readline() read ahead).
        rest = process.stdout.read()
        process.wait(timeout=40)
    return "".join(lines) + rest


def test_serve_shows_each_step_warns_loudly_about_open_endpoints_and_logs_no_503(child_env):
    output = serve_until_ready(child_env, free_port())
    # The test database is migrated: serve says so and runs no `migrate` (tests/core/test_serve.py counts the plan).
    for step in (
        "database ready; no migration to apply",
        "starting 1 web process",
        "starting the task worker",
        "waiting for the web server",
    ):
        assert step in output, output
    assert "WARNING: NO TOKEN" in output, output
    warning = output[output.index("WARNING: NO TOKEN") :]
    for name in (
        "/mcp/brain (BRAIN_MCP_TOKEN is empty)",
        "/mcp/supervisor (SUPERVISOR_MCP_TOKEN is empty)",
        "/mcp/routing (ROUTING_MCP_TOKEN is empty)",
        "that is shell access",
    ):
        assert name in warning, warning
    assert ".env" not in output


def test_waiting_for_the_server_logs_no_503_for_health(child_env):
    # Without a worker /health is 503 until a heartbeat arrives, so a start-up that waited on /health
    # greeted every start with "ERROR django.request Service Unavailable: /health".
    output = serve_until_ready(child_env, free_port(), "--no-worker")
    assert "Press Ctrl-C" in output
    assert "Service Unavailable" not in output and "ERROR django.request" not in output, output


def test_with_every_token_set_there_is_no_warning_and_no_pointer_to_a_dot_env(child_env):
    env = {**child_env, "BRAIN_MCP_TOKEN": "a" * 20, "SUPERVISOR_MCP_TOKEN": "b" * 20, "ROUTING_MCP_TOKEN": "c" * 20}
    output = serve_until_ready(env, free_port())
    assert "NO TOKEN" not in output and ".env" not in output
    assert "export it" in output


def test_make_run_announces_each_set_up_step_and_lets_pip_show_its_progress():
    dry_run = subprocess.run(
        ["make", "-n", "-W", "requirements.txt", "run"], cwd=ROOT, capture_output=True, text=True, timeout=30
    ).stdout
    pip_line = next(line for line in dry_run.splitlines() if "pip install" in line)
    assert "--quiet" not in pip_line and " -q " not in pip_line
    assert [line.split("]")[0] for line in dry_run.splitlines() if line.startswith('echo "==> [')] == [
        'echo "==> [1/3',
        'echo "==> [2/3',
        'echo "==> [3/3',
    ]
