"""Issue 48, acceptance 3: notes that carry a check are proven by it, go stale when it fails, and only a
reviewer or staff may give one (it runs a command on the server). Real git repositories, the real runner."""

from __future__ import annotations

import io
import os
import time
import uuid
from pathlib import Path

import httpx
import pytest
from django.core.management import call_command
from django.urls import reverse

from brain.actions import do_add_project, do_ingest_note, do_verify_note, do_write_raw_note
from brain.errors import CheckRefused
from brain.models import Note, NoteCheckRun
from brain.truth import verification_dict
from tests.conftest import call_tool
from tests.people.conftest import bearer, make_person, token_for
from tests.truth.conftest import git, make_repo

ROUNDING = "def round_amount(amount):\n    return round(amount, 2)\n"
CHECK = 'grep -q "round(amount, 2)" billing/rounding.py'


def make_billing(root: Path) -> Path:
    return make_repo(root, {"billing/rounding.py": ROUNDING}, name="billing-service")


@pytest.fixture
def billing(tmp_path, settings) -> Path:
    root = tmp_path / "src"
    root.mkdir()
    settings.SUPERVISOR_ALLOWED_ROOTS = [str(root)]
    settings.HYPERGUILD_REPO_MIRRORS_DIR = str(tmp_path / "mirrors")
    settings.BRAIN_EMBEDDER = "off"
    repo = make_billing(root)
    do_add_project(name="billing", repo=str(repo))
    return repo


def rounding_note(check: str = CHECK) -> Note:
    return do_ingest_note(
        title="Rounding",
        body="`round_amount` in `billing/rounding.py` rounds to cents.",
        wing="concepts",
        slug="billing-rounding",
        frontmatter={"project": "billing", "check": check},
    )


@pytest.mark.django_db
def test_a_check_proves_the_note_at_the_head_and_a_change_that_breaks_it_makes_it_stale_with_the_output(billing):
    head = git(billing, "rev-parse", "HEAD")
    note = rounding_note('grep "round(amount, 2)" billing/rounding.py || { echo "rounding changed"; exit 3; }')
    assert note.verification_state == "verified"  # anchors hold; the check has not run yet

    note = do_verify_note(note)  # brain_verify
    assert (note.verification_state, note.verified_commit) == ("proven", head)
    assert verification_dict(note)["label"] == f"proven at {head[:7]} (check passed)"
    run = NoteCheckRun.objects.get(note=note)
    assert run.passed and run.commit == head and run.seconds > 0
    do_verify_note(note)
    assert NoteCheckRun.objects.filter(note=note).count() == 1  # at most once per head

    rounding = billing / "billing" / "rounding.py"
    rounding.write_text(rounding.read_text().replace("round(amount, 2)", "round(amount, 4)"))
    git(billing, "commit", "-qam", "round to 4 places")
    new = git(billing, "rev-parse", "HEAD")
    out = io.StringIO()
    call_command("project_sync", "billing", stdout=out)

    note.refresh_from_db()
    assert (note.verification_state, note.verified_commit) == ("stale", new), out.getvalue()
    assert "stale: billing-rounding" in out.getvalue()
    [failed] = [item for item in note.verification_evidence if item.get("kind") == "check"]
    assert failed["message"].startswith("check `grep ") and failed["message"].endswith(
        f"` failed at {new[:7]} (exit 3)"
    )
    assert failed["anchor"] == note.frontmatter["check"]
    assert "rounding changed" in failed["now"]
    assert Note.objects.needs_recheck().filter(pk=note.pk).exists()
    assert NoteCheckRun.objects.filter(note=note).count() == 2
    call_command("project_sync", "billing", stdout=io.StringIO())  # the same head again: the check does not run
    assert NoteCheckRun.objects.filter(note=note).count() == 2


def processes_running(marker: str) -> list[str]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if marker in command and str(os.getpid()) != entry.name:
                found.append(command)
    return found


@pytest.mark.django_db
def test_a_check_that_hangs_is_killed_at_its_timeout_with_nothing_left_running(billing, settings):
    settings.SUPERVISOR_TEST_TIMEOUT = 1
    seconds = f"{uuid.uuid4().int % 1000 + 500}.25"  # a sleep nobody else runs
    note = rounding_note(f"sleep {seconds} & sleep {seconds}; wait")
    began = time.monotonic()
    note = do_verify_note(note)
    assert time.monotonic() - began < 10
    assert note.verification_state == "stale"
    [failed] = [item for item in note.verification_evidence if item.get("kind") == "check"]
    assert "(timed out)" in failed["message"]
    assert "killed after SUPERVISOR_TEST_TIMEOUT=1 s" in failed["now"]
    assert NoteCheckRun.objects.get(note=note).outcome == "timeout"
    assert processes_running(f"sleep {seconds}") == []


def test_a_reader_a_member_or_a_curator_cannot_set_a_check_at_any_door_and_a_reviewer_can(live, billing, client):
    make_person("rita", "reviewer")
    make_person("cara", "curator")  # writes raw notes, reviews nothing
    make_person("rick", "reader")
    make_person("mia", "member")  # the ordinary teammate: raw notes for review, no review (issue 46)
    note = do_ingest_note(
        title="Rounding",
        body="`round_amount` rounds to cents.",
        wing="concepts",
        slug="billing-rounding",
        frontmatter={"project": "billing"},
    )
    url = f"{live}/mcp/brain"
    # A reader's token cannot even hold brain:write; a curator's can, and still may not give a check.
    for headers in (
        bearer(token_for("cara", "brain:read", "brain:write")),
        bearer(token_for("rick", "brain:read")),
        bearer(token_for("mia", "brain:read", "brain:write")),
    ):
        wrote = call_tool(
            url,
            "brain_write",
            {"title": "Rounding, proven", "body": "Cents.", "frontmatter": {"check": CHECK}},
            headers=headers,
        )
        assert wrote["isError"] is True, wrote
        edited = call_tool(
            url,
            "brain_edit",
            {"slug": note.slug, "version": note.version, "frontmatter": {"project": "billing", "check": CHECK}},
            headers=headers,
        )
        assert edited["isError"] is True, edited
        rest = httpx.post(
            f"{live}/write",
            headers=headers,
            timeout=30,
            json={"title": "Rounding, proven", "body": "Cents.", "frontmatter": {"check": CHECK}},
        )
        assert rest.status_code in (403,), rest.text
    cara = bearer(token_for("cara", "brain:read", "brain:write"))
    wrote = call_tool(
        url,
        "brain_write",
        {"title": "Rounding, proven", "body": "Cents.", "frontmatter": {"check": CHECK}},
        headers=cara,
    )
    assert "reviewer" in wrote["content"][0]["text"]
    rest = httpx.post(
        f"{live}/write",
        headers=cara,
        timeout=30,
        json={"title": "Rounding, proven", "body": "Cents.", "frontmatter": {"check": CHECK}},
    )
    assert rest.status_code == 403 and rest.json()["error"]["code"] == "forbidden"
    with pytest.raises(CheckRefused):
        do_write_raw_note(
            title="Rounding, proven", body="Cents.", frontmatter={"check": CHECK}, user=make_person("mo", "curator")
        )

    form = {"version": note.version, "title": note.title, "body": note.body, "check": CHECK}
    for role in ("curator", "member"):
        client.force_login(make_person(f"{role}2", role))
        assert client.post(reverse("brain-edit", args=[note.pk]), form).status_code == 403
    assert not Note.objects.filter(frontmatter__has_key="check").exists()  # nothing written at any door

    client.force_login(make_person("rita2", "reviewer"))
    assert client.post(reverse("brain-edit", args=[note.pk]), form).status_code == 302
    note.refresh_from_db()
    assert note.frontmatter["check"] == CHECK
    page = client.get(reverse("brain-note", args=[note.pk])).content.decode()
    assert 'name="check"' in page and "billing/rounding.py" in page


@pytest.mark.django_db
def test_sessions_see_proven_above_verified_in_brain_context_session_start_and_search(billing):
    from brain.context import context
    from brain.search import search
    from sessions.hooks import context_text

    head = git(billing, "rev-parse", "HEAD")[:7]
    do_ingest_note(
        title="Billing rounding helper",
        body="Billing rounds with `round_amount` in `billing/rounding.py`.",
        wing="concepts",
        slug="billing-helper",
        frontmatter={"project": "billing"},
    )
    do_verify_note(rounding_note())
    found = context(str(billing))
    labels = [(entry["slug"], entry["verification"]["label"]) for entry in found["entries"]]
    assert labels[:2] == [
        ("billing-rounding", f"proven at {head} (check passed)"),
        ("billing-helper", f"verified at {head} (anchors hold)"),
    ]
    text = context_text(str(billing))  # SessionStart's additionalContext
    assert text.index(f"(billing-rounding) [proven at {head} (check passed)]") < text.index(
        f"(billing-helper) [verified at {head} (anchors hold)]"
    )
    hits = {hit.slug: hit.verification for hit in search("billing rounding", limit=5).hits}
    assert hits["billing-rounding"]["state"] == "proven"
    assert hits["billing-rounding"]["label"] == f"proven at {head} (check passed)"


@pytest.mark.django_db
def test_the_note_page_says_proven_with_the_check_and_its_cost(billing, client):
    from tests.people.conftest import make_person

    note = do_verify_note(rounding_note())
    client.force_login(make_person("vic"))
    page = client.get(reverse("brain-note", args=[note.pk])).content.decode()
    assert f"Proven at {note.verified_commit[:7]} in billing: its check passed" in page
    assert "billing/rounding.py</code>" in page


@pytest.mark.django_db
def test_the_projects_page_counts_proven_notes(billing, client):
    from tests.people.conftest import make_person

    do_verify_note(rounding_note())
    client.force_login(make_person("vic"))
    row = client.get("/review/projects/").content.decode().split('data-project="billing"')[1].split("</tr>")[0]
    assert "<td>1</td>\n      <td>0</td>" in row  # proven 1, verified 0


@pytest.mark.django_db
def test_still_true_on_a_note_whose_check_failed_clears_it_until_the_check_fails_at_another_head(billing):
    from brain.actions import do_confirm_note

    note = do_verify_note(rounding_note('grep -q "round(amount, 4)" billing/rounding.py'))
    assert note.verification_state == "stale"
    note = do_confirm_note(note, user=None)
    assert note.verification_state == "verified" and not Note.objects.needs_recheck().exists()

    (billing / "README.md").write_text("billing\n")
    rounding = billing / "billing" / "rounding.py"
    rounding.write_text(rounding.read_text() + "\n# cents\n")
    git(billing, "add", "-A")
    git(billing, "commit", "-qm", "a comment")
    call_command("project_sync", "billing", stdout=io.StringIO())
    note.refresh_from_db()
    assert note.verification_state == "stale"  # failed again at the new head: a new decision is due
