"""How the web processes' database pool (psycopg_pool, through Django) comes back after an outage.

psycopg_pool replaces a broken connection in the background, retrying with exponential backoff:
1 s, 2 s, 4 s, 8 s, 16 s… (`AttemptWithBackoff`). After `kill -9` of the postmaster every pooled
connection breaks at once, and if the server takes a few seconds to come back (crash recovery
after a burst of writes, an embedding backlog), the next attempts fall 8 or 16 s later: requests
wait for them although the database answers again, and /health waited out the whole checkout
timeout (tests/core/test_recovery_with_backlog.py). The pool has no setting for the backoff, only
these class constants, so `steady_reconnects()` sets them: a retry every RECONNECT_SECONDS, never
longer. A failed attempt on a unix socket or a refused TCP port costs next to nothing; the retries
still end after the pool's `reconnect_timeout` (5 minutes).

/health does not borrow through Django: `database_version()` checks out with its own short
timeout, so a health probe answers within HEALTH_CHECKOUT_SECONDS whatever the pool's state.
"""

from __future__ import annotations

from django.db import connection
from psycopg_pool.base import AttemptWithBackoff

RECONNECT_SECONDS = 0.5
HEALTH_CHECKOUT_SECONDS = 2.0
VECTOR_VERSION_SQL = "SELECT extversion FROM pg_extension WHERE extname = 'vector'"


def steady_reconnects() -> None:
    """Retry a lost pooled connection every RECONNECT_SECONDS (±10%) instead of backing off exponentially."""
    AttemptWithBackoff.INITIAL_DELAY = RECONNECT_SECONDS
    AttemptWithBackoff.DELAY_BACKOFF = 1.0


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
