"""An embedding backlog under `manage.py serve` (issue 47, item 1): health stays true and the backlog resumes.

One real `manage.py serve` on a scratch embedded PostgreSQL with 500 notes waiting to be embedded by a slow
Ollama-speaking embedder on 127.0.0.1 (each call of 32 chunks takes seconds: the worker embeds for minutes).
The issue saw `/health` answer 503 "last heartbeat 278 s ago; the worker looks stopped" because the heartbeat
waited in the one django-q2 queue behind the embedding tasks, and a restart left the backlog waiting until
`manage.py brain_embed` was run by hand.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

import httpx
import pytest

from tests.fakes.embed import FakeEmbedServer
from tests.fakes.helpers import wait_for
from tests.fakes.http import Request, Response
from tests.fakes.pg_template import copy_migrated_data_dir
from tests.supervisor.test_chaos import ScratchServe, _kill_stray_postmaster

NOTES = 500
SLOW_CALL_SECONDS = 8.0  # one embedder call (32 chunks): 16 calls keep the worker busy for about two minutes
BATCH = 32  # chunks per embedder call (brain.embedding_sync.EMBED_BATCH)


class BatchPacedEmbedServer(FakeEmbedServer):
    """Slow in proportion to the texts of a call, as a real model is: `slow_seconds` for a full batch of chunks.

    The backlog's calls keep the embedding worker busy as before; a one-text call (the query of each similar-notes
    ranking the worker runs after a slice) takes a 32nd of that, not a whole batch's time, so those rankings no
    longer hold the worker for minutes after the backlog (the drain after the restart, and each stop waiting on
    a ranking slice until serve kills it).
    """

    last_call_at = 0.0  # time.monotonic() when the last call arrived

    def handle(self, request: Request) -> Response:
        self.last_call_at = time.monotonic()
        body = request.json()
        texts = body.get("input") if isinstance(body, dict) else None
        time.sleep(self.slow_seconds * (len(texts) if isinstance(texts, list) else 1) / BATCH)
        return super().handle(request)  # mode "ok": the answer, with no sleep of its own

    def wait_quiet(self, seconds: float = 1.5, at_most: float = 30) -> None:
        """Return once no call came for `seconds` (the worker's rankings are done), or after `at_most`."""
        deadline = time.monotonic() + at_most
        while time.monotonic() - self.last_call_at < seconds and time.monotonic() < deadline:
            time.sleep(0.2)


class EmbeddingServe(ScratchServe):
    def __init__(self, base: Path, embed_url: str):
        super().__init__(base)
        self.embed_url = embed_url

    def env(self) -> dict[str, str]:
        env = super().env()
        # The default worker settings (2 workers in the default queue), as `make run` has them.
        env.pop("HYPERGUILD_Q_WORKERS", None)
        env.update(
            BRAIN_EMBEDDER="ollama",
            BRAIN_EMBED_URL=self.embed_url,
            BRAIN_EMBED_MODEL="fake-embed",
            BRAIN_DIR="",
        )
        return env

    def health(self) -> tuple[int, dict]:
        response = httpx.get(f"{self.url}/health", timeout=30)
        return response.status_code, response.json()


DROP_QUEUED_SLICES = """
from datetime import timedelta
from django.conf import settings
from django.utils import timezone
from django_q.models import OrmQ, Schedule
from brain.tasks import EMBED_SCHEDULE
print(OrmQ.objects.filter(key=settings.EMBED_QUEUE).delete()[0])
Schedule.objects.filter(name=EMBED_SCHEDULE).update(next_run=timezone.now() + timedelta(hours=1))
"""


def backlog_left(body: dict) -> int:
    active = body["embeddings"]["active"]
    return active["pending_chunks"] + active["notes_waiting"]


@pytest.fixture(scope="module")
def embedding_serve():
    base = Path(tempfile.mkdtemp(prefix="hg-embed-backlog-"))
    base.chmod(0o755)  # PostgreSQL runs as its own user and must reach its data directory
    embedder = BatchPacedEmbedServer(dimensions=8, slow_seconds=SLOW_CALL_SECONDS)
    scratch = EmbeddingServe(base, embedder.url)
    try:
        (base / "import" / "raw").mkdir(parents=True)
        for number in range(NOTES):
            (base / "import" / "raw" / f"note-{number}.md").write_text(
                f"# Note {number}\n\nThe pool reaper and topic {number % 37}, number {number}.\n", encoding="utf-8"
            )
        copy_migrated_data_dir(scratch.data_dir)  # migrated once per machine (tests/fakes/pg_template.py)
        scratch.manage("brain_import", str(base / "import"), "--no-progress")
        yield scratch, embedder
    finally:
        # The rankings the worker runs after the backlog are done in seconds; a stop in the middle of one waits
        # 15 s for its slice before serve kills the worker.
        embedder.wait_quiet()
        log = scratch.stop()
        embedder.stop()
        _kill_stray_postmaster(scratch)
        if os.environ.get("KEEP_SERVE_LOG"):
            print(log[-5000:])
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.timeout(900)
def test_health_stays_200_while_the_worker_embeds_and_a_restart_resumes_the_backlog(embedding_serve):
    serve, embedder = embedding_serve
    serve.start()

    # 1. While the worker embeds: /health answers 200, names the backlog, and the heartbeat is fresh. Watched until the
    # worker records a heartbeat while it embeds (its age falls: about 30 s after the start's, in a quiet run and on a
    # fresh clone's busy one), or for 75 s; before, always for 75 s.
    answers: list[tuple[float, int, float | None, int]] = []  # (seconds since start, status, heartbeat age, left)
    started = time.monotonic()
    first_left = None
    renewed_at = None  # seconds since start when the heartbeat's age fell: a beat recorded while embedding
    checked = False  # a look after the first 20 s (the checks below) was made
    while time.monotonic() - started < 75 and not (renewed_at is not None and checked):
        status, body = serve.health()
        left = backlog_left(body)
        first_left = left if first_left is None else first_left
        age = body["worker"].get("age_seconds")
        elapsed = round(time.monotonic() - started, 1)
        if answers and age is not None and answers[-1][2] is not None and age < answers[-1][2] and left > 0:
            renewed_at = elapsed  # a beat recorded since the last look, the backlog still waiting
        answers.append((elapsed, status, age, left))
        if time.monotonic() - started > 20:  # serve queued a heartbeat at its start; the worker had 20 s to run it
            assert status == 200, (answers, body["worker"])
            assert body["worker"]["age_seconds"] <= 2 * body["worker"]["interval_seconds"], answers
            assert "chunks pending" in body["embeddings"]["backlog"], body["embeddings"]
            checked = True
        time.sleep(3)
    print(f"\n/health while embedding (s, status, heartbeat age, backlog): {answers}; renewed at {renewed_at} s")
    assert renewed_at is not None, f"no heartbeat was recorded while the worker embedded: {answers}"
    assert first_left is not None and first_left >= NOTES * 0.8, answers
    assert answers[-1][3] > 0, "the backlog drained before the restart: the test proves nothing"
    assert answers[-1][3] < first_left, "the worker embedded nothing while /health was asked"

    # 2. Stopped and started again mid-backlog: it drains, and nobody runs `brain_embed`.
    left_at_stop = backlog_left(serve.health()[1])
    serve.stop()
    # Only serve's start may resume the backlog: a slice that ended inside serve's kill window queued the next one,
    # a killed slice's message comes back once its lock times out, and the schedule runs every 5 minutes. Drop the
    # first two and put the schedule off, so that a start that forgot to resume leaves the backlog waiting.
    dropped = serve.manage("shell", "--no-imports", "-c", DROP_QUEUED_SLICES)
    print(f"\nembedding messages dropped before the restart: {dropped.strip()}")
    embedder.slow_seconds = 0.25  # quicker from now on: only the resuming is under test
    restarted = time.monotonic()
    serve.start()
    wait_for(lambda: backlog_left(serve.health()[1]) == 0, 180, "the backlog to drain after the restart")
    status, body = serve.health()
    print(
        f"backlog {left_at_stop} at the stop, drained {time.monotonic() - restarted:.0f} s after the restart; "
        f"/health {status}: {body['embeddings']['backlog']}"
    )
    assert left_at_stop > 0
    assert status == 200 and body["embeddings"]["active"]["complete"] is True
