"""Two promotions racing for one slug: the second gets the next free number, never a 500.

A bulk promote with "slug from the title" picks the first free slug with a SELECT, but a
promotion still in flight in another transaction is invisible to that SELECT: both pick the
same slug, and the second one's UPDATE waits on the unique index and then fails. The test
makes that interleaving happen every time: the first promotion holds its transaction open
until the second (a real HTTP request to the live server) is seen waiting on it in
pg_stat_activity. An explicit slug (promote or refile) in the same race is refused with the
error a reviewer can act on, as when the other note had it all along.
"""

from __future__ import annotations

import html
import re
import threading
import time
from collections.abc import Callable

import httpx
import pytest
from django.db import connection, transaction

from brain.actions import do_ingest_note, do_promote_note, do_refile_note, do_write_raw_note
from brain.errors import BrainInputError
from brain.models import Note, NoteRevision, NoteStatus

pytestmark = pytest.mark.django_db(transaction=True)

HIDDEN = re.compile(r'<input type="hidden" name="csrfmiddlewaretoken" value="([^"]*)"')


def signed_in(base: str, username: str, password: str) -> tuple[httpx.Cookies, str]:
    """A reviewer's session cookies and a CSRF token, as a browser has them after signing in."""
    with httpx.Client(base_url=base, follow_redirects=False, timeout=30) as browser:
        token = HIDDEN.search(browser.get("/login/").text).group(1)
        done = browser.post(
            "/login/", data={"csrfmiddlewaretoken": token, "next": "/", "username": username, "password": password}
        )
        assert done.status_code == 302, done.text[:500]
        queue = browser.get("/review/")
        assert queue.status_code == 200, queue.status_code
        return browser.cookies, html.unescape(HIDDEN.search(queue.text).group(1))


def waiting_on_a_lock() -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
        )
        return cursor.fetchone()[0] > 0


class HeldAction(threading.Thread):
    """A slug-changing action (promote, refile) in its own transaction and connection, held open until `release()`."""

    def __init__(self, promote: Callable[[], Note]) -> None:
        super().__init__(daemon=True)
        self.promote, self.holding, self.released = promote, threading.Event(), threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            with transaction.atomic():
                self.promote()
                self.holding.set()
                self.released.wait(60)
        except BaseException as exc:  # handed to the test, which re-raises it
            self.error = exc
        finally:
            self.holding.set()
            connection.close()

    def hold(self) -> None:
        self.start()
        assert self.holding.wait(30) and self.error is None, self.error

    def release(self) -> None:
        self.released.set()
        self.join(30)
        assert self.error is None, self.error


def in_thread(work: Callable[[], object]) -> tuple[threading.Thread, dict]:
    outcome: dict = {}

    def run() -> None:
        try:
            outcome["value"] = work()
        except BaseException as exc:
            outcome["error"] = exc
        finally:
            connection.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, outcome


def release_once_blocked(first: HeldAction, second: threading.Thread) -> None:
    """Let the first action commit once the second waits on it: the race happened, every time."""
    deadline = time.monotonic() + 30
    while second.is_alive() and not waiting_on_a_lock() and time.monotonic() < deadline:
        time.sleep(0.02)
    blocked = second.is_alive() and waiting_on_a_lock()
    first.release()
    second.join(30)
    assert not second.is_alive()
    assert blocked, "the second promotion never waited on the first: the race was not reproduced"


def test_a_bulk_promote_racing_another_promotion_for_its_slug_takes_the_next_number(asgi_server, staff_user):
    # Two raw notes whose titles give one slug (their raw slugs differ).
    first = do_write_raw_note(title="Pool sizing", body="Size the pool to the cores.", slug="inbox/pool-a")
    second = do_write_raw_note(title="Pool sizing", body="Size the pool to the load.", slug="inbox/pool-b")
    cookies, token = signed_in(asgi_server, "reviewer", "pw-reviewer-123")

    held = HeldAction(lambda: do_promote_note(first, reviewer=staff_user, wing="ops", slug_from_title=True))
    held.hold()  # holds `pool-sizing`, not committed yet
    request, outcome = in_thread(
        lambda: httpx.post(
            f"{asgi_server}/review/bulk/",
            cookies=cookies,
            timeout=60,
            headers={"Referer": f"{asgi_server}/review/"},
            data={
                "csrfmiddlewaretoken": token,
                "action": "promote",
                "notes": [second.pk],
                "wing": "ops",
                "slug_from_title": "1",
                "next_query": "",
            },
        )
    )
    release_once_blocked(held, request)

    assert "error" not in outcome, outcome.get("error")
    response = outcome["value"]
    assert response.status_code == 302, (response.status_code, response.text[:300])
    first.refresh_from_db()
    second.refresh_from_db()
    assert (first.slug, second.slug) == ("pool-sizing", "pool-sizing-2")
    assert first.status == second.status == NoteStatus.WIKI
    assert second.path == "wiki/ops/pool-sizing-2.md" and second.body == "Size the pool to the load."
    for note in (first, second):  # each promoted once: one revision, one version up
        assert NoteRevision.objects.filter(note=note, action=NoteRevision.Action.PROMOTE).count() == 1
        assert note.version == 2


def test_an_explicit_slug_taken_by_a_promotion_in_flight_is_refused_with_a_clear_error(staff_user):
    first = do_write_raw_note(title="One", body="a", slug="inbox/one")
    second = do_write_raw_note(title="Two", body="b", slug="inbox/two")

    held = HeldAction(lambda: do_promote_note(first, reviewer=staff_user, wing="ops", slug="shared"))
    held.hold()
    promote, outcome = in_thread(lambda: do_promote_note(second, reviewer=staff_user, wing="ops", slug="shared"))
    release_once_blocked(held, promote)

    assert isinstance(outcome.get("error"), BrainInputError), outcome
    assert "already used by another note" in str(outcome["error"])
    second.refresh_from_db()
    assert (second.slug, second.status, second.version) == ("inbox/two", NoteStatus.RAW, 1)  # nothing written
    assert not NoteRevision.objects.filter(note=second).exists()
    assert Note.objects.get(slug="shared").pk == first.pk


def test_a_refile_to_a_slug_taken_by_a_refile_in_flight_is_refused_with_a_clear_error(staff_user):
    first = do_ingest_note(title="One", body="a", wing="ops", slug="one")
    second = do_ingest_note(title="Two", body="b", wing="ops", slug="two")

    held = HeldAction(lambda: do_refile_note(first, user=staff_user, wing="ops", slug="shared"))
    held.hold()
    refile, outcome = in_thread(lambda: do_refile_note(second, user=staff_user, wing="ops", slug="shared"))
    release_once_blocked(held, refile)

    assert isinstance(outcome.get("error"), BrainInputError), outcome
    assert "already used by another note" in str(outcome["error"])
    second.refresh_from_db()
    assert (second.slug, second.path, second.version) == ("two", "wiki/ops/two.md", 1)
    assert Note.objects.get(slug="shared").pk == first.pk


def test_two_reviewers_bulk_promoting_same_titled_notes_at_once_promote_every_note_once(asgi_server, staff_user):
    notes = [do_write_raw_note(title="Same title", body=f"Body {i}.", slug=f"inbox/same-{i}") for i in range(16)]
    halves = [notes[0::2], notes[1::2]]
    browsers = [signed_in(asgi_server, "reviewer", "pw-reviewer-123") for _ in halves]
    start, answers = threading.Barrier(len(halves)), [None] * len(halves)

    def bulk_promote(k: int) -> None:
        cookies, token = browsers[k]
        start.wait(30)
        answers[k] = httpx.post(
            f"{asgi_server}/review/bulk/",
            cookies=cookies,
            timeout=60,
            data={
                "csrfmiddlewaretoken": token,
                "action": "promote",
                "notes": [note.pk for note in halves[k]],
                "wing": "ops",
                "slug_from_title": "1",
            },
        )

    threads = [threading.Thread(target=bulk_promote, args=(k,)) for k in range(len(halves))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)

    assert [answer.status_code for answer in answers] == [302, 302], [answer.text[:200] for answer in answers]
    promoted = Note.objects.filter(pk__in=[note.pk for note in notes], status=NoteStatus.WIKI)
    assert sorted(promoted.values_list("slug", flat=True)) == sorted(
        ["same-title", *(f"same-title-{n}" for n in range(2, 17))]
    )
    assert NoteRevision.objects.filter(action=NoteRevision.Action.PROMOTE).count() == 16
    assert sorted(promoted.values_list("body", flat=True)) == sorted(note.body for note in notes)
