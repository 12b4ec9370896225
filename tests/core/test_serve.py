"""`manage.py serve` (what `make run` runs), as a real process tree."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import psutil
import pytest

from tests.conftest import free_port, mcp_post, rpc
from tests.fakes.helpers import lines_until_banner, wait_for

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.django_db(transaction=True)


def test_serve_refuses_a_public_address_without_tokens(child_env):
    completed = subprocess.run(
        [sys.executable, "manage.py", "serve", "--host", "0.0.0.0", "--port", str(free_port())],
        cwd=ROOT,
        env=child_env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert completed.returncode != 0
    assert "Refusing to listen on 0.0.0.0" in completed.stderr
    assert "BRAIN_MCP_TOKEN" in completed.stderr


def test_serve_refuses_a_port_another_program_listens_on(child_env):
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        port = other.getsockname()[1]
        completed = subprocess.run(
            [sys.executable, "manage.py", "serve", "--port", str(port)],
            cwd=ROOT,
            env=child_env,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert completed.returncode != 0
    assert f"Port {port} on 127.0.0.1 is already in use" in completed.stderr
    assert f"HYPERGUILD_PORT={port + 1} make run" in completed.stderr  # what `make run` can take (issue 28)


def test_a_public_bind_address_without_tokens_fails_the_system_check(child_env):
    env = {**child_env, "HYPERGUILD_HOST": "0.0.0.0"}
    completed = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert completed.returncode != 0
    assert "hyperguild.E001" in completed.stderr


def test_a_public_bind_address_with_tokens_passes_the_system_check(child_env):
    env = {
        **child_env,
        "HYPERGUILD_HOST": "0.0.0.0",
        "BRAIN_MCP_TOKEN": "a",
        "SUPERVISOR_MCP_TOKEN": "b",
        "ROUTING_MCP_TOKEN": "c",
    }
    completed = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert completed.returncode == 0, completed.stderr


def ping_after_a_crash(url: str) -> int:
    """A ping's status right after a web process died: a new connection the kernel still handed to the dying
    process is reset (CI saw it once in several runs under load, after the process had exited); a client that
    tries again within a second reaches the one that lives. More than three resets is a failure."""
    for attempt in range(3):
        try:
            return mcp_post(url, rpc("ping")).status_code
        except httpx.TransportError:
            if attempt == 2:
                raise
            time.sleep(0.3)
    raise AssertionError("unreachable")


def test_serve_starts_the_server_and_the_worker_prints_the_lines_and_stops_on_ctrl_c(child_env):
    port = free_port()
    env = {
        **child_env,
        "BRAIN_MCP_TOKEN": "tok-brain",
        "HYPERGUILD_ADMIN_PASSWORD": "pw-from-env-123",
        "HYPERGUILD_WEB_WORKERS": "2",
    }
    process = subprocess.Popen(
        [sys.executable, "manage.py", "serve", "--port", str(port)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: list[str] = []
    try:
        lines = lines_until_banner(process)
        output = "".join(lines)
        base = f"http://127.0.0.1:{port}"
        assert "database ready; no migration to apply" in output  # the test database is migrated: no `migrate`
        assert f"claude mcp add --scope user --transport http hyperguild-brain {base}/mcp/brain" in output, output
        assert "claude plugin install hyperguild@hyperguild" in output, output
        # The banner ends up in service logs: it names the variable, never the token.
        assert '--header "Authorization: Bearer $BRAIN_MCP_TOKEN"' in output
        assert "tok-brain" not in output
        assert "BRAIN_MCP_TOKEN (set, 9 characters, not shown)" in output
        assert re.search(rf"hyperguild-supervisor {re.escape(base)}/mcp/supervisor\n", output)
        assert re.search(rf"hyperguild-routing {re.escape(base)}/mcp/routing\n", output)

        for name, headers in (("brain", {"Authorization": "Bearer tok-brain"}), ("supervisor", {}), ("routing", {})):
            assert mcp_post(f"{base}/mcp/{name}", rpc("ping"), headers).status_code == 200

        healthy = None
        for _ in range(60):  # the worker runs the heartbeat task enqueued at start
            healthy = httpx.get(f"{base}/health", timeout=5)
            if healthy.status_code == 200:
                break
            time.sleep(0.5)
        assert healthy is not None and healthy.status_code == 200, healthy.text
        deadline = time.monotonic() + 30
        while len(webs := web_processes(process.pid)) != 2:  # granian starts its processes one after the other
            assert time.monotonic() < deadline, f"not HYPERGUILD_WEB_WORKERS web processes: {webs}"
            time.sleep(0.2)
        children = psutil.Process(process.pid).children(recursive=True)
        assert len(children) >= 4  # granian, its HYPERGUILD_WEB_WORKERS processes, the cluster

        # Both listen before one is killed: the second may still be loading when it shows up as a process, and a
        # ping after the first one's exit found no listener on the port (connection refused, one run in several).
        wait_for(lambda: all(listening(web, port) for web in webs), 30, "both web processes to listen on the port")
        # A web process that dies is replaced by granian; the other one keeps answering on the port meanwhile.
        webs[0].kill()
        # Once it is gone (its listening socket closed with it: a connection the kernel had handed to that socket
        # in the moment of the kill was refused, one run in several), the other keeps answering.
        wait_for(lambda: exited(webs[0]), 10, "the killed web process to exit")
        assert ping_after_a_crash(f"{base}/mcp/routing") == 200
        deadline = time.monotonic() + 30
        while not (len(now := web_processes(process.pid)) == 2 and webs[0].pid not in {p.pid for p in now}):
            assert time.monotonic() < deadline, "the dead web process was not replaced"
            time.sleep(0.2)
        assert mcp_post(f"{base}/mcp/routing", rpc("ping")).status_code == 200
        children = psutil.Process(process.pid).children(recursive=True)
    finally:
        process.send_signal(signal.SIGINT)
        try:
            rest = process.communicate(timeout=40)[0]
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            raise
    assert process.returncode == 0, rest
    assert "stopped" in rest
    time.sleep(0.5)
    assert not [c for c in children if c.is_running() and c.status() != psutil.STATUS_ZOMBIE]


def exited(process: psutil.Process) -> bool:
    """Gone, or a zombie its parent has not reaped yet (its sockets are closed either way)."""
    try:
        return process.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def listening(process: psutil.Process, port: int) -> bool:
    """Whether `process` holds a socket listening on `port` (its own, or one it inherited)."""
    try:
        return any(
            conn.status == psutil.CONN_LISTEN and conn.laddr and conn.laddr.port == port
            for conn in process.net_connections(kind="tcp")
        )
    except (psutil.NoSuchProcess, psutil.ZombieProcess):
        return False


def web_processes(serve_pid: int) -> list[psutil.Process]:
    """The processes that answer HTTP: the workers of the web server `serve` started (granian by default)."""
    found = []
    for child in psutil.Process(serve_pid).children():
        try:
            if "granian" not in " ".join(child.cmdline()):
                continue
            found.extend(worker for worker in child.children() if worker.status() != psutil.STATUS_ZOMBIE)
        except (psutil.ZombieProcess, psutil.NoSuchProcess):
            pass  # the one just killed, not yet reaped
    return found


def test_serve_counts_the_migrations_it_would_apply_and_skips_migrate_when_there_are_none():
    from django.db import connection
    from django.db.migrations.recorder import MigrationRecorder

    from hyperguild.management.commands.serve import unapplied_migrations

    assert unapplied_migrations() == 0
    recorder = MigrationRecorder(connection)
    latest = recorder.migration_qs.filter(app="hyperguild").order_by("-id").first()
    assert latest is not None
    recorder.record_unapplied("hyperguild", latest.name)  # as if this migration were new (rolled back at the end)
    try:
        assert unapplied_migrations() == 1
    finally:
        recorder.record_applied("hyperguild", latest.name)
    assert unapplied_migrations() == 0


def test_a_failed_system_check_stops_the_web_processes_that_were_loading_and_none_ever_answers(child_env):
    # HYPERGUILD_HOST public (hyperguild.E001) while serve binds 127.0.0.1: the bind passes, the check fails, after
    # the web processes were started to load beside the checks.
    port = free_port()
    env = {**child_env, "HYPERGUILD_HOST": "0.0.0.0"}
    process = subprocess.Popen(
        [sys.executable, "manage.py", "serve", "--host", "127.0.0.1", "--port", str(port)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    started: set[int] = set()
    answered = False
    while process.poll() is None:
        try:
            started.update(p.pid for p in psutil.Process(process.pid).children(recursive=True))
        except psutil.NoSuchProcess:
            pass
        try:
            answered |= httpx.get(f"http://127.0.0.1:{port}/health/live", timeout=0.5).status_code == 200
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    output = process.communicate(timeout=60)[0]
    assert process.returncode != 0
    assert "hyperguild.E001" in output
    assert started, "the web processes were not started before the checks"
    assert not answered
    time.sleep(0.5)
    assert not [
        pid for pid in started if psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    ]


def test_a_web_process_started_by_serve_answers_only_once_serve_opens_the_gate(tmp_path, monkeypatch):
    import threading

    from hyperguild.serving import SERVE_GATE, SERVE_PID, wait_for_serve

    gate = tmp_path / "8000.open"
    monkeypatch.setenv(SERVE_GATE, str(gate))
    monkeypatch.setenv(SERVE_PID, str(os.getpid()))
    waiting = threading.Thread(target=wait_for_serve)
    waiting.start()
    waiting.join(0.5)
    assert waiting.is_alive()  # serve is still checking and migrating
    gate.touch()
    waiting.join(5)
    assert not waiting.is_alive()
    assert SERVE_GATE not in os.environ  # not passed on to what this process starts


def test_a_web_process_whose_serve_is_gone_before_the_gate_opens_stops_instead_of_waiting(tmp_path, monkeypatch):
    from hyperguild.serving import SERVE_GATE, SERVE_PID, ServeStopped, wait_for_serve

    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    monkeypatch.setenv(SERVE_GATE, str(tmp_path / "8000.open"))
    monkeypatch.setenv(SERVE_PID, gone.stdout.strip())
    with pytest.raises(ServeStopped):
        wait_for_serve()


def test_a_web_process_not_started_by_serve_does_not_wait(monkeypatch):
    from hyperguild.serving import SERVE_GATE, wait_for_serve

    monkeypatch.delenv(SERVE_GATE, raising=False)
    wait_for_serve()  # returns at once (granian or gunicorn run by hand, tests)
