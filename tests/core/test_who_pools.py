"""Which processes pool database connections is decided by their entry point, never by the command line.

The web entry points (hyperguild.wsgi, hyperguild.asgi) mark their process while Django loads, and only such a
process gets a pool (HYPERGUILD_DB_POOL, 8 by default). manage.py — every command, the django-q2 cluster among
them, which forks its workers — connects directly, even with HYPERGUILD_DB_POOL set; so does a process the web
process starts afterwards.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
UNREACHABLE = "postgresql://x@127.0.0.1:1/x"  # a pool object is made without connecting
SHOW_POOL = (
    "import json, os; from django.db import connection; "
    "pool = connection.pool; print(json.dumps({'pool': None if pool is None else pool.max_size, "
    "'marker_left': os.environ.get('HYPERGUILD_WEB_PROCESS')}))"
)


def environment(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in {"HYPERGUILD_DB_POOL", "HYPERGUILD_WEB_PROCESS"}}
    env.update(
        DATABASE_URL=UNREACHABLE, HYPERGUILD_DATA_DIR=str(tmp_path), DJANGO_SETTINGS_MODULE="hyperguild.settings"
    )
    env.update(extra)
    return env


def last_json(completed: subprocess.CompletedProcess[str]) -> dict[str, object]:
    assert completed.returncode == 0, completed.stderr
    shown: dict[str, object] = json.loads(completed.stdout.strip().splitlines()[-1])
    return shown


def test_a_web_process_pools_and_leaves_no_marker_for_the_processes_it_starts(tmp_path: Path) -> None:
    for module in ("hyperguild.wsgi", "hyperguild.asgi"):
        completed = subprocess.run(
            [sys.executable, "-c", f"import {module}; {SHOW_POOL}"],
            cwd=ROOT,
            env=environment(tmp_path),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert last_json(completed) == {"pool": 8, "marker_left": None}, module


def test_a_web_process_pools_as_many_connections_as_the_operator_says(tmp_path: Path) -> None:
    completed = subprocess.run(
        [sys.executable, "-c", f"import hyperguild.wsgi; {SHOW_POOL}"],
        cwd=ROOT,
        env=environment(tmp_path, HYPERGUILD_DB_POOL="3"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert last_json(completed)["pool"] == 3


def test_commands_and_the_worker_cluster_connect_directly_even_with_a_pool_size_set(tmp_path: Path) -> None:
    completed = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", SHOW_POOL],
        cwd=ROOT,
        env=environment(tmp_path, HYPERGUILD_DB_POOL="8"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert last_json(completed) == {"pool": None, "marker_left": None}


def test_the_settings_never_read_the_command_line() -> None:
    # The cluster (`manage.py qcluster`) once lost its pool because settings looked for "qcluster" in sys.argv.
    assert "argv" not in (ROOT / "hyperguild" / "settings.py").read_text(encoding="utf-8")
