"""A reviewer in a real browser: promote, reject, curate, export, and a hostile note stays inert."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model

from brain.actions import do_ingest_note, do_write_raw_note
from brain.models import Note, NoteStatus
from sessions.actions import do_log_entry, do_store_training_example
from sessions.models import TrainingExample
from tests.conftest import call_tool
from tests.e2e.conftest import BRAIN_TOKEN, PASSWORD, log_in, shot

pytestmark = [pytest.mark.e2e]

HOSTILE_BODY = """A note someone pasted from the web.

<script>window.pwned = 1</script>
<img src="x" onerror="window.pwned = 1">

[harmless looking link](javascript:window.pwned=1)
<a href="javascript:window.pwned=1">raw html link</a>
<a href="JaVaScRiPt:window.pwned=1">mixed case</a>
"""


def _some_routing_history() -> None:
    from datetime import timedelta

    from django.conf import settings
    from django.utils import timezone
    from model_bakery import baker

    from supervisor.models import RoutingEntry

    now = timezone.now()
    for day, rates in enumerate([(0.6, 0.8), (0.75, 0.7), (0.9, 0.85), (0.95, 0.8)]):
        for skill, rate in zip(("review", "debug"), rates, strict=True):
            for i in range(20):
                fast = rate >= 0.9 or i % 3 == 0
                baker.make(
                    RoutingEntry,
                    skill=skill,
                    created_at=now - timedelta(days=3 - day, minutes=i),
                    model=settings.HYPERGUILD_FAST_MODEL if fast else settings.HYPERGUILD_THINKING_MODEL,
                    reason="floor" if fast else "sample band",
                    status="pass" if i < rate * 20 else "fail",
                    pass_rate_seen=rate,
                    samples_seen=40,
                    latency_ms=300 if fast else 2400,
                    session_id="sess-e2e",
                )


@pytest.fixture
def reviewer(live_ui):
    return get_user_model().objects.create_user("alice", password=PASSWORD, is_staff=True)


def test_a_reviewer_promotes_into_a_new_wing_rejects_and_the_note_is_found_by_brain_query(
    live_ui, reviewer, browser_page
):
    page, base = browser_page, live_ui
    do_log_entry("sess-e2e", kind="test_run", status="pass", message="zigzag retries fixed the flaky upload")
    do_ingest_note(title="Retries with backoff", body="Exponential backoff for HTTP retries.", wing="concepts")
    to_reject = do_write_raw_note(title="Vague thought", body="Something about uploads, maybe.", source="mcp")
    to_promote = do_write_raw_note(
        title="Zigzag retries for flaky uploads",
        body="Retry uploads with **zigzag** jitter; it fixed the flake.",
        source="retrospective",
        session_id="sess-e2e",
        provenance={"entries": [1]},
        frontmatter={"kind": "fix"},
    )

    log_in(page, base, "alice", next_url="/review/")
    assert page.locator("tbody tr").count() == 2
    shot(page, "01-review-queue")

    page.click(f"text={to_promote.title}")
    page.wait_for_url(f"{base}/review/{to_promote.pk}/")
    assert page.locator("#note-body strong").inner_text() == "zigzag"
    assert page.locator("a[href='/sessions/sess-e2e/#entry-1']").count() == 1
    shot(page, "02-note-page")

    page.keyboard.press("p")  # the shortcut puts the cursor in the wing field
    assert page.evaluate("document.activeElement.id") == "id_wing"
    page.keyboard.type("reliability")
    page.fill("#id_hall", "uploads")
    page.fill("#id_title", "Zigzag jitter for flaky uploads")
    page.click("#promote-form button[type=submit]")
    page.wait_for_url(f"{base}/review/{to_reject.pk}/")  # on to the next note in the queue
    assert "Promoted" in page.locator(".messages").inner_text()

    promoted = Note.objects.get(pk=to_promote.pk)
    assert (promoted.status, promoted.wing, promoted.hall, promoted.title) == (
        NoteStatus.WIKI,
        "reliability",
        "uploads",
        "Zigzag jitter for flaky uploads",
    )
    assert promoted.reviewed_by == reviewer and promoted.reviewed_at is not None

    result = call_tool(
        f"{base}/mcp/brain",
        "brain_query",
        {"query": "zigzag jitter uploads", "wing": "reliability"},
        headers={"Authorization": f"Bearer {BRAIN_TOKEN}"},
    )
    assert not result.get("isError"), result
    assert [hit["slug"] for hit in result["structuredContent"]["hits"]][:1] == [promoted.slug]

    page.keyboard.press("r")
    assert page.evaluate("document.activeElement.id") == "id_reason"
    page.keyboard.type("too vague to act on")
    page.click("#reject-form button[type=submit]")
    page.wait_for_url(f"{base}/review/")
    rejected = Note.objects.get(pk=to_reject.pk)
    assert (rejected.status, rejected.review_note, rejected.reviewed_by) == (
        "rejected",
        "too vague to act on",
        reviewer,
    )
    assert "Nothing waiting" in page.locator("tbody").inner_text()

    page.goto(f"{base}/search/?q=zigzag+uploads")
    assert page.locator("td.rankers").first.inner_text().startswith("bm25 #")
    shot(page, "03-search")
    page.goto(f"{base}/sessions/sess-e2e/")
    assert "Zigzag jitter for flaky uploads" in page.content()
    shot(page, "04-session-timeline")
    page.goto(f"{base}/sessions/")
    shot(page, "05-sessions")
    _some_routing_history()
    page.goto(f"{base}/routing/")
    assert page.locator("svg.chart polyline").count() == 2
    shot(page, "06-routing")
    page.goto(f"{base}/")
    shot(page, "00-home")


def test_a_reviewer_approves_a_dpo_pair_and_downloads_the_export(live_ui, reviewer, browser_page, tmp_path: Path):
    page, base = browser_page, live_ui
    prompt = [{"role": "user", "content": "Fix the off-by-one in paginate()."}]
    example, _ = do_store_training_example(
        source_key="e2e:dpo:1",
        kind="dpo",
        skill="tdd_green",
        prompt=prompt,
        chosen=[{"role": "assistant", "content": "Use range(start, stop + 1)."}],
        rejected=[{"role": "assistant", "content": "Delete the failing test."}],
        provenance={
            "session_id": "sess-e2e",
            "verification": {
                "chosen": {"verified": True, "status": "pass", "runner_output_tail": "3 passed"},
                "rejected": {"verified": False, "status": "fail", "runner_output_tail": "1 failed"},
            },
        },
    )
    log_in(page, base, "alice", next_url="/training/")
    page.click(f"a[href='/training/{example.pk}/']")
    assert "Delete the failing test." in page.locator(".side.rejected").inner_text()
    assert "3 passed" in page.locator(".side.chosen").inner_text()
    shot(page, "07-dpo-pair")
    page.click("#approve-form button")
    page.wait_for_url(f"{base}/training/?kind=dpo")
    assert TrainingExample.objects.get(pk=example.pk).status == "approved"
    page.goto(f"{base}/training/?status=approved")
    shot(page, "08-training-list")

    with page.expect_download() as download_info:
        page.click("#export-dpo")
    target = tmp_path / "dpo.jsonl"
    download_info.value.save_as(target)
    records = [json.loads(line) for line in target.read_text().splitlines()]
    assert records == [
        {
            "prompt": prompt,
            "chosen": [{"role": "assistant", "content": "Use range(start, stop + 1)."}],
            "rejected": [{"role": "assistant", "content": "Delete the failing test."}],
        }
    ]


def test_a_note_with_scripts_and_javascript_links_is_shown_inert(live_ui, reviewer, browser_page):
    page, base = browser_page, live_ui
    note = do_write_raw_note(title="Pasted from the web", body=HOSTILE_BODY, source="ingest")
    do_ingest_note(title="Target note", body="Existing text.", wing="concepts", slug="target-note")
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))

    log_in(page, base, "alice", next_url=f"/review/{note.pk}/")
    page.wait_for_load_state("load")
    for link in page.locator("#note-body a").all():
        link.click(no_wait_after=True)
    shot(page, "09-hostile-note")
    assert page.evaluate("typeof window.pwned") == "undefined"
    hrefs = page.eval_on_selector_all("a[href]", "links => links.map(a => a.getAttribute('href'))")
    assert not [h for h in hrefs if h.strip().lower().startswith("javascript:")]
    assert page.locator("#note-body script, #note-body [onerror]").count() == 0

    page.goto(f"{base}/review/{note.pk}/merge/preview/?into=target-note")  # the merge preview renders it too
    page.wait_for_load_state("load")
    shot(page, "10-merge-preview")
    assert page.evaluate("typeof window.pwned") == "undefined"
    assert page.locator("#merge-preview script, #merge-preview [onerror]").count() == 0
    assert dialogs == []
