"""What the web entry points (`hyperguild.wsgi`, `hyperguild.asgi`) set up before Django loads its settings."""

import os
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def web_process_environment() -> Iterator[None]:
    """Load the application inside this block: web processes get a database pool, other processes do not.

    Web processes borrow database connections from a pool (HYPERGUILD_DB_POOL connections at most, per
    process) instead of opening one per request; 0 turns it off. Settings read it when they load, so the
    application must be built inside the block. The web default must not leak into processes started
    from this one afterwards (a django-q2 cluster forks its workers: a pool opened before the fork would
    share its sockets between them, so a killed worker's advisory locks would outlive it).
    """
    pool_default_set_here = "HYPERGUILD_DB_POOL" not in os.environ
    os.environ.setdefault("HYPERGUILD_DB_POOL", "8")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hyperguild.settings")
    try:
        yield
    finally:
        if pool_default_set_here:
            os.environ.pop("HYPERGUILD_DB_POOL", None)
