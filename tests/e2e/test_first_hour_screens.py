"""Issue 47, what the screenshots showed, in a real browser at a phone's width (390 px) and a desktop's (1280 px).

- /costs/ broke headers and values inside words ("PERSO N", "brain_answ er", "gpt-4o- mini") and showed no budget;
- /search/ wrapped a score as "0.0 / 323";
- the empty review queue showed a missing-glyph box for its emoji, in a row spanning 7 of its 8 columns;
- /review/projects/ had no nav link (Review was highlighted instead);
- a project page counted 2 stale while the re-check badge said 1 (a superseded note still counted);
- the sessions list showed when a session's entries arrived, not when it started;
- the sign-in password box was narrower than the user-name box.
"""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone
from model_bakery import baker

from brain.actions import do_ingest_note
from brain.models import Note, Project, VerificationState
from ledger.models import BudgetReservation, ModelCall, PersonBudget
from sessions.actions import do_log_entry
from tests.e2e.conftest import PASSWORD, log_in, shot

pytestmark = [pytest.mark.e2e]

WIDTHS = {"phone": 390, "desktop": 1280}

# Every word (a run of non-space characters) of every table cell of `main` sits on one line: a Range over the
# word has its rectangles on one line only. Returns the words broken inside, with their cell's text.
BROKEN_WORDS_JS = """
() => {
  const broken = [];
  for (const cell of document.querySelectorAll('main table th, main table td')) {
    if (!cell.offsetParent) continue;  // hidden (a phone's table header)
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (const match of node.data.matchAll(/\\S+/g)) {
        const range = document.createRange();
        range.setStart(node, match.index);
        range.setEnd(node, match.index + match[0].length);
        const tops = new Set([...range.getClientRects()].filter(r => r.width > 0).map(r => Math.round(r.top)));
        if (tops.size > 1) broken.push(match[0] + '  (in: ' + cell.innerText.trim().slice(0, 60) + ')');
      }
    }
  }
  return broken;
}
"""


@pytest.fixture
def operator(live_ui):
    return get_user_model().objects.create_user("pat", password=PASSWORD, is_staff=True, is_superuser=True)


def open_page(chromium, base: str, width: int, path: str):
    context = chromium.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    page.set_default_timeout(15_000)
    log_in(page, base, "pat", next_url=path)
    return context, page


def spend(person, usd: str, **fields) -> ModelCall:
    values = {
        "model": "gpt-4o-mini",
        "skill": "brain_answer",
        "project": "/srv/a-rather-long-project-name",
        "provider": "openai",
        "outcome": "ok",
        "input_tokens": 123456,
        "output_tokens": 7890,
    } | fields
    return baker.make(ModelCall, requested_by=person, cost_usd=Decimal(usd), created_at=timezone.now(), **values)


def test_costs_shows_the_service_and_a_personal_budget_and_breaks_no_word(live_ui, chromium, operator, settings):
    settings.HYPERGUILD_BUDGET_DAILY_USD = 0.002
    PersonBudget.objects.create(person=operator, daily_usd=Decimal("0.5"), monthly_usd=Decimal("3"))
    spend(operator, "0.0012", session_id="session-with-a-long-identifier-0123456789")
    spend(None, "0.0002", service="supervisor worker", skill="retrospective", model="claude-sonnet-4-5")
    BudgetReservation.objects.create(person=operator, amount_usd=Decimal("0.0003"), what="review on fast")
    for name, width in WIDTHS.items():
        context, page = open_page(chromium, live_ui, width, "/costs/")
        try:
            rows = page.locator("#budgets-table tbody tr")
            texts = [rows.nth(index).inner_text() for index in range(rows.count())]
            service = next(text for text in texts if "The service's daily" in text)
            own = [text for text in texts if "pat's" in text]
            assert "0.002" in service and "0.0014" in service and "0.0003" in service, service  # limit, spent, held
            assert (timezone.now() + timedelta(days=1)).strftime("%Y-%m-%d") in service  # resets at the next UTC day
            assert len(own) == 2 and any("0.50" in text and "0.0012" in text for text in own), own
            assert page.locator('tr[data-budget="service"]').count() == 1
            broken = page.evaluate(BROKEN_WORDS_JS)
            shot(page, f"first-hour-costs-{name}")
            assert broken == [], f"{name}: words broken inside at {width} px: {broken}"
            assert page.evaluate("document.documentElement.scrollWidth") <= width
        finally:
            context.close()


def test_search_scores_break_no_word(live_ui, chromium, operator):
    for number in range(3):  # long titles and excerpts squeeze the score column, as in the screenshot
        do_ingest_note(
            title=f"Uploads to object storage with retries, backoff and multipart parts, part {number}",
            body="Uploads go to S3 with retries and exponential backoff between the attempts. " * 8,
            wing="concepts",
            hall="storage-and-uploads",
            slug=f"uploads-{number}",
        )
    for name, width in WIDTHS.items():
        context, page = open_page(chromium, live_ui, width, "/search/?q=uploads")
        try:
            assert page.locator("main table tbody tr").count() >= 1
            broken = page.evaluate(BROKEN_WORDS_JS)
            shot(page, f"first-hour-search-{name}")
            assert broken == [], f"{name}: {broken}"
        finally:
            context.close()


def test_the_empty_queue_and_the_projects_nav(live_ui, chromium, operator):
    for name, width in WIDTHS.items():
        context, page = open_page(chromium, live_ui, width, "/review/")
        try:
            empty = page.locator("#queue-empty")
            assert empty.get_attribute("colspan") == str(page.locator("main table thead th").count())
            assert not any(ord(char) > 0x2FFF for char in empty.inner_text()), empty.inner_text()  # no emoji

            page.goto(f"{live_ui}/review/projects/")
            active = page.locator(".topbar nav a.active")
            assert active.count() == 1 and active.inner_text() == "Projects"
            shot(page, f"first-hour-projects-{name}")
        finally:
            context.close()


def test_the_sign_in_boxes_are_as_wide_as_each_other(live_ui, chromium):
    for name, width in WIDTHS.items():
        context = chromium.new_context(viewport={"width": width, "height": 900})
        try:
            page = context.new_page()
            page.goto(f"{live_ui}/login/")
            user, password = page.locator("#id_username").bounding_box(), page.locator("#id_password").bounding_box()
            assert user and password and abs(user["width"] - password["width"]) < 1, (name, user, password)
        finally:
            context.close()


def test_a_project_counts_the_stale_notes_the_recheck_badge_counts(live_ui, chromium, operator, tmp_path):
    project = Project.objects.create(name="shop", repo=str(tmp_path))
    old = do_ingest_note(title="Old note", body="The old way.", wing="concepts", slug="old-way")
    new = do_ingest_note(title="New note", body="The new way.", wing="concepts", slug="new-way")
    other = do_ingest_note(title="Other note", body="Another.", wing="concepts", slug="other")
    Note.objects.filter(pk__in=[old.pk, other.pk]).update(project=project, verification_state=VerificationState.STALE)
    Note.objects.filter(pk=old.pk).update(superseded_by=new)  # superseded: out of the re-check queue
    context, page = open_page(chromium, live_ui, WIDTHS["desktop"], "/review/projects/")
    try:
        badge = page.locator("#recheck-count").inner_text()
        stale = page.locator('tr[data-project="shop"] td.stale-count').inner_text()
        assert (badge, stale) == ("1", "1")
    finally:
        context.close()


def test_the_sessions_list_shows_when_a_session_started_not_when_it_arrived(live_ui, chromium, operator):
    began = timezone.now() - timedelta(days=2, hours=3)
    do_log_entry("spooled-session", kind="note", message="written while the server was away", occurred_at=began)
    context, page = open_page(chromium, live_ui, WIDTHS["desktop"], "/sessions/")
    try:
        started = page.locator("main table tbody tr", has_text="spooled-session").locator("td.started-at").inner_text()
        assert started == timezone.localtime(began).strftime("%Y-%m-%d %H:%M")
    finally:
        context.close()
