"""Issue 31 in a real browser: a phone (390×844, touch) reaches every page without sideways scrolling, and a
reviewer promotes and rejects by touch; a note promoted unchanged from the browser keeps its text."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model

from brain.actions import do_ingest_note, do_write_raw_note
from brain.models import Note, NoteRevision, NoteStatus
from sessions.actions import do_log_entry, do_store_training_example
from tests.e2e.conftest import PASSWORD, SCREENSHOTS, log_in

pytestmark = [pytest.mark.e2e]

PHONE = {"width": 390, "height": 844}
SCREENS_COPY = Path("/work/screens-ui")
NAV = ["Review", "Activity", "Search", "Training", "Routing", "Sessions", "Costs", "Admin", "Log out"]
MULTILINE = "# Retries\n\nRetry three times.\n\n```python\nfor attempt in range(3):\n    call()\n```\n"


def _shot(page, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)
    try:
        SCREENS_COPY.mkdir(parents=True, exist_ok=True)
        shutil.copy(SCREENSHOTS / f"{name}.png", SCREENS_COPY / f"{name}.png")
    except OSError:
        pass  # only a copy


@pytest.fixture
def phone(live_ui, chromium):
    get_user_model().objects.create_user("pat", password=PASSWORD, is_staff=True, is_superuser=True)
    context = chromium.new_context(viewport=PHONE, is_mobile=True, has_touch=True, device_scale_factor=2)
    page = context.new_page()
    page.set_default_timeout(15_000)
    log_in(page, live_ui, "pat")
    yield page
    context.close()


def _a_day_of_data():
    wiki = do_ingest_note(
        title="Uploads to object storage with a rather long title that wraps",
        body="Uploads go to S3.\n\n" + "A long line without breaks " * 40,
        wing="concepts",
        hall="storage",
        slug="uploads",
    )
    raw = [
        do_write_raw_note(
            title=f"Raw learning {n} about retries and backoff",
            body=f"Retry {n} times.\n" * 30,
            source="retrospective",
            session_id="session-with-a-long-identifier-0123456789",
        )
        for n in range(3)
    ]
    do_log_entry("session-with-a-long-identifier-0123456789", kind="note", message="hello " * 80)
    sft, _ = do_store_training_example(
        source_key="e2e:sft:1",
        kind="sft",
        skill="tdd_red",
        prompt=[{"role": "user", "content": "Write a failing test " * 30}],
        completion=[{"role": "assistant", "content": "def test_x():\n    assert False  " + "x" * 300}],
        provenance={"session_id": "s-1", "verification": {"verified": True}},
    )
    dpo, _ = do_store_training_example(
        source_key="e2e:dpo:1",
        kind="dpo",
        skill="review",
        prompt=[{"role": "user", "content": "Review this."}],
        chosen=[{"role": "assistant", "content": "good " * 100}],
        rejected=[{"role": "assistant", "content": "bad " * 100}],
        provenance={"session_id": "s-1"},
    )
    return wiki, raw, sft, dpo


def test_every_page_fits_a_phone_and_the_nav_reaches_every_section(live_ui, phone):
    base = live_ui
    wiki, raw, sft, dpo = _a_day_of_data()
    pages = {
        "home": "/",
        "queue": "/review/",
        "raw-note": f"/review/{raw[0].pk}/",
        "wiki-note": f"/review/{wiki.pk}/",
        "merge": f"/review/{raw[0].pk}/merge/preview/?into=uploads",
        "search": "/search/?q=uploads",
        "training": "/training/",
        "sft": f"/training/{sft.pk}/",
        "dpo": f"/training/{dpo.pk}/",
        "routing": "/routing/",
        "sessions": "/sessions/",
        "activity": "/activity/",
        "costs": "/costs/",
        "session": "/sessions/session-with-a-long-identifier-0123456789/",
        "admin": "/admin/",
        "admin-notes": "/admin/brain/note/",
        "admin-note": f"/admin/brain/note/{wiki.pk}/change/",
    }
    # Each page in a tab of its own of the phone's context, all loaded before the first is measured: each still
    # waits until its network is idle (half a second without a request) before its width is read, but those
    # waits run side by side instead of one after the other.
    tabs = {}
    for name, path in pages.items():
        tab = phone.context.new_page()
        tab.set_default_timeout(15_000)
        response = tab.goto(f"{base}{path}")
        assert response is not None and response.status == 200, path
        tabs[name] = tab
    too_wide = {}
    for name, tab in tabs.items():
        tab.wait_for_load_state("networkidle")
        width = tab.evaluate("document.documentElement.scrollWidth")
        _shot(tab, f"phone-{name}")
        tab.close()
        if width > PHONE["width"]:
            too_wide[name] = width
    assert too_wide == {}

    phone.goto(f"{base}/review/")
    toggle = phone.locator("#nav-toggle")
    if toggle.is_visible():
        toggle.tap()
    for label in NAV:
        link = (
            phone.locator(".topbar")
            .get_by_role("link", name=label, exact=True)
            .or_(phone.locator(".topbar").get_by_role("button", name=label, exact=True))
        )
        box = link.first.bounding_box()
        assert box is not None and link.first.is_visible(), label
        assert box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"], (label, box)

    # The bulk bar stays small: at most a fifth of the screen.
    phone.goto(f"{base}/review/")
    bar = phone.locator("#bulk-bar").bounding_box()
    assert bar["height"] <= PHONE["height"] * 0.2, bar


def test_a_reviewer_promotes_and_rejects_by_touch_on_a_phone(live_ui, phone):
    base = live_ui
    first = do_write_raw_note(title="Retries", body=MULTILINE, source="retrospective")
    second = do_write_raw_note(title="Noise", body="Nothing useful.", source="retrospective")
    phone.goto(f"{base}/review/{first.pk}/")
    phone.locator("#promote-panel > summary").tap()
    phone.fill("#id_wing", "concepts")
    with phone.expect_navigation():
        phone.locator("#promote-form button[type=submit]").tap()
    assert "Promoted" in phone.locator(".messages").inner_text()
    first.refresh_from_db()
    assert first.status == NoteStatus.WIKI
    # The browser sent the textarea with CRLF: the text is unchanged and the history says so.
    assert first.body == MULTILINE
    promote = first.revisions.get(action=NoteRevision.Action.PROMOTE)
    assert "body" not in promote.changed_fields()

    phone.goto(f"{base}/review/{second.pk}/")
    phone.locator("#reject-panel > summary").tap()
    phone.fill("#id_reason", "noise")
    with phone.expect_navigation():
        phone.locator("#reject-form button[type=submit]").tap()
    second.refresh_from_db()
    assert second.status == NoteStatus.REJECTED
    _shot(phone, "phone-after-reject")
    assert Note.objects.filter(status=NoteStatus.RAW).count() == 0


def test_the_dpo_page_shows_chosen_and_rejected_side_by_side_above_the_fold(live_ui, chromium):
    get_user_model().objects.create_user("cur", password=PASSWORD, is_staff=True)
    long_prompt = "Skill: tdd_green\ntask: add\n\nFiles before the change:\n" + "def f():\n    return 1\n" * 300
    diff = "```diff\n--- a/calc.py\n+++ b/calc.py\n@@ -1 +1 @@\n-    return a - b\n+    return a + b\n```"
    example, _ = do_store_training_example(
        source_key="e2e:fold",
        kind="dpo",
        skill="tdd_green",
        prompt=[{"role": "user", "content": long_prompt}],
        chosen=[{"role": "assistant", "content": f"sum\n\n{diff}"}],
        rejected=[{"role": "assistant", "content": "difference\n\n" + diff.replace("a + b", "b - a")}],
        provenance={
            "session_id": "s-1",
            "verification": {
                "chosen": {"verified": True, "status": "pass"},
                "rejected": {"verified": False, "status": "fail"},
            },
        },
    )
    context = chromium.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    log_in(page, live_ui, "cur", next_url=f"/training/{example.pk}/")
    chosen, rejected = page.locator("#chosen").bounding_box(), page.locator("#rejected").bounding_box()
    _shot(page, "curation-dpo-1280")
    assert chosen["y"] < 800 and rejected["y"] < 800 and abs(chosen["y"] - rejected["y"]) < 2  # side by side
    assert page.locator("pre.diff").count() == 2
    context.close()


def test_a_reviewer_reopens_a_rejected_note_and_undo_then_redo_say_what_they_do(live_ui, chromium):
    get_user_model().objects.create_user("ren", password=PASSWORD, is_staff=True)
    note = do_write_raw_note(title="Second look", body="Worth another look.", source="retrospective")
    context = chromium.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    log_in(page, live_ui, "ren", next_url=f"/review/{note.pk}/")
    page.keyboard.press("r")
    page.fill("#id_reason", "too vague")
    with page.expect_navigation():
        page.click("#reject-form button[type=submit]")
    page.goto(f"{live_ui}/review/{note.pk}/")
    page.click("#reopen-panel > summary")
    with page.expect_navigation():
        page.click("#reopen-form button[type=submit]")
    assert "Reopened" in page.locator(".messages").inner_text()
    note.refresh_from_db()
    assert note.status == NoteStatus.RAW
    with page.expect_navigation():
        page.click(".messages .undo-form button")
    note.refresh_from_db()
    assert note.status == NoteStatus.REJECTED
    assert page.locator(".messages .undo-form button").inner_text() == "Redo"
    with page.expect_navigation():
        page.click(".messages .undo-form button")
    note.refresh_from_db()
    assert note.status == NoteStatus.RAW
    assert page.locator(".messages .undo-form button").inner_text() == "Undo"
    context.close()


def test_the_bulk_bar_counts_the_ticked_notes_by_mouse_key_and_tick_all(live_ui, chromium):
    get_user_model().objects.create_user("tia", password=PASSWORD, is_staff=True)
    for n in range(3):
        do_write_raw_note(title=f"Note {n}", body=f"Body {n}.", source="retrospective")
    context = chromium.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    log_in(page, live_ui, "tia", next_url="/review/")
    count = page.locator("#ticked-count")
    assert count.inner_text() == "0"
    page.locator("table.queue tbody input[name=notes]").first.click()
    assert count.inner_text() == "1"
    page.keyboard.press("j")
    page.keyboard.press("j")
    page.keyboard.press("x")
    assert count.inner_text() == "2"
    page.locator("[data-check-all]").click()
    assert count.inner_text() == "3"
    context.close()
