"""What the web entry points (`hyperguild.wsgi`, `hyperguild.asgi`) set up before Django loads its settings."""

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from hyperguild.boot import prepare_process
from hyperguild.contributions import web_start_hooks
from hyperguild.lib.db_pool import keep_pool_checked

WEB_PROCESS = "HYPERGUILD_WEB_PROCESS"
# Set by `serve` for its web processes: a file that exists once serve's checks and migrations are done, and the
# pid of that serve. A web process loads its application, then waits for the file before it answers.
SERVE_GATE = "HYPERGUILD_SERVE_GATE"
SERVE_PID = "HYPERGUILD_SERVE_PID"
GATE_POLL_SECONDS = 0.02


class ServeStopped(RuntimeError):
    """The `serve` that started this web process ended before it opened the gate (a failed check or step)."""


def wait_for_serve() -> None:
    """Return once `serve` has opened the gate (at once when this process was not started by serve, or when
    granian replaces a web process later); ServeStopped if that serve is gone first."""
    gate, pid = os.environ.pop(SERVE_GATE, ""), os.environ.pop(SERVE_PID, "")
    if not gate:
        return
    opened = Path(gate)
    while not opened.exists():
        try:
            os.kill(int(pid), 0)
        except (ProcessLookupError, ValueError) as exc:
            raise ServeStopped(f"serve (pid {pid}) stopped before this web process could answer") from exc
        time.sleep(GATE_POLL_SECONDS)


def warm_up() -> None:
    """What a web process's first requests would wait for, done before it answers: the URLconf (Django imports
    it at the first request: every view module) and each app's start hook (the brain maps its BM25 base and
    catches up in the background: brain.bm25.live.warm_in_background)."""
    from django.urls import get_resolver  # Django's settings are loaded by now

    get_resolver().url_patterns  # noqa: B018 - imports the URLconf
    for hook in web_start_hooks():
        hook()


@contextmanager
def web_process_environment() -> Iterator[None]:
    """Load the application inside this block: what every entry point prepares (`prepare_process()`: the
    secret key, the embedded database), and a database pool, which only web processes have.

    Web processes borrow database connections from a pool (HYPERGUILD_DB_POOL connections at most, per
    process, 8 unless set) instead of opening one per request; 0 turns it off. Settings read the marker set
    here when they load, so the application must be built inside the block. It must not leak into processes
    started from this one afterwards: no other process pools (a django-q2 cluster forks its workers: a pool
    opened before the fork would share its sockets between them, so a killed worker's advisory locks would
    outlive it). Once the application is built, `warm_up()` runs, and the process waits for `serve` to open its
    gate (`wait_for_serve()`: the checks and migrations done) before it answers.
    """
    prepare_process()
    before = os.environ.get(WEB_PROCESS)
    os.environ[WEB_PROCESS] = "1"
    try:
        yield
        keep_pool_checked()  # dead pooled connections are thrown out soon after an outage (hyperguild.lib.db_pool)
        warm_up()
        wait_for_serve()
    finally:
        if before is None:
            os.environ.pop(WEB_PROCESS, None)
        else:
            os.environ[WEB_PROCESS] = before
