"""A web process's database pool retries a lost database every half second, through psycopg_pool's public options.

psycopg_pool on its own backs off exponentially (1 s, 2 s, 4 s…) between attempts; after a database restart the
requests would wait for the next attempt although the database answers again. `hyperguild.lib.db_pool` gives the
pool `reconnect_timeout` and `reconnect_failed` (public options) instead of changing the library's class constants.
The database here is a TCP listener on 127.0.0.1 that accepts and hangs up at once: each accept is one attempt.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from psycopg_pool import ConnectionPool

from hyperguild.lib.db_pool import RECONNECT_SECONDS, pool_options

WATCH_SECONDS = 4.5


class HangingUpDatabase:
    """Accepts connections on 127.0.0.1 and closes them at once; remembers when each attempt came."""

    def __init__(self) -> None:
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.listener.settimeout(0.2)
        self.port: int = self.listener.getsockname()[1]
        self.attempts: list[float] = []
        self.stopping = False
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stopping:
            try:
                conn, _ = self.listener.accept()
            except TimeoutError:
                continue
            self.attempts.append(time.monotonic())
            conn.close()

    def stop(self) -> None:
        self.stopping = True
        self.thread.join(timeout=5)
        self.listener.close()


@pytest.fixture
def hanging_up_database() -> Iterator[HangingUpDatabase]:
    database = HangingUpDatabase()
    yield database
    database.stop()


def gaps_between(times: list[float]) -> list[float]:
    return [later - earlier for earlier, later in zip(times, times[1:], strict=False)]


def attempt_gaps(
    database: HangingUpDatabase, seen_enough: Callable[[list[float]], bool] | None = None, **options: Any
) -> list[float]:
    """Seconds between the connection attempts of a one-connection pool on `database`, watched WATCH_SECONDS
    (or until `seen_enough` says the gaps so far settle the question)."""
    pool: ConnectionPool[Any] = ConnectionPool(
        f"host=127.0.0.1 port={database.port} user=x dbname=x sslmode=disable gssencmode=disable connect_timeout=2",
        min_size=1,
        max_size=1,
        open=False,
        **options,
    )
    pool.open(wait=False)
    deadline = time.monotonic() + WATCH_SECONDS
    while time.monotonic() < deadline and not (seen_enough and seen_enough(gaps_between(list(database.attempts)))):
        time.sleep(0.05)
    pool.close(timeout=1)
    return gaps_between(database.attempts)


def test_a_lost_database_is_tried_again_every_half_second_for_as_long_as_it_is_down(
    hanging_up_database: HangingUpDatabase,
) -> None:
    options = pool_options(min_size=1, max_size=1, timeout=5)
    gaps = attempt_gaps(hanging_up_database, **{k: v for k, v in options.items() if k.startswith("reconnect")})
    assert len(gaps) >= 5, gaps  # steady: about WATCH_SECONDS / RECONNECT_SECONDS attempts
    assert max(gaps) < 2 * RECONNECT_SECONDS + 0.3, gaps  # never the library's growing pauses


def test_without_the_options_the_pool_backs_off_further_each_time(hanging_up_database: HangingUpDatabase) -> None:
    # What the test above tells apart: psycopg_pool's own policy, 1 s then 2 s between attempts. Watched until a
    # pause that long is seen (the test above watches the whole time: there, what matters is that none comes).
    gaps = attempt_gaps(hanging_up_database, seen_enough=lambda gaps: max(gaps, default=0.0) > 1.6)
    assert max(gaps) > 1.6, gaps
