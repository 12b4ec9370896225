"""Web processes sharing a port keep their shares of the connections even.

With a socket per web process (`hyperguild/web_process.py`) the kernel places each new
connection by a hash of its addresses. Fifty keep-alive connections then split 29/21
about as often as 25/25, and the clients held by the fuller process wait longer for as
long as they stay connected (`bench_load` printed "uneven" in two runs of three, with a
client p99 a third higher than in the even run).

Each web process writes how many connections it holds into its slot of a shared board,
a small file every process of one `serve` maps, ten times a second; a slot not written
for `STALE_AFTER` seconds (a process that died or has not started) does not count. A
process holding more than its share of the live processes' connections
answers one request with `Connection: close`; every HTTP client then reconnects, and
the kernel places the new connection afresh, on any process. Imbalance shrinks by about
one connection per `MIN_GAP` seconds until every process is within `SLACK` of its share;
a balanced server never closes a connection. Few connections (a developer's Claude
Code) are never moved: a process is only above its share with `SLACK` + 1 more.
"""

from __future__ import annotations

import math
import mmap
import os
import struct
import threading
import time
from collections.abc import Callable
from pathlib import Path

SLOT = struct.Struct("<qd")  # connections, time.monotonic() when written (one clock for the machine)
SLACK = 1  # connections above its share a process may keep
MIN_GAP = 0.02  # seconds between two connections a process closes
STALE_AFTER = 1.0  # seconds after which a slot's count is no longer believed


class Board:
    """One (count, time written) slot per web process in a file mapped by all of them."""

    def __init__(self, path: Path, slots: int, slot: int) -> None:
        if slots < 1 or not 0 <= slot < slots:
            raise ValueError(f"slot {slot} is not one of {slots} slots")
        self.slots, self.slot = slots, slot
        size = SLOT.size * slots
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            if os.fstat(fd).st_size < size:
                os.ftruncate(fd, size)
            self.map = mmap.mmap(fd, size)
        finally:
            os.close(fd)

    def publish(self, count: int) -> None:
        SLOT.pack_into(self.map, SLOT.size * self.slot, count, time.monotonic())

    def counts(self) -> list[int | None]:
        """Each slot's count, None for a slot not written in the last STALE_AFTER seconds."""
        now = time.monotonic()
        counts: list[int | None] = []
        for i in range(self.slots):
            count, written = SLOT.unpack_from(self.map, SLOT.size * i)
            counts.append(count if now - written <= STALE_AFTER else None)
        return counts

    def close(self) -> None:
        self.map.close()


def over_share(mine: int, counts: list[int | None], slot: int) -> bool:
    """True if `mine` (this process's connections) is over its even share of the live processes' by more than SLACK."""
    others = [count for i, count in enumerate(counts) if i != slot and count is not None]
    total = mine + sum(max(0, count) for count in others)
    share = math.ceil(total / (len(others) + 1))
    return mine > share + SLACK


class Balancer:
    """Decides, one answer at a time, whether this process lets a connection go."""

    def __init__(self, board: Board, connections: Callable[[], int]) -> None:
        self.board = board
        self.connections = connections
        self.last_close = 0.0
        self.closed = 0
        self.lock = threading.Lock()

    def publish(self) -> int:
        mine = self.connections()
        self.board.publish(mine)
        return mine

    def should_close(self) -> bool:
        with self.lock:
            now = time.monotonic()
            if now - self.last_close < MIN_GAP:
                return False  # the last one closed may not be counted out yet
            mine = self.publish()
            if not over_share(mine, self.board.counts(), self.board.slot):
                return False
            self.last_close = now
            self.closed += 1
            return True


_balancer: Balancer | None = None


def install(balancer: Balancer | None) -> None:
    """Used by `hyperguild.web_process`; without it (uvicorn started by hand, tests) nothing is moved."""
    global _balancer
    _balancer = balancer


def installed() -> Balancer | None:
    return _balancer


def should_close() -> bool:
    balancer = _balancer
    return balancer is not None and balancer.should_close()
