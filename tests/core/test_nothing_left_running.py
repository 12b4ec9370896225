"""A command starts nothing it does not stop (issue 47, item 5).

A one-off `manage.py` command run while the server is down started the embedded PostgreSQL and left it running
(still there after the next `make run` and its Ctrl-C); a test session did the same. Each runs here for real on
a scratch data folder, and no postmaster may be left afterwards; one that was running before is left alone.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from hyperguild.lib.embedded_db import embedded_database_running, stop_embedded_database
from tests.fakes.helpers import wait_for
from tests.fakes.pg_template import copy_migrated_data_dir

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def data_dir() -> Iterator[Path]:
    # Not under pytest's tmp dir: run as root, PostgreSQL runs as its own user and must reach its folder.
    base = Path(tempfile.mkdtemp(prefix="hg-nothing-left-"))
    base.chmod(0o755)
    try:
        yield base / "data"
    finally:
        if embedded_database_running(base / "data"):
            stop_embedded_database(base / "data")  # never leave one behind, even when the test fails
        shutil.rmtree(base, ignore_errors=True)


def env_for(data_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "HYPERGUILD_EMBEDDED_DB_URL")}
    return {**env, "HYPERGUILD_DATA_DIR": str(data_dir)}


def manage(data_dir: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env_for(data_dir),
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_one_off_command_stops_the_database_it_started(data_dir):
    copy_migrated_data_dir(data_dir)  # a stopped, migrated server: the command has to start it
    assert not embedded_database_running(data_dir)
    done = manage(data_dir, "showmigrations", "brain")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "[X] 0001_initial" in done.stdout  # it did start the server and read it
    assert not embedded_database_running(data_dir)

    failed = manage(data_dir, "project_sync", "nobody")  # a command that fails stops it too
    assert failed.returncode != 0 and "no project named" in failed.stderr
    assert not embedded_database_running(data_dir)


def test_a_one_off_command_leaves_a_database_that_was_running_alone(data_dir):
    from hyperguild.lib.embedded_db import ensure_database, started_by_this_process

    copy_migrated_data_dir(data_dir)
    ensure_database(data_dir)  # "the server is up": someone else started it
    assert started_by_this_process(data_dir)
    done = manage(data_dir, "check")
    assert done.returncode == 0, done.stderr[-3000:]
    assert embedded_database_running(data_dir)


def test_a_test_session_stops_the_database_it_started(data_dir):
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "--collect-only", "-p", "no:cacheprovider", "tests/core/test_health.py"],
        cwd=ROOT,
        env=env_for(data_dir),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert (data_dir / "pg" / "PG_VERSION").exists()
    assert not embedded_database_running(data_dir)


def wait_for_file_code(path: Path) -> str:
    """Python for `manage.py shell -c`: wait until `path` exists (what the test or the other command says), at most
    two minutes, then exit with an error."""
    return (
        "import pathlib, sys, time\n"
        f"signal = pathlib.Path({str(path)!r})\n"
        "deadline = time.monotonic() + 120\n"
        "while not signal.exists() and time.monotonic() < deadline:\n"
        "    time.sleep(0.05)\n"
        f"signal.exists() or sys.exit('timed out waiting for {path.name}')\n"
    )


def test_two_one_off_commands_at_once_never_stop_the_database_under_each_other(data_dir):
    """The first command starts the server; a second starts while it runs and outlives it. Before, the first
    stopped the server on its way out and the second lost its database mid-command; now the last to leave
    stops it."""
    copy_migrated_data_dir(data_dir)
    second_connected = data_dir.parent / "second-connected"  # the first command ends only once the second uses it
    first_ended = data_dir.parent / "first-ended"  # the second queries again only after the first has ended
    first = subprocess.Popen(
        [sys.executable, "manage.py", "shell", "-c", wait_for_file_code(second_connected)],
        cwd=ROOT,
        env=env_for(data_dir),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_for(lambda: embedded_database_running(data_dir), 120, "the first command to start the database")
    second = subprocess.Popen(
        [
            sys.executable,
            "manage.py",
            "shell",
            "-c",
            "import pathlib\nfrom django.db import connection\n"
            "connection.cursor().execute('SELECT 1')\n"
            f"pathlib.Path({str(second_connected)!r}).touch()\n"
            + wait_for_file_code(first_ended)  # the first command ends meanwhile
            + "connection.close()\n"
            "with connection.cursor() as cursor:\n"
            "    cursor.execute('SELECT count(*) FROM django_migrations')\n"
            "    print('migrations', cursor.fetchone()[0])\n",
        ],
        cwd=ROOT,
        env=env_for(data_dir),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _, first_err = first.communicate(timeout=120)
    assert first.returncode == 0, first_err[-3000:]
    assert second.poll() is None, "the second command ended before the first: the test proves nothing"
    assert embedded_database_running(data_dir), "the first command stopped the database the second one uses"
    first_ended.touch()
    out, err = second.communicate(timeout=120)
    assert second.returncode == 0 and "migrations" in out, err[-3000:]
    assert not embedded_database_running(data_dir)  # the last to leave stopped it


def test_a_bench_script_stops_the_database_it_started(data_dir):
    """bench/ scripts start Django with hyperguild.boot.setup_django(): one that had to start the embedded
    PostgreSQL left it running after it ended (found after a benchmark run)."""
    copy_migrated_data_dir(data_dir)
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "from hyperguild.boot import setup_django\nsetup_django()\n"
            "from django.db import connection\nconnection.cursor().execute('SELECT 1')\nprint('read')",
        ],
        cwd=ROOT,
        env=env_for(data_dir),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0 and "read" in done.stdout, done.stderr[-3000:]
    assert not embedded_database_running(data_dir)
