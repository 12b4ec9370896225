"""Issue 38 in a real browser: the "Needs a re-check" queue shows a stale note's old quote beside the code now;
"still true" re-anchors it at the new commit, "superseded by" links two notes, and each is undone."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from brain.actions import do_ingest_note
from brain.models import Note
from tests.e2e.conftest import PASSWORD, shot
from tests.people.conftest import make_person
from tests.truth.conftest import Ledgerly, add_project, code_root, git, make_repo, write_notes  # noqa: F401

pytestmark = [pytest.mark.e2e]


def sign_in(page, base_url: str, username: str, next_url: str) -> None:
    """hyperguild's own sign-in page (the admin's only lets staff in)."""
    page.goto(f"{base_url}/login/?next={next_url}")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_url(f"{base_url}{next_url}")


@pytest.fixture
def stale_notes(live_ui, code_root):  # noqa: F811 - code_root is the fixture imported above
    repo = make_repo(code_root)
    add_project("ledgerly", str(repo))
    write_notes()
    new = Ledgerly(repo=repo, first=git(repo, "rev-parse", "HEAD")).change()
    call_command("project_sync", "ledgerly", stdout=io.StringIO())
    do_ingest_note(
        title="Monthly reports",
        body="Reports replace the CSV export; use `invoice_total`.",
        wing="concepts",
        slug="reports",
        frontmatter={"project": "ledgerly"},
    )
    make_person("rita", "reviewer", password=PASSWORD)
    return new


def test_a_reviewer_re_checks_a_stale_note_keeps_one_supersedes_another_and_undoes_both(
    live_ui, browser_page, stale_notes
):
    page, new = browser_page, stale_notes
    sign_in(page, live_ui, "rita", "/review/recheck/")
    assert page.locator("#recheck-count").inner_text() == "3"

    rounding = page.locator("section[data-slug='rounding-quote']")
    assert "rounding=ROUNDING)" in rounding.locator("pre.quoted").inner_text()
    assert "rounding=ROUND_HALF_EVEN)" in rounding.locator("pre.now").inner_text()
    shot(page, "recheck-queue")

    # Still true: re-anchored at the new commit, out of the queue; undo puts it back.
    page.locator("section[data-slug='rounding-quote'] [data-action='still-true']").click()
    page.wait_for_selector(f"text=re-anchored at {new[:7]}")
    note = Note.objects.get(slug="rounding-quote")
    assert (note.verification_state, note.verified_commit) == ("verified", new)
    assert page.locator("section[data-slug='rounding-quote']").count() == 0
    assert page.locator("#recheck-count").inner_text() == "2"
    page.locator(".messages .undo-form button").click()
    page.wait_for_selector("text=Undid the still true")  # the undo shows the note it restored
    assert Note.objects.get(slug="rounding-quote").verification_state == "stale"
    assert page.locator("#stale-banner").count() == 1
    page.goto(f"{live_ui}/review/recheck/")
    assert page.locator("section[data-slug='rounding-quote']").count() == 1

    # Superseded by: the two notes are linked, the old one leaves the queue; undo unlinks them.
    export = page.locator("section[data-slug='export']")
    page.goto(f"{live_ui}/review/recheck/")
    export.locator(".supersede-form input[name=by]").fill("reports")
    export.locator(".supersede-form input[name=reason]").fill("the CSV export was removed")
    export.locator("[data-action='supersede']").click()
    page.wait_for_selector("text=is superseded by")
    old = Note.objects.get(slug="export")
    assert old.superseded_by.slug == "reports" and list(Note.objects.get(slug="reports").supersedes.all()) == [old]
    assert page.locator("section[data-slug='export']").count() == 0
    shot(page, "recheck-superseded")
    page.locator(".messages .undo-form button").click()
    page.wait_for_selector("text=Undid the superseded")
    assert Note.objects.get(slug="export").superseded_by_id is None
    page.goto(f"{live_ui}/review/recheck/")
    assert page.locator("section[data-slug='export']").count() == 1
    assert page.locator("#recheck-count").inner_text() == "3"


def test_someone_without_the_reviewer_role_sees_the_queue_but_cannot_decide(live_ui, browser_page, stale_notes):
    import httpx

    make_person("vic", password=PASSWORD)
    sign_in(browser_page, live_ui, "vic", "/review/recheck/")
    assert browser_page.locator("[data-action='still-true']").count() == 0
    # The POST itself is refused (CSRF aside: a signed-in client without the role gets 403).
    cookies = {c["name"]: c["value"] for c in browser_page.context.cookies()}
    note = Note.objects.get(slug="spawn")
    answer = httpx.post(
        f"{live_ui}/review/{note.pk}/still-true/",
        cookies=cookies,
        headers={"X-CSRFToken": cookies.get("csrftoken", ""), "Referer": live_ui},
        timeout=30,
    )
    assert answer.status_code == 403
    assert Note.objects.get(slug="spawn").verification_state == "stale"
