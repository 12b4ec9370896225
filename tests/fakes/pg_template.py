"""A migrated embedded data folder, made once and copied for every scratch server that needs one.

Tests that run `manage.py serve` (or other commands) on a scratch embedded PostgreSQL used to make it from
nothing each time: `initdb`, then the 110 migrations, 20-30 s per module on 2 cores. The first test of a machine
that asks makes one in the system's temporary folder (keyed by this checkout and the text of its migrations, so a
changed migration makes a new one), stopped cleanly; every other copies it (`cp -a`: the server's files keep
their owner, the system user PostgreSQL runs as when the tests run as root). An flock keeps two xdist workers
from making it at once.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
APPS = ("hyperguild", "brain", "supervisor", "sessions", "people", "ledger", "observability")


def _key() -> str:
    digest = hashlib.sha256(str(ROOT).encode())
    for app in APPS:
        for path in sorted((ROOT / app / "migrations").glob("*.py")):
            digest.update(path.name.encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _environment(data_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "HYPERGUILD_EMBEDDED_DB_URL")}
    env.pop("XDG_RUNTIME_DIR", None)  # the data folder's own (boot makes it), not the test process's
    return {**env, "HYPERGUILD_DATA_DIR": str(data_dir), "BRAIN_EMBEDDER": "off"}


def template_data_dir() -> Path:
    """The migrated, stopped data folder of this checkout (made on first use)."""
    home = Path(tempfile.gettempdir()) / f"hg-pg-template-{_key()}"
    made = home / "made"
    if made.exists():
        return home / "data"
    home.mkdir(exist_ok=True)
    home.chmod(0o755)  # PostgreSQL runs as its own user and must reach its data folder
    with open(home.parent / f"{home.name}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if not made.exists():
                shutil.rmtree(home / "data", ignore_errors=True)
                done = subprocess.run(
                    [sys.executable, "manage.py", "migrate", "-v0"],
                    cwd=ROOT,
                    env=_environment(home / "data"),
                    capture_output=True,
                    text=True,
                    timeout=600,
                )
                # A one-off command stops the database it started (issue 47): the folder is left stopped.
                assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
                assert not (home / "data" / "pg" / "postmaster.pid").exists(), "migrate left the database running"
                made.touch()
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return home / "data"


def copy_migrated_data_dir(target: Path) -> Path:
    """Put a migrated (stopped) embedded data folder at `target`, which must not exist yet; returns it."""
    source = template_data_dir()
    target.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["cp", "-a", str(source), str(target)], check=True, timeout=120)
    for runtime in ("run", "embedded_db.lock"):  # the copy's own runtime folder and lock, made on its first start
        path = target / runtime
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        elif path.exists():
            path.unlink()
    return target
