"""Issue 48, acceptance 1: the installed edit hook tells the session which notes its edit breaks.

A real git repository ("billing"), a project whose repository it is, a wiki note anchored to `send_invoice` in
`billing/retry.py`, and the plugin's PostToolUse hooks run as Claude Code runs them: every hook group of the
installed hooks.json whose matcher takes the tool, in a shell, the hook's JSON on stdin.
"""

from __future__ import annotations

import io
import json
import re
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from django.core.management import call_command
from django.urls import reverse

from brain.actions import (
    do_add_project,
    do_confirm_note,
    do_edit_note,
    do_ingest_note,
    do_promote_note,
    do_reject_note,
)
from brain.models import Note
from sessions.models import SessionEntry
from sessions.tasks import retrospective
from tests.conftest import free_port
from tests.people.conftest import live, make_person  # noqa: F401 - live: the server with every token set
from tests.plugin.conftest import InstalledPlugin
from tests.plugin.test_claude_cli import hook_payload
from tests.truth.conftest import git, make_repo

pytestmark = pytest.mark.django_db(transaction=True)

RETRY = (
    "MAX_ATTEMPTS = 3\n\n\n"
    "def send_invoice(invoice):\n"
    "    # one try per attempt, then give up\n"
    "    for attempt in range(MAX_ATTEMPTS):\n"
    "        if invoice.send():\n"
    "            return True\n"
    "    return False\n"
)
ROUNDING = "def round_amount(amount):\n    return round(amount, 2)\n"
NOTE_BODY = "`send_invoice` in `billing/retry.py` tries `MAX_ATTEMPTS` times, then gives up."


def make_billing(root: Path) -> Path:
    return make_repo(root, {"billing/retry.py": RETRY, "billing/rounding.py": ROUNDING}, name="billing-service")


@pytest.fixture
def billing(tmp_path, settings) -> Path:
    root = tmp_path / "src"
    root.mkdir()
    settings.SUPERVISOR_ALLOWED_ROOTS = [str(root)]
    settings.HYPERGUILD_REPO_MIRRORS_DIR = str(tmp_path / "mirrors")
    repo = make_billing(root)
    do_add_project(name="billing", repo=str(repo))
    do_ingest_note(
        title="Invoice retries",
        body=NOTE_BODY,
        wing="concepts",
        slug="billing-retry",
        frontmatter={"project": "billing"},
    )
    assert Note.objects.get(slug="billing-retry").verification_state == "verified"
    return repo


def edit_hooks(plugin: InstalledPlugin, tool: str) -> list[dict]:
    """The PostToolUse hooks Claude Code runs after `tool`: every group whose matcher matches it."""
    return [
        hook for group in plugin.hooks["PostToolUse"] if re.fullmatch(group["matcher"], tool) for hook in group["hooks"]
    ]


def run_post_tool_use(
    plugin: InstalledPlugin, payload: dict, url: str, **extra: str
) -> list[tuple[dict, subprocess.CompletedProcess, float]]:
    ran = []
    for hook in edit_hooks(plugin, payload["tool_name"]):
        began = time.monotonic()
        done = subprocess.run(
            ["sh", "-c", hook["command"]],
            input=json.dumps(payload),
            env=plugin.hook_env(url, "", **extra),
            capture_output=True,
            text=True,
            timeout=30,
        )
        ran.append((hook, done, time.monotonic() - began))
    return ran


def edit(session_id: str, repo: Path, old: str, new: str, tool_use_id: str) -> dict:
    path = str(repo / "billing" / "retry.py")
    return hook_payload(
        "PostToolUse",
        session_id,
        repo,
        tool_name="Edit",
        tool_use_id=tool_use_id,
        tool_input={"file_path": path, "old_string": old, "new_string": new, "replace_all": False},
        tool_response={
            "filePath": path,
            "oldString": old,
            "newString": new,
            "replaceAll": False,
            "userModified": False,
        },
    )


def answer_of(ran: list[tuple[dict, subprocess.CompletedProcess, float]]) -> list[dict]:
    """The hook answers printed (the capture hook prints nothing: it runs in the background)."""
    for hook, done, _ in ran:
        assert done.returncode == 0, done.stderr
        assert done.stdout == "" or not hook.get("async"), done.stdout
    return [json.loads(done.stdout) for _, done, _ in ran if done.stdout.strip()]


def test_an_edit_that_renames_an_anchored_function_names_the_note_and_one_elsewhere_names_none(
    asgi_server, plugin, billing
):
    hooks = edit_hooks(plugin, "Edit")
    assert len(hooks) == 2 and [bool(h.get("async")) for h in hooks] == [True, False]  # capture, and the edit hook
    session_id = str(uuid.uuid4())

    rename = edit(session_id, billing, "def send_invoice(invoice):", "def deliver_invoice(invoice):", "toolu_rename")
    answers = answer_of(run_post_tool_use(plugin, rename, asgi_server))
    assert len(answers) == 1
    output = answers[0]["hookSpecificOutput"]
    assert output["hookEventName"] == "PostToolUse"
    context = output["additionalContext"]
    assert "billing-retry" in context and "Invoice retries" in context
    assert "symbol `send_invoice` removed" in context
    assert "brain_edit" in context and "supersedes: <slug>" in context
    # Kept in the session's log for the retrospective: the file, the removed line, the note.
    touched = SessionEntry.objects.get(session__external_id=session_id, kind="anchors")
    assert touched.data["file"] == "billing/retry.py"
    assert touched.data["edit"]["removed"] == "def send_invoice(invoice):"
    assert [note["slug"] for note in touched.data["notes"]] == ["billing-retry"]

    comment = edit(
        session_id, billing, "    # one try per attempt, then give up\n", "    # try, then give up\n", "toolu_comment"
    )
    assert answer_of(run_post_tool_use(plugin, comment, asgi_server)) == []
    body_change = edit(
        session_id, billing, "            return True\n", "            return invoice.id\n", "toolu_body"
    )
    assert answer_of(run_post_tool_use(plugin, body_change, asgi_server)) == []


def test_a_write_that_drops_the_setting_names_the_note_and_a_multi_edit_that_keeps_it_does_not(
    asgi_server, plugin, billing
):
    session_id = str(uuid.uuid4())
    path = str(billing / "billing" / "retry.py")
    write = hook_payload(
        "PostToolUse",
        session_id,
        billing,
        tool_name="Write",
        tool_use_id="toolu_write",
        tool_input={"file_path": path, "content": RETRY.replace("MAX_ATTEMPTS", "RETRIES")},
        tool_response={"type": "update", "filePath": path},
    )
    answers = answer_of(run_post_tool_use(plugin, write, asgi_server))
    assert len(answers) == 1
    context = answers[0]["hookSpecificOutput"]["additionalContext"]
    assert "setting `MAX_ATTEMPTS` removed" in context and "billing-retry" in context

    keeps = hook_payload(
        "PostToolUse",
        session_id,
        billing,
        tool_name="MultiEdit",
        tool_use_id="toolu_multi",
        tool_input={
            "file_path": path,
            "edits": [
                {"old_string": "MAX_ATTEMPTS = 3", "new_string": "MAX_ATTEMPTS = 3  # the provider's limit"},
                {"old_string": "return False", "new_string": "return None"},
            ],
        },
    )
    assert answer_of(run_post_tool_use(plugin, keeps, asgi_server)) == []


def test_with_the_service_down_the_edit_hooks_exit_0_in_time_say_nothing_and_the_event_is_spooled(
    plugin, billing, tmp_path
):
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    spool = tmp_path / "down-spool"
    session_id = str(uuid.uuid4())
    rename = edit(session_id, billing, "def send_invoice(invoice):", "def deliver_invoice(invoice):", "toolu_down")
    for hook, done, elapsed in run_post_tool_use(plugin, rename, url, HYPERGUILD_SPOOL_DIR=str(spool)):
        assert done.returncode == 0 and done.stdout == "", done.stdout + done.stderr
        assert elapsed < hook["timeout"], elapsed
    spooled = [json.loads(line) for path in spool.glob("*.jsonl") for line in path.read_text().splitlines()]
    assert [(entry["event"], entry["input"]["tool_use_id"]) for entry in spooled] == [("PostToolUse", "toolu_down")]


def test_a_caller_that_may_not_read_the_brain_is_refused(asgi_server, billing, settings):
    import httpx

    settings.BRAIN_MCP_TOKEN = "the-right-token"
    payload = edit(str(uuid.uuid4()), billing, "def send_invoice(invoice):", "def x(invoice):", "toolu_refused")
    refused = httpx.post(f"{asgi_server}/api/hooks/anchors", json=payload, timeout=30)
    assert refused.status_code == 401
    wrong = httpx.post(
        f"{asgi_server}/api/hooks/anchors", json=payload, timeout=30, headers={"Authorization": "Bearer wrong"}
    )
    assert wrong.status_code == 401
    assert not SessionEntry.objects.filter(kind="anchors").exists()
    bad = httpx.post(
        f"{asgi_server}/api/hooks/anchors",
        json={"session_id": "x"},
        timeout=30,
        headers={"Authorization": "Bearer the-right-token"},
    )
    assert bad.status_code == 400


# -- acceptance 2: the loop closes at the session's end -------------------------------------------------------


def a_session_that_breaks_the_note(plugin: InstalledPlugin, url: str, repo: Path) -> str:
    """A session renames send_invoice (through the installed hooks), commits it, and ends without the note."""
    session_id = str(uuid.uuid4())
    rename = edit(
        session_id, repo, "def send_invoice(invoice):", "def deliver_invoice(invoice):", f"toolu_{session_id}"
    )
    assert len(answer_of(run_post_tool_use(plugin, rename, url))) == 1
    ended = plugin.run_hook("SessionEnd", hook_payload("SessionEnd", session_id, repo, reason="other"), url=url)
    assert ended.returncode == 0, ended.stderr
    retrospective(session_id)  # what SessionEnd queued, as the worker runs it
    return session_id


def draft_of(session_id: str) -> Note:
    return Note.objects.get(provenance__retrospective_key=f"supersedes:{session_id}:billing-retry")


def the_code_moves(repo: Path) -> None:
    """The session's change lands on the branch and the project syncs: the note waits for a re-check."""
    retry = repo / "billing" / "retry.py"
    retry.write_text(retry.read_text().replace("def send_invoice(", "def deliver_invoice("))
    git(repo, "commit", "-qam", "rename send_invoice")
    call_command("project_sync", "billing", stdout=io.StringIO())
    assert Note.objects.needs_recheck().filter(slug="billing-retry").exists()


def test_a_session_that_broke_a_note_and_left_it_gets_a_supersedes_draft_with_its_change_as_evidence(
    asgi_server, plugin, billing
):
    session_id = a_session_that_breaks_the_note(plugin, asgi_server, billing)
    draft = draft_of(session_id)
    assert draft.status == "raw" and draft.frontmatter["supersedes"] == "billing-retry"
    assert draft.body.startswith("supersedes [[billing-retry]]")
    assert "> " + NOTE_BODY in draft.body  # what the note says
    assert "### billing/retry.py" in draft.body and "symbol `send_invoice` removed" in draft.body
    assert "- def send_invoice(invoice):" in draft.body and "+ def deliver_invoice(invoice):" in draft.body
    assert draft.provenance["supersedes"] == "billing-retry" and draft.provenance["files"] == ["billing/retry.py"]
    assert draft.project is not None and draft.project.name == "billing"
    retrospective(session_id)  # again: nothing new
    assert Note.objects.filter(frontmatter__supersedes="billing-retry").count() == 1


def test_a_session_that_updated_the_note_gets_no_draft(asgi_server, plugin, billing):
    session_id = str(uuid.uuid4())
    rename = edit(session_id, billing, "def send_invoice(invoice):", "def deliver_invoice(invoice):", "toolu_kept")
    assert len(answer_of(run_post_tool_use(plugin, rename, asgi_server))) == 1
    note = Note.objects.get(slug="billing-retry")
    do_edit_note(note, body=NOTE_BODY.replace("send_invoice", "deliver_invoice"))  # brain_edit, as the hook advised
    retrospective(session_id)
    assert not Note.objects.filter(frontmatter__supersedes="billing-retry").exists()


def test_resolving_the_recheck_resolves_the_draft(asgi_server, plugin, billing):
    draft = draft_of(a_session_that_breaks_the_note(plugin, asgi_server, billing))
    the_code_moves(billing)
    do_confirm_note(Note.objects.get(slug="billing-retry"), user=None)  # "Still true" in the re-check queue
    draft.refresh_from_db()
    assert draft.status == "rejected" and draft.review_note.startswith("settled: billing-retry is still true")
    assert not Note.objects.needs_recheck().exists()


def test_promoting_the_draft_supersedes_the_note_and_clears_its_recheck(asgi_server, plugin, billing):
    draft = draft_of(a_session_that_breaks_the_note(plugin, asgi_server, billing))
    the_code_moves(billing)
    promoted = do_promote_note(
        draft, reviewer=None, wing="concepts", body="`deliver_invoice` tries `MAX_ATTEMPTS` times."
    )
    old = Note.objects.get(slug="billing-retry")
    assert old.superseded_by_id == promoted.pk
    assert not Note.objects.needs_recheck().exists()


def test_rejecting_the_draft_says_the_note_still_holds(asgi_server, plugin, billing):
    draft = draft_of(a_session_that_breaks_the_note(plugin, asgi_server, billing))
    the_code_moves(billing)
    do_reject_note(draft, reviewer=None, reason="the note is about the retry count, which did not change")
    old = Note.objects.get(slug="billing-retry")
    assert old.superseded_by_id is None and old.verification_state == "verified"
    assert not Note.objects.needs_recheck().exists()


def test_the_recheck_queue_shows_the_draft_beside_the_note_and_rejecting_it_there_settles_both(
    asgi_server, plugin, billing, client
):
    draft = draft_of(a_session_that_breaks_the_note(plugin, asgi_server, billing))
    the_code_moves(billing)
    client.force_login(make_person("rita", "reviewer"))
    page = client.get(reverse("brain-recheck")).content.decode()
    section = page[page.index('data-slug="billing-retry"') :]
    assert f'data-draft="{draft.slug}"' in section and 'data-action="promote-draft"' in section
    rejected = client.post(
        reverse("brain-reject", args=[draft.pk]), {"reason": "the note it would replace still holds"}
    )
    assert rejected.status_code == 302
    draft.refresh_from_db()
    assert draft.status == "rejected"
    assert not Note.objects.needs_recheck().exists()
    assert "Nothing to re-check" in client.get(reverse("brain-recheck")).content.decode()


@pytest.mark.usefixtures("live")  # every token set: nothing open without one
def test_reading_the_brain_is_all_the_edit_hook_needs_and_without_it_the_answer_is_403(asgi_server, billing):
    import httpx

    from tests.people.conftest import bearer, token_for

    make_person("rick", "reader")
    rename = edit(str(uuid.uuid4()), billing, "def send_invoice(invoice):", "def deliver_invoice(invoice):", "toolu_r")
    read_only = httpx.post(
        f"{asgi_server}/api/hooks/anchors", json=rename, headers=bearer(token_for("rick", "brain:read")), timeout=30
    )
    assert read_only.status_code == 200, read_only.text
    assert "billing-retry" in read_only.json()["hookSpecificOutput"]["additionalContext"]
    assert not SessionEntry.objects.filter(kind="anchors").exists()  # logging the touch needs sessions:write

    no_brain = httpx.post(
        f"{asgi_server}/api/hooks/anchors", json=rename, headers=bearer(token_for("rick", "sessions:write")), timeout=30
    )
    assert no_brain.status_code == 403
    both = httpx.post(
        f"{asgi_server}/api/hooks/anchors",
        json=rename,
        timeout=30,
        headers=bearer(token_for("rick", "brain:read", "sessions:write")),
    )
    assert both.status_code == 200 and SessionEntry.objects.filter(kind="anchors").count() == 1
