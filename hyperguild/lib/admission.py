"""At most N requests of a web process run at once; the others wait their turn, in order.

A web process runs its requests' Python on one interpreter lock. Fifty requests let in
together all slow each other down (each gets a fiftieth of the core, and the lock's
hand-overs cost time of their own); let in a few at a time, each finishes in its own few
milliseconds and the rest wait in arrival order, which gives more calls per second and
a much shorter tail (`bench/load.py` measures both). HYPERGUILD_WEB_CONCURRENCY
sets N (default 2).

Waiting on something outside the service must not hold a place: a request gives its
place up for good with `leave()` (the MCP engine does it for tools that wait on a
skill worker or a model), or for the length of a call with `with outside():` (every
outbound HTTP call in `hyperguild.lib.http`: embedders, rerankers, LLMs), queueing
again at the end. Places are taken on the request's own thread (each request has one).
"""

from __future__ import annotations

import contextvars
import threading
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager


class Gate:
    """A first-come, first-served limit shared by a process's request threads."""

    def __init__(self, limit: int) -> None:
        self.limit = max(1, limit)
        self.running = 0
        self.waiting: deque[threading.Lock] = deque()
        self.lock = threading.Lock()

    def enter(self) -> None:
        with self.lock:
            if self.running < self.limit:  # nobody waits while a place is free
                self.running += 1
                return
            turn = threading.Lock()
            turn.acquire()
            self.waiting.append(turn)
        turn.acquire()  # released by `exit`, which hands its place straight to us

    def exit(self) -> None:
        with self.lock:
            if self.waiting:
                self.waiting.popleft().release()
            else:
                self.running -= 1


class Ticket:
    """One request's place in a gate."""

    def __init__(self, gate: Gate) -> None:
        self.gate = gate
        self.inside = False
        self.left = False

    def enter(self) -> None:
        if not self.inside and not self.left:
            self.gate.enter()
            self.inside = True

    def exit(self) -> None:
        if self.inside:
            self.inside = False
            self.gate.exit()


_ticket: contextvars.ContextVar[Ticket | None] = contextvars.ContextVar("hyperguild_admission_ticket", default=None)


@contextmanager
def admitted(gate: Gate) -> Iterator[None]:
    """Wait for a place, run the request's code holding it, give it back."""
    ticket = Ticket(gate)
    token = _ticket.set(ticket)
    ticket.enter()
    try:
        yield
    finally:
        ticket.exit()
        _ticket.reset(token)


def leave() -> None:
    """Give up this request's place for the rest of the request (no-op outside a gate)."""
    ticket = _ticket.get()
    if ticket is not None:
        ticket.exit()
        ticket.left = True


@contextmanager
def outside() -> Iterator[None]:
    """Give the place up while waiting on another service; queue again afterwards."""
    ticket = _ticket.get()
    if ticket is None or not ticket.inside:
        yield
        return
    ticket.exit()
    try:
        yield
    finally:
        ticket.enter()
