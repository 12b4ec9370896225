"""Time the review UI at scale: the queue, a note page with filter-aware navigation, bulk actions and undo.

    .venv/bin/python bench/review.py --notes 5000 --bulk 200

(Formerly `manage.py review_bench`; the options are the same.) Everything it writes (the raw notes, a staff
user, the revisions) is rolled back at the end, like bench/routing_sim.py: run it against any database.
Prints figures; asserts nothing.
"""

from __future__ import annotations

import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from statistics import median
from typing import Any

if __name__ == "__main__":  # `python bench/x.py` puts bench/ first on the path: the checkout belongs there
    sys.path[0] = str(Path(__file__).resolve().parents[1])

from bench.script import BenchCommand, run, setup_django  # noqa: E402

setup_django()

from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management.base import CommandParser  # noqa: E402
from django.db import connection, transaction  # noqa: E402
from django.http import HttpResponseBase  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402

from brain.actions import do_undo_revision, do_write_raw_note  # noqa: E402
from brain.models import Note, NoteRevision, NoteStatus  # noqa: E402


class Rollback(Exception):
    """Raised at the end to undo everything the benchmark wrote."""


class Command(BenchCommand):
    help = "Time the review queue, a note page and bulk reject/undo over N raw notes (rolled back at the end)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--notes", type=int, default=5000, help="raw notes to create (default 5000)")
        parser.add_argument("--bulk", type=int, default=200, help="notes to reject in one select-all bulk action")
        parser.add_argument("--repeat", type=int, default=5, help="timed repetitions of each page (median shown)")

    def handle(self, *args: Any, notes: int, bulk: int, repeat: int, **options: Any) -> None:
        try:
            with transaction.atomic():
                self.run(notes=notes, bulk=bulk, repeat=repeat)
                raise Rollback
        except Rollback:
            pass
        self.stdout.write(self.style.SUCCESS("Done; everything the benchmark wrote was rolled back."))

    def run(self, *, notes: int, bulk: int, repeat: int) -> None:
        run = uuid.uuid4().hex[:8]
        started = time.perf_counter()
        for n in range(notes):
            source = "bench-bulk" if n < bulk else "bench"
            do_write_raw_note(
                title=f"Bench note {run} {n}",
                body=f"Learning {n}: " + "retry uploads with jitter " * 20,
                source=source,
                slug=f"bench-{run}-{n}",
            )
        self.stdout.write(f"created {notes} raw notes in {time.perf_counter() - started:.1f} s")
        user = get_user_model().objects.create_user(f"bench-{run}", is_staff=True)
        # Django's test client: the whole request, middleware included, as a logged-in reviewer.
        browser = Client(SERVER_NAME="localhost")
        browser.force_login(user)

        def get(path: str, data: dict[str, str] | None = None) -> Callable[[], HttpResponseBase]:
            return lambda: browser.get(path, data or {})

        def timed(label: str, call: Callable[[], HttpResponseBase]) -> None:
            times, queries = [], 0
            for _ in range(repeat):
                with CaptureQueriesContext(connection) as captured:
                    t0 = time.perf_counter()
                    response = call()
                    times.append((time.perf_counter() - t0) * 1000)
                queries = len(captured)
                if response.status_code >= 400:
                    raise RuntimeError(f"{label}: HTTP {response.status_code}")
            self.stdout.write(f"{label:<55} median {median(times):7.1f} ms  ({queries} queries)")

        timed("queue, newest first, 25 a page", get("/review/"))
        timed("queue, 200 a page", get("/review/", {"per": "200"}))
        timed(
            "queue, page 20 at 200 a page, sorted by title",
            get("/review/", {"per": "200", "sort": "title", "page": "20"}),
        )
        timed("queue filtered by source", get("/review/", {"source": "bench"}))
        middle = Note.objects.raw_queue().filter(source="bench")[notes // 2]
        timed(
            "note page opened from a filter (with j/k neighbours)",
            get(f"/review/{middle.pk}/", {"from": "source=bench&sort=title"}),
        )

        # A long raw note (issue 31): its page reads the stored similar-notes ranking, never searches per view.
        sections = [
            f"## Section {i}\n\n" + "Retry uploads with jitter and backoff; log every attempt. " * 12 for i in range(40)
        ]
        long = do_write_raw_note(
            title=f"Long bench note {run}", body="\n\n".join(sections), source="bench-long", slug=f"bench-{run}-long"
        )
        self.stdout.write(f"long raw note: {len(long.body):,} characters")
        timed(
            "similar notes ranked now (the background task's work)", get(f"/review/{long.pk}/similar/", {"again": "1"})
        )
        timed("raw note page, long body (ranking stored)", get(f"/review/{long.pk}/"))
        timed(
            "raw note page, long body, opened from a filter", get(f"/review/{long.pk}/", {"from": "source=bench-long"})
        )

        matching = Note.objects.raw_queue().filter(source="bench-bulk").count()
        t0 = time.perf_counter()
        response = browser.post(
            "/review/bulk/",
            {
                "action": "reject",
                "reason": "bench",
                "select_all": "1",
                "expected_count": str(matching),
                "next_query": "source=bench-bulk",
            },
        )
        elapsed = time.perf_counter() - t0
        rejected = Note.objects.filter(source="bench-bulk", status=NoteStatus.REJECTED).count()
        self.stdout.write(
            f"bulk reject, select all {matching} matching: {elapsed:.2f} s "
            f"({elapsed / max(rejected, 1) * 1000:.1f} ms a note, HTTP {response.status_code}, {rejected} rejected)"
        )
        groups = list(
            NoteRevision.objects.filter(note__source="bench-bulk", action="reject")
            .order_by()
            .values_list("group", flat=True)
            .distinct()
        )
        t0 = time.perf_counter()
        restored = sum(len(do_undo_revision(group, user=user)) for group in groups)
        elapsed = time.perf_counter() - t0
        self.stdout.write(
            f"undo of the bulk reject ({len(groups)} revision group, {restored} notes restored): "
            f"{elapsed:.2f} s ({elapsed / max(restored, 1) * 1000:.1f} ms a note)"
        )


if __name__ == "__main__":
    run(Command())
