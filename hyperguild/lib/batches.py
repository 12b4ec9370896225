"""Bounds on batch work: one batch at a time per web process, and each person's share of items a minute.

A batch door (`POST /api/hooks/spool`, `POST /backfill-embeddings`) does in one request what single
doors do in hundreds. Unbounded, four concurrent batches held every place of a web process's admission
gate (hyperguild/lib/admission.py) and `/health/live` and `/query` waited minutes behind them (issue 46,
finding 1). Three bounds together:

- each door caps the items of one request (not only its bytes): the spool's schema, the review page's bulk
  action (brain.views.bulk.MAX_BULK_NOTES), an import file (sessions.folder.MAX_IMPORT_LINES);
- `batch_lane`: at most HYPERGUILD_BATCH_CONCURRENCY batches run at once in a web process; one more is
  answered 429 with `Retry-After: 1` at once, before it would take a place in the admission queue, so
  batches can never hold every place (BatchLaneMiddleware, ahead of AdmissionMiddleware);
- `batch_budget`: a person's items (entries and gap reports) per minute, HYPERGUILD_BATCH_ITEMS_PER_MINUTE;
  past it the request is answered 429 with the seconds to wait and nothing is written.

`new_project_allowance` bounds the projects a person's sessions create from their folders, likewise.

Both are counted in the web process (as the registration lane is): with N processes a person's share is
at most N times the setting, still bounded.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, JsonResponse
from django.http.response import HttpResponseBase
from django.urls import reverse

from hyperguild.errors import error_body

WINDOW_SECONDS = 60.0
# Batch doors: URL names whose POST is a batch.
BATCH_ROUTES = ("sessions-claude-hook-spool", "brain-api-backfill-embeddings")


class BatchLane:
    """At most HYPERGUILD_BATCH_CONCURRENCY batches at once in this process; `enter` never waits."""

    def __init__(self) -> None:
        self.places: tuple[int, threading.BoundedSemaphore] | None = None
        self.lock = threading.Lock()

    def enter(self) -> threading.BoundedSemaphore | None:
        """A place (give it back with `leave`), or None when every place is taken."""
        with self.lock:
            limit = settings.HYPERGUILD_BATCH_CONCURRENCY
            if self.places is None or self.places[0] != limit:  # the setting changed (tests): new places
                self.places = (limit, threading.BoundedSemaphore(limit))
            places = self.places[1]
        return places if places.acquire(blocking=False) else None

    @staticmethod
    def leave(place: threading.BoundedSemaphore) -> None:
        place.release()


batch_lane = BatchLane()


class BatchLaneMiddleware:
    """Before the admission gate: a batch takes a place in `batch_lane` or is answered 429 at once."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response
        self.paths: frozenset[str] | None = None

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        if self.paths is None:
            self.paths = frozenset(reverse(name) for name in BATCH_ROUTES)
        if request.method != "POST" or request.path_info not in self.paths:
            return self.get_response(request)
        place = batch_lane.enter()
        if place is None:
            message = (
                "Another batch is being stored right now (HYPERGUILD_BATCH_CONCURRENCY per web process); "
                "send this one again in a second."
            )
            response = JsonResponse(error_body("throttled", message), status=429)
            response["Retry-After"] = "1"
            return response
        try:
            return self.get_response(request)
        finally:
            batch_lane.leave(place)


class Allowance:
    """Each person's units in a sliding window (`window` seconds, at most `limit()` units), in this process."""

    def __init__(self, limit: Callable[[], int], window: float = WINDOW_SECONDS) -> None:
        self.limit = limit
        self.window = window
        self.lock = threading.Lock()
        self.spent: dict[str, deque[tuple[float, int]]] = {}

    def take(self, person: str, items: int) -> float:
        """Count `items` for `person`: 0.0 when taken, else the seconds until they fit (nothing counted)."""
        limit = self.limit()
        now = time.monotonic()
        with self.lock:
            if len(self.spent) > 10_000:  # many people: forget those with nothing in the window
                for key in [key for key, marks in self.spent.items() if not marks or marks[-1][0] <= now - self.window]:
                    del self.spent[key]
            marks = self.spent.setdefault(person, deque())
            while marks and marks[0][0] <= now - self.window:
                marks.popleft()
            used = sum(count for _, count in marks)
            if used + items <= limit:
                marks.append((now, items))
                return 0.0
            if items > limit:
                return self.window
            # The oldest marks leave the window first: wait until enough of them have.
            freed = 0
            for at, count in marks:
                freed += count
                if used - freed + items <= limit:
                    return max(1.0, math.ceil(at + self.window - now))
            return self.window

    def forget(self) -> None:
        with self.lock:
            self.spent.clear()


# A person's batch items a minute (spool entries and gaps).
batch_budget = Allowance(lambda: settings.HYPERGUILD_BATCH_ITEMS_PER_MINUTE)
# Projects a person's sessions may create from their folders (a hook's cwd) an hour: 1,000 SessionStarts with
# distinct folders made 1,000 projects in two requests (issue 46). Past it a session is logged without one.
new_project_allowance = Allowance(lambda: settings.HYPERGUILD_NEW_PROJECTS_PER_HOUR, 3600.0)


def person_key(user: object) -> str:
    """Whose allowance a request spends: the person's, or the service identity's (user None)."""
    pk = getattr(user, "pk", None)
    return f"user:{pk}" if pk else "service"
