"""Issue 19 in a real browser: two reviewers merging at once, the keyboard, the live merge preview,
a flagged example, and screenshots of the new note page, queue and DPO view."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model

from brain.actions import do_ingest_note, do_write_raw_note
from brain.models import Note, NoteStatus
from sessions.actions import do_store_training_example
from sessions.models import TrainingExample
from tests.e2e.conftest import CHROMIUM, CHROMIUM_ARGS, PASSWORD, SCREENSHOTS, log_in, shot

pytestmark = [pytest.mark.e2e]

# Screenshots for the lead's report, outside the repository as well.
SCREENS_COPY = Path("/work/screens-ui")


def _shot(page, name: str, *, full_page: bool = True) -> None:
    if full_page:
        shot(page, name)
    else:
        page.screenshot(path=str(SCREENSHOTS / f"{name}.png"))
    try:
        SCREENS_COPY.mkdir(parents=True, exist_ok=True)
        shutil.copy(SCREENSHOTS / f"{name}.png", SCREENS_COPY / f"{name}.png")
    except OSError:
        pass  # only a copy; the screenshot itself is under test-artifacts/


@pytest.fixture
def reviewers(live_ui):
    make = get_user_model().objects.create_user
    return make("alice", password=PASSWORD, is_staff=True), make("bob", password=PASSWORD, is_staff=True)


@pytest.fixture
def browser(monkeypatch):
    from playwright.sync_api import sync_playwright

    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # see tests/e2e/conftest.py
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


def _page(browser, user: str, base: str, next_url: str):
    context = browser.new_context(viewport={"width": 1360, "height": 900})
    page = context.new_page()
    page.set_default_timeout(15_000)
    log_in(page, base, user, next_url=next_url)
    return page


def test_two_reviewers_merging_into_the_same_note_lose_nothing(live_ui, reviewers, browser):
    base = live_ui
    target = do_ingest_note(title="Uploads", body="Uploads go to S3.", wing="concepts", slug="uploads")
    retries = do_write_raw_note(title="Upload retries", body="Retry three times.", source="mcp")
    sizes = do_write_raw_note(title="Upload sizes", body="At most 5 GB per file.", source="mcp")

    alice = _page(browser, "alice", base, f"/review/{retries.pk}/merge/preview/?into=uploads")
    bob = _page(browser, "bob", base, f"/review/{sizes.pk}/merge/preview/?into=uploads")
    assert "Retry three times." in alice.input_value("#id_body")
    assert "At most 5 GB per file." in bob.input_value("#id_body")

    alice.click("#merge-save-form button[type=submit]")
    alice.wait_for_url(f"{base}/review/**")
    assert "Merged" in alice.locator(".messages").inner_text()

    bob.click("#merge-save-form button[type=submit]")
    bob.wait_for_load_state("load")
    conflict = bob.locator("#conflict")
    assert conflict.count() == 1
    assert "Retry three times." in bob.locator("#conflict-current").inner_text()  # alice's merge, shown to bob
    assert "At most 5 GB per file." in bob.input_value("#id_body")  # bob's text is still there
    _shot(bob, "ui2-merge-conflict")
    target.refresh_from_db()
    assert "At most 5 GB per file." not in target.body and "Retry three times." in target.body
    assert Note.objects.get(pk=sizes.pk).status == NoteStatus.RAW  # not archived as "merged" yet

    # Bob brings alice's section into his text and saves again: both sections are kept.
    bob.fill(
        "#id_body",
        "Uploads go to S3.\n\n## Upload retries\n\nRetry three times.\n\n## Upload sizes\n\nAt most 5 GB per file.\n",
    )
    bob.click("#merge-save-form button[type=submit]")
    bob.wait_for_url(f"{base}/review/**")
    target.refresh_from_db()
    assert "Retry three times." in target.body and "At most 5 GB per file." in target.body
    assert [item["slug"] for item in target.provenance["merged_from"]] == [retries.slug, sizes.slug]
    assert set(Note.objects.filter(pk__in=[retries.pk, sizes.pk]).values_list("status", flat=True)) == {"archived"}


def test_the_merge_preview_follows_the_edited_text(live_ui, reviewers, browser):
    base = live_ui
    do_ingest_note(title="Backoff", body="Exponential.", wing="concepts", slug="backoff")
    do_ingest_note(title="Uploads", body="Uploads go to S3.", wing="concepts", slug="uploads")
    raw = do_write_raw_note(title="Retries", body="Retry three times.", source="mcp")
    page = _page(browser, "alice", base, f"/review/{raw.pk}/merge/preview/?into=uploads")
    page.fill("#id_body", "Uploads go to S3.\n\nRetry with **jitter**, see [[backoff]] and [[missing-note]].")
    page.locator("#merge-preview strong").wait_for()
    assert page.locator("#merge-preview strong").inner_text() == "jitter"
    assert page.locator("#merge-preview a.wikilink:not(.missing)").inner_text() == "backoff"
    assert page.locator("#merge-preview a.wikilink.missing").count() == 1
    assert page.locator("#merge-diff ins", has_text="Retry with **jitter**").count() == 1
    _shot(page, "ui3-merge-live-preview")


def test_keys_keep_working_after_a_checkbox_click_and_question_mark_shows_them(live_ui, reviewers, browser):
    base = live_ui
    notes = [do_write_raw_note(title=f"Queue note {n}", body=f"Body {n} " * 30, source="mcp") for n in range(3)]
    page = _page(browser, "alice", base, "/review/")
    page.click(f"input[name=notes][value='{notes[1].pk}']")
    page.keyboard.press("j")  # focus was on the checkbox: this used to do nothing
    assert page.locator("tbody tr.selected").count() == 1
    page.keyboard.press("x")
    assert page.locator("input[name=notes]:checked").count() == 2

    page.keyboard.press("?")
    assert page.locator("#shortcuts").is_visible()
    assert "Ctrl" in page.locator("#shortcuts").inner_text()
    page.keyboard.press("Escape")
    assert not page.locator("#shortcuts").is_visible()
    _shot(page, "ui1-queue")

    # Ctrl+Enter in the wing field submits the bulk promote; without a wing it keeps the ticks and says why.
    page.fill("#bulk-wing", "")
    page.focus("#bulk-wing")
    page.keyboard.press("Control+Enter")
    page.wait_for_load_state("load")
    assert "Promoting needs a wing" in page.locator("#bulk-errors").inner_text()
    assert page.locator("input[name=notes]:checked").count() == 2


def test_the_note_page_has_its_actions_in_view_and_shows_the_history(live_ui, reviewers, browser):
    base = live_ui
    do_ingest_note(title="Backoff", body="Exponential backoff.", wing="concepts", slug="backoff")
    body = "See [[backoff]].\n\n" + "\n\n".join(f"Paragraph {n} of a long imported note." for n in range(300))
    note = do_write_raw_note(title="A long note", body=body, source="import", session_id="sess-ui")
    page = _page(browser, "alice", base, f"/review/{note.pk}/")
    box = page.locator("#promote-panel > summary").bounding_box()
    assert box is not None and box["y"] < 900  # the actions are on the first screen, not 5,000 px down
    assert not page.locator("#id_body").is_visible()  # the editable copy is folded away
    _shot(page, "ui0-note-page-raw", full_page=False)
    page.keyboard.press("p")
    assert page.evaluate("document.activeElement.id") == "id_wing"
    page.keyboard.type("concepts")
    page.keyboard.press("Control+Enter")
    page.wait_for_url(f"{base}/review/")
    assert page.locator(".messages form.undo-form").count() == 1
    page.goto(f"{base}/review/{note.pk}/")
    assert page.locator("#history .revision[data-action=promote]").count() == 1
    _shot(page, "ui0-note-page", full_page=False)

    page.click("#history .revision[data-action=promote] button")  # undo from the history
    page.wait_for_load_state("load")
    assert Note.objects.get(pk=note.pk).status == NoteStatus.RAW
    assert "Undid" in page.locator(".messages").inner_text()


def test_a_flagged_example_is_not_approved_by_one_keystroke_and_k_goes_back(live_ui, reviewers, browser):
    base = live_ui
    older, _ = do_store_training_example(
        source_key="e2e:dpo:old",
        kind="dpo",
        skill="review",
        prompt=[{"role": "user", "content": "older"}],
        chosen=[{"role": "assistant", "content": "a"}],
        rejected=[{"role": "assistant", "content": "b"}],
        provenance={},
    )
    flagged, _ = do_store_training_example(
        source_key="e2e:dpo:flagged",
        kind="dpo",
        skill="tdd_green",
        prompt=[
            {"role": "user", "content": 'Parse the config:\n{\n  "retries": 3,\n  "token": "[REDACTED:openai_key]"\n}'}
        ],
        chosen=[
            {"role": "assistant", "content": "def load(path):\n    with open(path) as f:\n        return json.load(f)"}
        ],
        rejected=[{"role": "assistant", "content": "def load(path):\n    return eval(open(path).read())"}],
        provenance={
            "verification": {
                "chosen": {"verified": True, "status": "pass", "runner_output_tail": "4 passed"},
                "rejected": {"verified": False, "status": "fail", "runner_output_tail": "1 failed"},
            }
        },
        flags=[{"field": "prompt", "pattern": "openai_key", "count": 1}],
    )
    page = _page(browser, "alice", base, f"/training/{flagged.pk}/")
    # Indentation survives: JSON and code are shown as written.
    assert '  "retries": 3,' in page.locator(".panel").nth(1).inner_text()
    assert "        return json.load(f)" in page.locator(".side.chosen pre.message-text").inner_text()
    _shot(page, "ui4-dpo-view")
    page.keyboard.press("a")
    assert page.evaluate("document.activeElement.name") == "confirm_flagged"
    assert TrainingExample.objects.get(pk=flagged.pk).status == "candidate"

    page.keyboard.press("Escape")
    page.keyboard.press("j")
    page.wait_for_url(f"{base}/training/{older.pk}/")
    page.keyboard.press("k")
    page.wait_for_url(f"{base}/training/{flagged.pk}/")
    page.check("#id_confirm_flagged")
    page.click("#approve-form button")
    page.wait_for_url(f"{base}/training/{older.pk}/")
    assert TrainingExample.objects.get(pk=flagged.pk).status == "approved"
