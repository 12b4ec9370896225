"""Fixtures for the supervisor: a fake `claude`, allowed roots, a real Python project, a worker thread.

Where skill runs execute in tests: a background thread of the test process
(`skill_worker`, in tests/fakes/fixtures.py: the engine's tests run tool jobs
with it too) picks up queued SkillRuns and calls the real
`supervisor.tasks.run_skill`, which runs the real executor and real
subprocesses (the fake claude, pytest). A `qcluster` subprocess per test
session was the alternative; the thread was chosen because the tests change
SUPERVISOR_* settings per test with the `settings` fixture, which a separate
process would not see, and because it keeps the suite fast.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

FAKE_CLAUDE = Path(__file__).with_name("fake_claude.py")


class FakeClaude:
    def __init__(self, base: Path):
        self.state = base / "fake-claude-state"
        self.script_path = base / "fake-claude-script.json"
        self.state.mkdir()
        self.script([{"report": {}}])

    def script(self, steps: list[dict]) -> None:
        self.script_path.write_text(json.dumps(steps))

    def calls(self) -> list[dict]:
        log = self.state / "calls.jsonl"
        if not log.exists():
            return []
        return [json.loads(line) for line in log.read_text().splitlines()]

    def pids(self) -> list[int]:
        path = self.state / "pids"
        return json.loads(path.read_text()) if path.exists() else []


@pytest.fixture
def fake_claude(tmp_path, settings, monkeypatch) -> FakeClaude:
    fake = FakeClaude(tmp_path)
    # The shebang's python3 may lack nothing we need: the fake uses the stdlib only.
    settings.CLAUDE_BINARY = str(FAKE_CLAUDE)
    settings.SUPERVISOR_TIMEOUT = 30
    settings.SUPERVISOR_IDLE_TIMEOUT = 30
    settings.SUPERVISOR_TEST_TIMEOUT = 60
    settings.SUPERVISOR_MAX_ATTEMPTS = 3
    settings.SUPERVISOR_QUEUE_WAIT = 10
    settings.SUPERVISOR_MAX_WORKERS = 2
    settings.LITELLM_BASE_URL = "http://127.0.0.1:9/litellm"
    # Like the real CLI, the fake talks to ANTHROPIC_BASE_URL when it is set: a developer's own
    # Claude Code settings must not leak into the tests.
    for name in ("ANTHROPIC_BASE_URL", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_API_KEY", "ANTHROPIC_MODEL"):
        monkeypatch.delenv(name, raising=False)
    settings.SUPERVISOR_WORKER_ENV_ALLOW = ["FAKE_CLAUDE_*"]  # the worker env is an allow-list
    monkeypatch.setenv("FAKE_CLAUDE_STATE", str(fake.state))
    monkeypatch.setenv("FAKE_CLAUDE_SCRIPT", str(fake.script_path))
    return fake


@pytest.fixture
def allowed_root(tmp_path, settings) -> Path:
    root = (tmp_path / "allowed").resolve()
    root.mkdir()
    settings.SUPERVISOR_ALLOWED_ROOTS = [str(root)]
    return root


@pytest.fixture
def python_project(allowed_root) -> Path:
    """A small real Python project whose tests run with pytest."""
    project = allowed_root / "calc"
    (project / "tests").mkdir(parents=True)
    (project / "pyproject.toml").write_text(
        '[project]\nname = "calc"\nversion = "0"\n\n[tool.pytest.ini_options]\npythonpath = ["."]\n'
    )
    (project / "calc.py").write_text("def double(x):\n    return 2 * x\n")
    (project / "tests" / "test_double.py").write_text(
        "from calc import double\n\n\ndef test_double():\n    assert double(2) == 4\n"
    )
    return project


def stop_process_group(process, grace: float = 5.0) -> None:
    """Stop a process started with start_new_session: SIGTERM to its leader, then SIGKILL to the group.

    The leader gets the SIGTERM, as `serve` and systemd's KillMode=mixed send it: a django-q2
    cluster whose every process got SIGTERM at once does not stop (its sentinel waits on children
    that are gone), while one whose sentinel alone got it stops in about a second. Whatever of the
    group is left after `grace` seconds (or after the leader exited) is killed.
    """
    try:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait(timeout=5)


def process_alive(pid: int) -> bool:
    """True if `pid` exists and is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
