"""Folder import speed: `manage.py brain_import` of N synthetic notes into a fresh embedded database.

    .venv/bin/python bench/import_speed.py --notes 2000 20000 --checkout . /tmp/hg-03f6726
    .venv/bin/python bench/import_speed.py --notes 2000 --checkout . --embedder local --worker

For each note count a folder of synthetic notes is written once (a third raw, the rest in the wiki under
five wings, `[[links]]` between them; the same seed, so every checkout imports the same files). Then, one
checkout after the other, on the same machine: a fresh data directory (its own embedded PostgreSQL),
`manage.py migrate` (not timed), and `manage.py brain_import DIR --no-progress`, timed from the outside
(process start included, as a user sees it). Printed: seconds, notes/s, the tasks the import queued, and the
load average (the machine may be shared). `--worker` runs `manage.py qcluster` beside the import (the
embedder's work happens there) and reports how many notes it had embedded when the import ended.

A checkout is a directory with `manage.py` (e.g. `git worktree add /tmp/hg-03f6726 03f6726`); it runs with
this checkout's virtualenv unless it has its own `.venv`.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WINGS = ["concepts", "entities", "sources", "guides", "projects"]
HALLS = ["python", "databases", "ops", "web"]
SEED = 34


def pseudo_word(rng: random.Random) -> str:
    return "".join(rng.choice("bcdfghjklmnprstvz") + rng.choice("aeiou") for _ in range(rng.randint(2, 4)))


def write_folder(root: Path, count: int) -> None:
    rng = random.Random(SEED)
    vocabulary = [pseudo_word(rng) for _ in range(20000)]
    weights = [1 / (rank + 1) for rank in range(len(vocabulary))]
    for i in range(count):
        title = " ".join(rng.choices(vocabulary, weights, k=rng.randint(2, 6)))
        body = " ".join(rng.choices(vocabulary, weights, k=rng.randint(40, 200)))
        links = " ".join(f"[[note-{rng.randrange(count)}]]" for _ in range(rng.randint(0, 3)))
        if i % 3 == 0:
            rel = f"raw/note-{i}.md"
        else:
            rel = f"wiki/{rng.choice(WINGS)}/{rng.choice(HALLS)}/note-{i}.md"
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"---\ntitle: {title}\ntags: [t{i % 13}]\n---\n{body}\n\nSee {links}\n", encoding="utf-8")


def python_for(checkout: Path) -> str:
    own = checkout / ".venv" / "bin" / "python"
    return str(own) if own.exists() else sys.executable


def stop_database(data_dir: Path) -> None:
    """Stop the embedded server this run started (its postmaster pid is in postmaster.pid)."""
    for pid_file in data_dir.glob("pg/**/postmaster.pid"):
        try:
            pid = int(pid_file.read_text().split("\n", 1)[0])
            os.kill(pid, signal.SIGINT)  # PostgreSQL's fast shutdown
        except (OSError, ValueError):
            continue
        for _ in range(100):
            if not pid_file.exists():
                break
            time.sleep(0.1)


def queued_tasks(python: str, checkout: Path, env: dict) -> int:
    code = "from django_q.models import OrmQ; print(OrmQ.objects.count())"
    out = subprocess.run(
        [python, "manage.py", "shell", "-c", code], cwd=checkout, env=env, capture_output=True, text=True, check=True
    )
    return int(out.stdout.strip().splitlines()[-1])


def embedded_notes(python: str, checkout: Path, env: dict) -> int:
    code = "from brain.models import Embedding; print(Embedding.objects.values('chunk__note').distinct().count())"
    out = subprocess.run(
        [python, "manage.py", "shell", "-c", code], cwd=checkout, env=env, capture_output=True, text=True, check=True
    )
    return int(out.stdout.strip().splitlines()[-1])


def run_one(checkout: Path, folder: Path, count: int, embedder: str, worker: bool) -> dict:
    python = python_for(checkout)
    data_dir = Path(tempfile.mkdtemp(prefix="hg-import-bench-"))
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "HYPERGUILD_EMBEDDED_DB_URL")}
    env.update(HYPERGUILD_DATA_DIR=str(data_dir), BRAIN_EMBEDDER=embedder, BRAIN_DIR="", PYTHONDONTWRITEBYTECODE="1")
    cluster = None
    try:
        subprocess.run([python, "manage.py", "migrate", "-v0"], cwd=checkout, env=env, check=True)
        if worker:
            cluster = subprocess.Popen(
                [python, "manage.py", "qcluster"],
                cwd=checkout,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
            time.sleep(3)
        load_before = os.getloadavg()[0]
        started = time.perf_counter()
        out = subprocess.run(
            [python, "manage.py", "brain_import", str(folder), "--no-progress"],
            cwd=checkout,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        seconds = time.perf_counter() - started
        result = {
            "seconds": seconds,
            "notes_per_s": count / seconds,
            "summary": out.stdout.strip().splitlines()[0],
            "load": (load_before, os.getloadavg()[0]),
        }
        result["queued"] = queued_tasks(python, checkout, env)
        if cluster is not None:
            result["embedded"] = embedded_notes(python, checkout, env)
        return result
    finally:
        if cluster is not None:
            os.killpg(cluster.pid, signal.SIGKILL)  # a worker busy embedding would finish its batch first
            cluster.wait(timeout=60)
        stop_database(data_dir)
        shutil.rmtree(data_dir, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--notes", type=int, nargs="+", default=[2000])
    parser.add_argument("--checkout", type=Path, nargs="+", default=[Path(".")])
    parser.add_argument("--embedder", default="off", choices=["off", "local"])
    parser.add_argument("--worker", action="store_true", help="run a qcluster beside the import")
    parser.add_argument("--rounds", type=int, default=1, help="alternate the checkouts this many times")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="hg-import-notes-") as scratch:
        for count in args.notes:
            folder = Path(scratch) / f"brain-{count}"
            write_folder(folder, count)
            for round_ in range(args.rounds):
                for checkout in args.checkout:
                    checkout = checkout.resolve()
                    head = subprocess.run(
                        ["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
                    ).stdout.strip()
                    r = run_one(checkout, folder, count, args.embedder, args.worker)
                    drained = f", {r['embedded']} notes embedded by the worker so far" if "embedded" in r else ""
                    print(
                        f"{count} notes, embedder {args.embedder}, {checkout.name}@{head} round {round_ + 1}: "
                        f"{r['seconds']:.1f} s, {r['notes_per_s']:.0f} notes/s, {r['queued']} tasks queued{drained} "
                        f"({r['summary']}; load {r['load'][0]:.1f}→{r['load'][1]:.1f})",
                        flush=True,
                    )


if __name__ == "__main__":
    main()
