"""Recovery after `kill -9` of the database with an embedding backlog (issue 28, problem 6).

One real `manage.py serve` on a scratch embedded PostgreSQL, ~900 notes imported and waiting to be
embedded (a slow Ollama-speaking embedder on 127.0.0.1 keeps the backlog and the worker busy), then
the postmaster is killed. Measured: when the database is back, how long each /health call takes
while it recovers, and when search answers again. The figures are printed; the asserts are
generous bounds (the issue saw /health wait 30 s for a pool connection and requests hang 10–18 s).
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import threading
import time
from pathlib import Path

import httpx
import pytest

from tests.conftest import mcp_post, rpc
from tests.fakes.embed import FakeEmbedServer
from tests.fakes.helpers import tool_answer
from tests.fakes.pg_template import copy_migrated_data_dir
from tests.supervisor.test_chaos import ScratchServe, _kill_stray_postmaster

NOTES = 900
HEALTH_BOUND_SECONDS = 10  # every /health answer during the recovery (was 30: the pool's checkout timeout)
RECOVERY_BOUND_SECONDS = 20  # from the database being back to search answering


class BacklogServe(ScratchServe):
    def __init__(self, base: Path, embed_url: str):
        super().__init__(base)
        self.embed_url = embed_url

    def env(self) -> dict[str, str]:
        env = super().env()
        env.update(
            BRAIN_EMBEDDER="ollama",
            BRAIN_EMBED_URL=self.embed_url,
            BRAIN_EMBED_MODEL="fake-embed",
            BRAIN_DIR="",
            HYPERGUILD_WEB_WORKERS="2",
        )
        return env


def make_folder(root: Path) -> None:
    (root / "raw").mkdir(parents=True)
    for number in range(NOTES):
        (root / "raw" / f"note-{number}.md").write_text(
            f"# Note {number}\n\nA note about topic {number % 37} and the pool reaper, number {number}.\n",
            encoding="utf-8",
        )


@pytest.fixture(scope="module")
def backlog_serve():
    base = Path(tempfile.mkdtemp(prefix="hg-backlog-"))
    base.chmod(0o755)
    embedder = FakeEmbedServer(dimensions=8, slow_seconds=1.0)
    embedder.mode = "slow"  # each embedding call takes a second: the backlog stays for the whole test
    scratch = BacklogServe(base, embedder.url)
    try:
        make_folder(base / "import")
        started = time.monotonic()
        copy_migrated_data_dir(scratch.data_dir)  # migrated once per machine (tests/fakes/pg_template.py)
        scratch.manage("brain_import", str(base / "import"), "--no-progress")
        print(f"\nimported {NOTES} notes in {time.monotonic() - started:.1f} s")
        scratch.start()
        yield scratch
    finally:
        # The embedder first: the worker's slice in progress fails at its next call and ends, rather than embed
        # on to the end of its 20 s slice while serve's Ctrl-C waits for it (up to 15 s, then it kills it).
        embedder.stop()
        log = scratch.stop()
        _kill_stray_postmaster(scratch)
        if os.environ.get("KEEP_SERVE_LOG"):
            print(log[-5000:])
        shutil.rmtree(base, ignore_errors=True)


def timed(call) -> tuple[float, object]:
    started = time.monotonic()
    try:
        result = call()
    except httpx.HTTPError as exc:
        result = exc
    return time.monotonic() - started, result


def search_works(url: str) -> bool:
    response = mcp_post(
        f"{url}/mcp/brain",
        rpc("tools/call", {"name": "brain_query", "arguments": {"query": "pool reaper", "include_raw": True}}),
        timeout=60,
    )
    result = tool_answer(response).get("result", {})
    return response.status_code == 200 and not result.get("isError", True) and result["structuredContent"]["count"] > 0


@pytest.mark.timeout(900)
def test_health_answers_promptly_and_requests_recover_soon_after_a_kill_with_a_backlog(backlog_serve):
    serve = backlog_serve
    health = httpx.get(f"{serve.url}/health", timeout=60).json()
    backlog = health.get("embeddings", {}).get("active") or {}
    print(
        f"backlog before the kill: {backlog.get('pending_chunks')} chunks pending, "
        f"{backlog.get('notes_waiting')} notes waiting"
    )
    assert (backlog.get("pending_chunks") or 0) + (backlog.get("notes_waiting") or 0) > NOTES // 2
    assert search_works(serve.url)

    killed_at = time.monotonic()
    old = serve.kill_database()
    back: dict[str, float] = {}

    def watch_database() -> None:
        back["at"] = killed_at + serve.wait_database_back(old, seconds=120)

    watcher = threading.Thread(target=watch_database, daemon=True)
    watcher.start()

    health_calls: list[tuple[float, float, object]] = []  # (seconds after the kill, duration, status or error)
    stop = threading.Event()

    def poll_health() -> None:
        while not stop.is_set():
            at = time.monotonic() - killed_at
            duration, response = timed(lambda: httpx.get(f"{serve.url}/health", timeout=60))
            health_calls.append((at, duration, getattr(response, "status_code", type(response).__name__)))
            time.sleep(0.25)

    poller = threading.Thread(target=poll_health, daemon=True)
    poller.start()
    search_ok_at, search_calls = None, []
    deadline = killed_at + 120
    while time.monotonic() < deadline and search_ok_at is None:
        if "at" in back:
            duration, ok = timed(lambda: search_works(serve.url))
            search_calls.append(duration)
            if ok is True:
                search_ok_at = time.monotonic() - killed_at
        time.sleep(0.25)
    health_db_ok_at = None
    while time.monotonic() < deadline and health_db_ok_at is None:  # /health sees the database again
        try:
            if httpx.get(f"{serve.url}/health", timeout=60).json()["database"]["ok"] is True:
                health_db_ok_at = time.monotonic() - killed_at
        except (httpx.HTTPError, ValueError, KeyError):
            pass
        time.sleep(0.25)
    stop.set()
    poller.join(timeout=70)
    watcher.join(timeout=5)

    db_back = back.get("at", float("nan")) - killed_at
    slowest = max(health_calls, key=lambda call: call[1])
    print(
        f"database back {db_back:.1f} s after kill -9; search answered again "
        f"{search_ok_at if search_ok_at is None else round(search_ok_at, 1)} s after the kill, "
        f"{len(search_calls)} search calls, slowest {max(search_calls, default=0):.1f} s"
    )
    print(
        f"/health: {len(health_calls)} calls during the recovery, slowest {slowest[1]:.1f} s "
        f"(at {slowest[0]:.1f} s, {slowest[2]}); statuses {sorted({str(call[2]) for call in health_calls})}"
    )
    print(
        f"/health reported the database ok again {health_db_ok_at if health_db_ok_at is None else round(health_db_ok_at, 1)} s after the kill"
    )
    assert "at" in back, "the database did not come back"
    assert health_db_ok_at is not None and health_db_ok_at - db_back < RECOVERY_BOUND_SECONDS
    assert slowest[1] < HEALTH_BOUND_SECONDS, health_calls
    assert search_ok_at is not None and search_ok_at - db_back < RECOVERY_BOUND_SECONDS
    if serve.process is not None:
        serve.process.send_signal(signal.SIGINT)
