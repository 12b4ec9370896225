"""`make run` on a fresh clone: time to the first page, where the time goes, and a restart.

    .venv/bin/python bench/first_start.py [--source .] [--keep]

Clones `--source` (this checkout's committed HEAD) into a scratch folder, runs `make run` there on a free port,
and times each step the Makefile and `serve` announce (virtualenv, pip, the embedded PostgreSQL, migrations, the
web processes) until `/login/` answers 200. Then Ctrl-C, and `make run` again: the restart's time to the first
page. pip's download cache (~/.cache/pip) is the machine's: a machine that never installed these wheels adds
their download. Prints a table; RESULTS.md keeps the figures.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
# Lines of `make run` that start a step, and the step's name in the table.
STEPS = [
    ("==> [1/3]", "virtualenv"),
    ("==> [2/3]", "pip install -r requirements.txt"),
    ("==> [3/3]", "manage.py serve: start, embedded PostgreSQL (initdb on a first run)"),
    ("applying", "migrations"),
    ("no migration to apply", "checks, admin account, schedules"),
    ("migrations applied", "checks, admin account, schedules"),
    ("starting the task worker", "workers; web processes load the app"),
    ("waiting for the web server", "web server loads until it answers"),
]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def run_once(folder: Path, port: int, label: str) -> tuple[float, list[tuple[float, str]], subprocess.Popen]:
    """Start `make run`; return (seconds to the first page, [(seconds, step)], the process)."""
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "VIRTUAL_ENV")}
    env.update(HYPERGUILD_PORT=str(port), HYPERGUILD_ADMIN_PASSWORD="first-start-bench")
    started = time.monotonic()
    process = subprocess.Popen(
        ["make", "run"],
        cwd=folder,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    marks: list[tuple[float, str]] = []
    log = folder / f"make-run-{label}.log"

    def read() -> None:
        with open(log, "w") as out:
            for line in process.stdout:  # type: ignore[union-attr]
                out.write(line)
                out.flush()
                for marker, step in STEPS:
                    if marker in line:
                        marks.append((time.monotonic() - started, step))

    threading.Thread(target=read, daemon=True).start()
    while True:
        if process.poll() is not None:
            raise SystemExit(f"make run exited with {process.returncode}; see {log}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/login/", timeout=2).status_code == 200:
                return time.monotonic() - started, marks, process
        except httpx.HTTPError:
            pass
        time.sleep(0.25)


def stop(process: subprocess.Popen) -> float:
    started = time.monotonic()
    os.killpg(process.pid, signal.SIGINT)
    try:
        process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    return time.monotonic() - started


def report(label: str, total: float, marks: list[tuple[float, str]]) -> None:
    print(f"\n{label}: first page after {total:.1f} s")
    points = [*marks, (total, "first page answers")]
    for (at, step), (until, _) in zip(points, points[1:], strict=False):
        print(f"  {at:7.1f} s  {step:<70} {until - at:6.1f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", default=str(ROOT), help="the checkout to clone (its committed HEAD)")
    parser.add_argument("--keep", action="store_true", help="keep the scratch clone")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="hg-first-start-"))
    base.chmod(0o755)  # the embedded PostgreSQL runs as its own user and must reach its data folder
    folder = base / "clone"
    subprocess.run(["git", "clone", "-q", args.source, str(folder)], check=True)
    port = free_port()
    try:
        total, marks, process = run_once(folder, port, "first")
        report("fresh clone, `make run`", total, marks)
        print(f"  Ctrl-C stopped everything in {stop(process):.1f} s")
        total, marks, process = run_once(folder, port, "restart")
        report("restart, `make run` again", total, marks)
        print(f"  Ctrl-C stopped everything in {stop(process):.1f} s")
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
        else:
            print(f"kept {folder}", file=sys.stderr)


if __name__ == "__main__":
    main()
