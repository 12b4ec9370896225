"""How the web processes' database pool (psycopg_pool, through Django) comes back after an outage.

psycopg_pool replaces a broken connection in the background, retrying with exponential backoff (1 s, 2 s,
4 s, 8 s, 16 s…) until its `reconnect_timeout`. After `kill -9` of the postmaster every pooled connection
breaks at once, and if the server takes a few seconds to come back (crash recovery after a burst of writes,
an embedding backlog), the next attempts would fall 8 or 16 s later: requests would wait for them although
the database answers again, and /health waited out the whole checkout timeout
(tests/core/test_recovery_with_backlog.py).

So the pool is told, through its public options (`pool_options()`), to give an attempt up after
RECONNECT_SECONDS — which also cuts its first backoff to RECONNECT_SECONDS — and `reconnect_failed` asks it,
RECONNECT_SECONDS later, to check itself and grow again (`ConnectionPool.check()`), which starts a fresh
attempt and throws out every other pooled connection that died with the server. A lost connection is
therefore retried every RECONNECT_SECONDS for as long as the database is down (tests/core/test_pool_reconnects.py);
a failed attempt on a unix socket or a refused TCP port costs next to nothing.

A request that borrows a pooled connection which died with the server is handed the next one after a pause,
and psycopg_pool lengthens that pause each time (1 s, 2 s, 4 s…), so a request that met several dead
connections in a row could run out of time although the database answered again. Each web process therefore
has the pool check its idle connections every POOL_CHECK_SECONDS (`keep_pool_checked()`, an empty query per
idle connection, the pool's own `check()`): dead ones are thrown out within that time of an outage.

/health does not borrow through Django: `database_version()` checks out with its own short
timeout, so a health probe answers within HEALTH_CHECKOUT_SECONDS whatever the pool's state.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, TypedDict

from django.db import DEFAULT_DB_ALIAS, connection, connections
from psycopg_pool import ConnectionPool

RECONNECT_SECONDS = 0.5
POOL_CHECK_SECONDS = 1.0
HEALTH_CHECKOUT_SECONDS = 2.0
VECTOR_VERSION_SQL = "SELECT extversion FROM pg_extension WHERE extname = 'vector'"


def try_again(pool: ConnectionPool[Any]) -> None:
    """psycopg_pool's `reconnect_failed` callback: an attempt gave up after RECONNECT_SECONDS; start another
    RECONNECT_SECONDS later (a timer thread of ours, so the pool's own workers never wait)."""
    timer = threading.Timer(RECONNECT_SECONDS, grow_again, args=(pool,))
    timer.daemon = True
    timer.start()


def grow_again(pool: ConnectionPool[Any]) -> None:
    """`check()` lets the pool grow back by one connection (a new attempt) and discards the pooled connections
    that no longer answer, so a request is not handed them one after the other."""
    if not pool.closed:
        pool.check()


_checker_started = threading.Event()


def keep_pool_checked() -> None:
    """Start this process's pool checker (once): a daemon thread that has the default database's pool check
    its idle connections every POOL_CHECK_SECONDS. The web entry points call it (hyperguild.serving)."""
    if _checker_started.is_set():
        return
    _checker_started.set()
    threading.Thread(target=_check_pool_forever, name="db-pool-checker", daemon=True).start()


def _check_pool_forever() -> None:
    while True:
        time.sleep(POOL_CHECK_SECONDS)
        pool = getattr(connections[DEFAULT_DB_ALIAS], "pool", None)
        if pool is not None:
            try:
                grow_again(pool)
            except Exception:  # noqa: BLE001 - a pool closing under it: the next round looks again
                continue


class PoolOptions(TypedDict):
    """psycopg_pool.ConnectionPool's keyword arguments, as Django's OPTIONS["pool"] passes them on."""

    min_size: int
    max_size: int
    timeout: float
    reconnect_timeout: float
    reconnect_failed: Callable[[ConnectionPool[Any]], None]


def pool_options(*, min_size: int, max_size: int, timeout: float) -> PoolOptions:
    """OPTIONS["pool"] of a Django database: psycopg_pool's keyword arguments, the reconnection policy above."""
    return {
        "min_size": min_size,
        "max_size": max_size,
        "timeout": timeout,
        "reconnect_timeout": RECONNECT_SECONDS,
        "reconnect_failed": try_again,
    }


def database_version() -> str | None:
    """pgvector's version (None when the extension is missing); raises when the database does not answer
    within HEALTH_CHECKOUT_SECONDS (pooled) or its connect timeout (unpooled)."""
    pool = getattr(connection, "pool", None)
    if pool is None or connection.in_atomic_block:
        with connection.cursor() as cursor:
            cursor.execute(VECTOR_VERSION_SQL)
            row = cursor.fetchone()
        return row[0] if row else None
    pool.open()
    with pool.connection(timeout=HEALTH_CHECKOUT_SECONDS) as conn:
        row = conn.execute(VECTOR_VERSION_SQL).fetchone()
    return row[0] if row else None
