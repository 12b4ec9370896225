"""Starting with a real set-up: one local model for both roles, the gateway named, a failed start that
leaves nothing behind, and a log without noise."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import httpx
import psutil
import pytest

from tests.conftest import free_port
from tests.fakes.helpers import lines_until_banner
from tests.fakes.openai import FakeOpenAI, Reply

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.django_db(transaction=True)


def processes_using(path: Path) -> list[psutil.Process]:
    found = []
    for process in psutil.process_iter(["cmdline"]):
        try:
            if any(str(path) in part for part in process.info["cmdline"] or []):
                found.append(process)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found


@pytest.fixture
def fresh_data_dir():
    """A data directory of its own (under var/, where the embedded PostgreSQL may run), removed afterwards."""
    (ROOT / "var").mkdir(exist_ok=True)
    path = Path(tempfile.mkdtemp(prefix="start-test-", dir=ROOT / "var"))
    path.chmod(0o755)
    yield path
    for process in processes_using(path):  # only if the test failed: never leave a server behind
        process.kill()
    shutil.rmtree(path, ignore_errors=True)


def test_a_start_that_fails_a_system_check_leaves_no_process_behind(child_env, fresh_data_dir):
    env = {k: v for k, v in child_env.items() if k != "DATABASE_URL"}
    env.update(
        HYPERGUILD_DATA_DIR=str(fresh_data_dir), HYPERGUILD_ROUTE_LOCAL_CEIL="0.95", HYPERGUILD_ROUTE_LOCAL_FLOOR="0.9"
    )
    assert processes_using(fresh_data_dir) == []

    completed = subprocess.run(
        [sys.executable, "manage.py", "serve", "--port", str(free_port())],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )

    assert completed.returncode != 0 and "hyperguild.E010" in completed.stderr, completed.stderr
    assert (fresh_data_dir / "pg" / "PG_VERSION").exists()  # the start did bring up its own PostgreSQL…
    assert processes_using(fresh_data_dir) == []  # …and stopped it again
    assert not (fresh_data_dir / "pg" / "postmaster.pid").exists()


def test_one_model_for_both_routing_roles_passes_the_checks_and_says_so(child_env):
    env = {**child_env, "HYPERGUILD_FAST_MODEL": "gemma3-270m", "HYPERGUILD_THINKING_MODEL": "gemma3-270m"}
    completed = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert completed.returncode == 0, completed.stderr
    assert "hyperguild.I010" in completed.stdout + completed.stderr
    assert "routing sends every call to that one model" in completed.stdout + completed.stderr


def test_serve_with_one_local_model_starts_names_the_gateway_and_keeps_the_log_quiet(child_env):
    port = free_port()
    with FakeOpenAI(default=lambda request: Reply.text("ok")) as gateway:
        env = {
            **child_env,
            "LITELLM_BASE_URL": gateway.url,
            "HYPERGUILD_FAST_MODEL": "gemma3-270m",
            "HYPERGUILD_THINKING_MODEL": "gemma3-270m",
            "BRAIN_ANSWER_MODEL": "gemma3-270m",
            "HYPERGUILD_WEB_WORKERS": "1",
        }
        process = subprocess.Popen(
            [sys.executable, "manage.py", "serve", "--port", str(port), "--no-worker"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        try:
            output = "".join(lines_until_banner(process))
            assert f"model gateway: {gateway.url} (reachable)" in output, output
            assert "fast: gemma3-270m, thinking: gemma3-270m" in output
            assert "one model, gemma3-270m, serves both routing roles" in output
            base = f"http://127.0.0.1:{port}"
            health = httpx.get(f"{base}/health", timeout=10).json()
            assert health["model_gateway"]["url"] == gateway.url and health["model_gateway"]["reachable"] is True
            assert health["model_gateway"]["single_model"] is True
            assert httpx.get(f"{base}/mcp/brain", timeout=10).status_code == 405  # as the protocol asks
            assert httpx.get(f"{base}/no-such-page", timeout=10).status_code == 404  # logged: a real warning
        finally:
            process.send_signal(signal.SIGINT)
            try:
                rest = process.communicate(timeout=40)[0]
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                raise
    log = output + rest
    assert "Method Not Allowed" not in log, log
    assert "Not Found: /no-such-page" in log  # the filter drops only the expected 405
    threads_warning = "allows spawning up to"
    assert threads_warning not in log or "note: granian will warn" in log


def test_health_names_a_gateway_that_is_down(client, settings):
    settings.LITELLM_BASE_URL = f"http://127.0.0.1:{free_port()}"
    settings.HYPERGUILD_FAST_MODEL, settings.HYPERGUILD_THINKING_MODEL = "fast", "thinking"
    report = client.get("/health").json()["model_gateway"]
    assert (report["configured"], report["reachable"], report["models"]["fast"]) == (True, False, "fast")
    assert "Connect" in report["error"]
