"""Helpers more than one test file needs: waiting, reading an MCP answer, running a skill, a worker cluster,
a web server on the test database."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

import httpx

from tests.conftest import parse_sse, test_database_url

ROOT = Path(__file__).resolve().parents[2]
T = TypeVar("T")


def wait_for(predicate: Callable[[], T], seconds: float, what: str) -> T:
    """Poll `predicate` every 0.1 s until it returns something true, and return that; fail after `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out after {seconds} s waiting for {what}")


def lines_until_banner(process: subprocess.Popen, seconds: float = 90) -> list[str]:
    """The lines `manage.py serve` prints (stdout, text mode) up to its banner's last one, "Press Ctrl-C…"."""
    lines: list[str] = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        lines.append(line)
        if "Press Ctrl-C" in line:
            break
    return lines


def tool_answer(response: httpx.Response) -> dict:
    """The JSON-RPC answer of an MCP POST, whether it came as JSON or as the last message of an SSE stream."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        return [message for message in parse_sse(response.text) if "id" in message][-1]
    return response.json()


def run_skill_inline(skill: str, arguments: dict):
    """Record a SkillRun as an MCP call would, run it in this process (no worker cluster), and reload it."""
    from supervisor.tasks import run_skill
    from supervisor.tools import start_skill_run

    skill_run = start_skill_run(skill, arguments)
    run_skill(skill_run.pk)
    skill_run.refresh_from_db()
    return skill_run


def start_qcluster(settings, allowed_root, **environment: str) -> subprocess.Popen:
    """`manage.py qcluster` in its own process group on the test database, running the fake claude.

    One worker process, the embedder off; `environment` adds or overrides variables
    (e.g. SUPERVISOR_TIMEOUT). Stop it with `tests.supervisor.conftest.stop_process_group`.
    """
    env = dict(os.environ)
    env.update(
        DATABASE_URL=test_database_url(),
        CLAUDE_BINARY=settings.CLAUDE_BINARY,
        SUPERVISOR_ALLOWED_ROOTS=str(allowed_root),
        SUPERVISOR_TEST_TIMEOUT="60",
        SUPERVISOR_WORKER_ENV_ALLOW="FAKE_CLAUDE_*",
        BRAIN_EMBEDDER="off",
        HYPERGUILD_Q_WORKERS="1",
    )
    env.update(environment)
    return subprocess.Popen(
        [sys.executable, "manage.py", "qcluster"],
        cwd=ROOT,
        env=env,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


@contextmanager
def granian_on_test_database(scratch: Path, *, workers: int = 1, **environment: str) -> Iterator[tuple[str, int]]:
    """granian serving hyperguild's WSGI app on the test database, as `serve` starts it; yields (base URL, port).

    Tokens are empty (the endpoints open on loopback), the embedder off, the data folder `scratch`;
    `environment` adds or overrides variables. The process group is stopped at the end.
    """
    from hyperguild.management.commands.serve import web_command
    from tests.conftest import free_port

    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "HYPERGUILD_DB_POOL"}
    env.update(
        DATABASE_URL=test_database_url(),
        HYPERGUILD_DATA_DIR=str(scratch),
        BRAIN_EMBEDDER="off",
        BRAIN_MCP_TOKEN="",
        SUPERVISOR_MCP_TOKEN="",
        ROUTING_MCP_TOKEN="",
        HYPERGUILD_LOG_LEVEL="WARNING",
        **environment,
    )
    web = subprocess.Popen(
        web_command("granian", "127.0.0.1", port, workers=workers),
        cwd=ROOT,
        env=env,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"

    def answers() -> bool:
        try:
            return httpx.get(f"{base}/health/live", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    try:
        wait_for(answers, 60, "the web server")
        yield base, port
    finally:
        os.killpg(web.pid, signal.SIGTERM)
        try:
            web.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(web.pid, signal.SIGKILL)
