"""Chaos under `manage.py serve` (what `make run` runs) on a scratch embedded PostgreSQL.

One real process tree for the module: serve starts the embedded database
(a scratch data directory, so killing it touches nothing else), uvicorn and
the django-q2 cluster, and supervises the database. Then:

- the embedded postmaster is killed (`kill -9`): serve starts it again and
  the app answers from the database again;
- the database is killed in the middle of a stream of `session_log` writes:
  every write that was acknowledged before (or after) is in the database
  afterwards;
- the django-q2 worker is killed in the middle of a TDD run (after the
  database outage, so the cluster must have survived it): the claude group
  dies, the run ends `error` and the caller gets that answer;
- on Ctrl-C nothing is left running: no server, worker, claude or postmaster.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import httpx
import psutil
import psycopg
import pytest

from tests.conftest import free_port, mcp_post, rpc
from tests.fakes.helpers import tool_answer, wait_for
from tests.fakes.pg_template import copy_migrated_data_dir
from tests.supervisor.conftest import FAKE_CLAUDE, FakeClaude, process_alive
from tests.supervisor.test_tdd_skills import FAILING_TEST, report

ROOT = Path(__file__).resolve().parents[2]


class ScratchServe:
    def __init__(self, base: Path):
        self.base = base
        self.data_dir = base / "data"
        self.pgdata = self.data_dir / "pg"
        self.projects = base / "projects"
        self.projects.mkdir(parents=True)
        self.fake = FakeClaude(base)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = base / "serve.log"
        self.process: subprocess.Popen | None = None
        self.seen: dict[int, psutil.Process] = {}  # every process of the tree seen so far

    def env(self) -> dict[str, str]:
        env = {
            k: v
            for k, v in os.environ.items()
            if k
            not in (
                "DATABASE_URL",
                "BRAIN_MCP_TOKEN",
                "SUPERVISOR_MCP_TOKEN",
                "ROUTING_MCP_TOKEN",
                "HYPERGUILD_ALLOW_NO_AUTH",
            )
        }
        env.update(
            HYPERGUILD_DATA_DIR=str(self.data_dir),
            HYPERGUILD_ADMIN_PASSWORD="chaos-admin-password",
            BRAIN_EMBEDDER="off",
            BRAIN_DIR=str(self.base / "brain"),
            CLAUDE_BINARY=str(FAKE_CLAUDE),
            FAKE_CLAUDE_STATE=str(self.fake.state),
            FAKE_CLAUDE_SCRIPT=str(self.fake.script_path),
            SUPERVISOR_WORKER_ENV_ALLOW="FAKE_CLAUDE_*",
            SUPERVISOR_ALLOWED_ROOTS=str(self.projects),
            SUPERVISOR_MAX_WORKERS="1",
            SUPERVISOR_TIMEOUT="120",
            SUPERVISOR_IDLE_TIMEOUT="120",
            HYPERGUILD_Q_WORKERS="1",
            # These servers test serving, the queue and recovery, not answers: no passage reader to load in each web
            # process, and no passages read ahead by the worker (test_serve and test_first_minute start `serve` as
            # `make run` does, with it).
            BRAIN_PASSAGE_READER="off",
        )
        return env

    def start(self) -> None:
        self.log = open(self.log_path, "w")
        self.process = subprocess.Popen(
            [sys.executable, "manage.py", "serve", "--port", str(self.port)],
            cwd=ROOT,
            env=self.env(),
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        wait_for(
            lambda: "Press Ctrl-C" in self.log_path.read_text() or self.process.poll() is not None,
            180,
            "serve to start",
        )
        assert self.process.poll() is None, self.log_path.read_text()[-3000:]
        self.remember_tree()

    def manage(self, *args: str) -> str:
        """A one-off `manage.py` command on this scratch server's data (it must succeed); its output."""
        done = subprocess.run(
            [sys.executable, "manage.py", *args], cwd=ROOT, env=self.env(), capture_output=True, text=True, timeout=600
        )
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
        return done.stdout

    def remember_tree(self) -> None:
        for child in psutil.Process(self.process.pid).children(recursive=True):
            self.seen.setdefault(child.pid, child)

    def postmaster_pid(self) -> int | None:
        try:
            return int((self.pgdata / "postmaster.pid").read_text().split("\n", 1)[0])
        except (FileNotFoundError, ValueError):
            return None

    def connect(self) -> psycopg.Connection:
        return psycopg.connect(
            host=str(self.pgdata), dbname="postgres", user="postgres", autocommit=True, connect_timeout=5
        )

    def query(self, sql: str, params: tuple = ()) -> list[tuple]:
        with self.connect() as conn:
            return conn.execute(sql, params).fetchall()

    def kill_database(self) -> int:
        pid = self.postmaster_pid()
        assert pid and process_alive(pid)
        os.kill(pid, signal.SIGKILL)
        return pid

    def wait_database_back(self, old_pid: int, seconds: float = 45) -> float:
        started = time.monotonic()

        def back() -> bool:
            pid = self.postmaster_pid()
            if not pid or pid == old_pid or not process_alive(pid):
                return False
            try:
                self.query("SELECT 1")
            except psycopg.OperationalError:
                return False
            return True

        wait_for(back, seconds, "the embedded database to come back")
        return time.monotonic() - started

    def stop(self) -> str:
        if self.process is None:
            return ""
        if self.process.poll() is None:
            self.remember_tree()
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)
        self.log.close()
        return self.log_path.read_text()


@pytest.fixture(scope="module")
def serve():
    # Not under pytest's tmp dir: run as root, PostgreSQL runs as its own user and
    # must be able to reach its data directory (pytest's is mode 0700).
    base = Path(tempfile.mkdtemp(prefix="hg-chaos-"))
    base.chmod(0o755)
    scratch = ScratchServe(base)
    try:
        copy_migrated_data_dir(scratch.data_dir)  # migrated once per machine (tests/fakes/pg_template.py)
        scratch.start()
    except BaseException:
        scratch.stop()
        _kill_stray_postmaster(scratch)
        raise
    yield scratch
    log = scratch.stop()
    pids = [p.pid for p in scratch.seen.values()] + scratch.fake.pids()
    time.sleep(0.5)
    left = [pid for pid in pids if process_alive(pid)]
    for pid in left:  # never leave strays behind, even when the test fails
        os.kill(pid, signal.SIGKILL)
    postmaster_left = _kill_stray_postmaster(scratch)
    shutil.rmtree(base, ignore_errors=True)
    assert not left, f"processes left running after serve stopped: {left}\n{log[-3000:]}"
    assert not postmaster_left, "serve left the embedded PostgreSQL running"


def _kill_stray_postmaster(scratch: ScratchServe) -> bool:
    """Kill the scratch postmaster if it still runs; True if it did."""
    pid = scratch.postmaster_pid()
    if pid and process_alive(pid):
        os.kill(pid, signal.SIGKILL)
        return True
    return False


def database_ok(serve: ScratchServe) -> bool:
    """What /health says about the database (the web server's own connection, not ours)."""
    try:
        return httpx.get(f"{serve.url}/health", timeout=5).json()["database"]["ok"] is True
    except (httpx.HTTPError, ValueError, KeyError, TypeError):
        return False


def test_serve_starts_the_embedded_database_again_and_no_call_fails_on_a_dead_pooled_connection(serve):
    assert database_ok(serve)
    started = time.monotonic()
    old = serve.kill_database()
    wait_for(lambda: not database_ok(serve), 10, "/health to see the database down")
    seconds = serve.wait_database_back(old)
    wait_for(lambda: database_ok(serve), 30, "/health to see the database again")
    # serve logs the restart once its start command returns, which can be a moment after PostgreSQL first
    # answers; a server started by anyone else would never be logged here at all.
    restarted = "the embedded PostgreSQL had stopped; started it again"
    try:
        wait_for(lambda: restarted in serve.log_path.read_text(), 20, "serve to log that it restarted the database")
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{serve.log_path.read_text()[-3000:]}") from None
    print(
        f"embedded PostgreSQL back {seconds:.1f} s after kill -9 of its postmaster, /health ok after "
        f"{time.monotonic() - started:.1f} s"
    )

    # Each web process keeps HYPERGUILD_DB_POOL connections open; the restart killed them all.
    # Without a check on checkout, each one failed the next call that borrowed it.
    failures = []
    for number in range(40):  # a new connection each time: the calls spread over the web processes
        response = mcp_post(
            f"{serve.url}/mcp/brain",
            rpc(
                "tools/call",
                {
                    "name": "session_log",
                    "arguments": {"session_id": "after-restart", "kind": "note", "message": f"entry {number}"},
                },
                number,
            ),
            timeout=30,
        )
        result = tool_answer(response).get("result", {})
        if response.status_code != 200 or result.get("isError", True):
            failures.append(result.get("content", [{}])[0].get("text", response.text)[:200])
    assert not failures, f"{len(failures)} of 40 calls failed after the restart: {failures[:3]}"


def test_chaos_no_acknowledged_write_is_lost_and_no_process_is_orphaned(serve):
    # 1. The database dies in the middle of a stream of session_log writes.
    session_id = f"chaos-{uuid.uuid4().hex[:8]}"
    acknowledged: list[str] = []
    refused = 0
    stop = threading.Event()

    def writer() -> None:
        nonlocal refused
        number = 0
        while not stop.is_set():
            number += 1
            message = f"entry {number}"
            try:
                response = mcp_post(
                    f"{serve.url}/mcp/brain",
                    rpc(
                        "tools/call",
                        {
                            "name": "session_log",
                            "arguments": {"session_id": session_id, "kind": "note", "message": message},
                        },
                        number,
                    ),
                    timeout=10,
                )
                answer = tool_answer(response)
                if response.status_code == 200 and "result" in answer and not answer["result"].get("isError"):
                    acknowledged.append(message)
                    continue
            except (httpx.HTTPError, ValueError, IndexError):
                pass
            refused += 1
            time.sleep(0.05)

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    wait_for(lambda: len(acknowledged) >= 20, 60, "20 acknowledged writes")
    before_kill = len(acknowledged)
    old = serve.kill_database()
    serve.wait_database_back(old)
    wait_for(lambda: len(acknowledged) >= before_kill + 20, 60, "20 more acknowledged writes after the restart")
    stop.set()
    thread.join(timeout=15)

    stored = {
        row[0]
        for row in serve.query(
            "SELECT e.message FROM agent_sessions_sessionentry e JOIN agent_sessions_agentsession s ON s.id = e.session_id "
            "WHERE s.external_id = %s",
            (session_id,),
        )
    }
    lost = [message for message in acknowledged if message not in stored]
    assert not lost, f"{len(lost)} acknowledged writes lost: {lost[:10]}"
    print(
        f"session_log: {len(acknowledged)} acknowledged ({before_kill} before the kill), {refused} refused "
        "during the outage, 0 lost"
    )

    # 2. The django-q2 worker dies in the middle of a TDD run (the cluster lived through the outage).
    project = serve.projects / "calc"
    (project / "tests").mkdir(parents=True)
    (project / "pyproject.toml").write_text(
        '[project]\nname = "calc"\nversion = "0"\n\n[tool.pytest.ini_options]\npythonpath = ["."]\n'
    )
    (project / "calc.py").write_text("def double(x):\n    return 2 * x\n")
    (project / "tests" / "test_double.py").write_text(
        "from calc import double\n\n\ndef test_double():\n    assert double(2) == 4\n"
    )
    serve.fake.script([{"hang": True, "children": 2, "write": {"tests/test_add.py": FAILING_TEST}, "report": report()}])
    box: dict = {}

    def call() -> None:
        response = mcp_post(
            f"{serve.url}/mcp/supervisor",
            rpc("tools/call", {"name": "tdd_red", "arguments": {"project_root": str(project), "spec": "add(a, b)"}}),
            timeout=120,
        )
        box["answer"] = tool_answer(response)

    caller = threading.Thread(target=call, daemon=True)
    caller.start()
    try:
        claude = wait_for(lambda: len(serve.fake.pids()) == 3 and serve.fake.pids(), 90, "the fake claude to start")
    except AssertionError as exc:  # say why: the run's state and what serve printed
        runs = serve.query("SELECT status, message FROM supervisor_skillrun ORDER BY id")
        raise AssertionError(f"{exc}; runs: {runs}; serve log: {serve.log_path.read_text()[-3000:]}") from None
    serve.remember_tree()
    (worker_pid,) = serve.query("SELECT worker_pid FROM supervisor_skillrun WHERE status = 'running'")[0]
    os.kill(worker_pid, signal.SIGKILL)
    caller.join(timeout=60)

    assert not caller.is_alive(), "the caller is still blocked"
    structured = box["answer"]["result"]["structuredContent"]
    assert structured["status"] == "error" and "abandoned" in structured["message"], json.dumps(box["answer"])[:2000]
    wait_for(lambda: not [pid for pid in claude if process_alive(pid)], 10, "the orphaned claude group to die")
    assert serve.query("SELECT count(*) FROM supervisor_skillrun WHERE status IN ('queued', 'running')") == [(0,)]
    # 3. No process is orphaned: checked when the module's serve stops (fixture teardown).
