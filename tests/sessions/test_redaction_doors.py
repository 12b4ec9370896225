"""Redaction at every door: session entries and worker output are stored redacted, counted and shown."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from sessions.actions import do_log_checked_entry
from sessions.models import SessionEntry
from supervisor.tasks import run_skill
from supervisor.tools import start_skill_run
from tests.supervisor.conftest import allowed_root, fake_claude, python_project  # noqa: F401 - fixtures

pytestmark = pytest.mark.django_db

AWS_KEY = "AKIAIOSFODNN7EXAMPLE"
SK_TOKEN = "sk-proj-" + "Z" * 30
PRIVATE_KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----"
SECRETS = (AWS_KEY, SK_TOKEN, "b3BlbnNzaC1rZXktdjEAAAAA")


def patterns(flags: list[dict]) -> set[tuple[str, str]]:
    return {(flag["field"], flag["pattern"]) for flag in flags}


def test_a_session_entry_is_stored_redacted_and_the_timeline_shows_the_count(client):
    do_log_checked_entry(
        "leaky",
        {"kind": "note", "message": f"deploy with {AWS_KEY} and {SK_TOKEN}", "data": {"key": PRIVATE_KEY}},
        source="rest",
    )
    entry = SessionEntry.objects.get(session__external_id="leaky")
    stored = entry.message + str(entry.data)
    assert not any(secret in stored for secret in SECRETS)
    assert entry.message == "deploy with [REDACTED:aws_access_key] and [REDACTED:openai_key]"
    assert entry.data == {"key": "[REDACTED:private_key]"}
    assert patterns(entry.redactions) == {
        ("message", "aws_access_key"),
        ("message", "openai_key"),
        ("data", "private_key"),
    }

    client.force_login(get_user_model().objects.create_user("staff", password="x" * 12, is_staff=True))
    page = client.get(reverse("sessions-detail", args=["leaky"])).content.decode()
    assert "3 redacted" in page and AWS_KEY not in page


def test_worker_stdout_stderr_and_report_are_stored_redacted_and_flagged(fake_claude, python_project, client):  # noqa: F811
    leak = f"found {AWS_KEY}, {SK_TOKEN} and\n{PRIVATE_KEY}"
    fake_claude.script(
        [
            {
                "write": {
                    "tests/test_add.py": "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n"
                },
                "stderr": leak,
                "report": {"status": "done", "file_path": "tests/test_add.py", "summary": leak},
            }
        ]
    )
    do_log_checked_entry("leaky-run", {"kind": "start", "message": "adding add"}, source="mcp")
    run = start_skill_run("tdd_red", {"project_root": str(python_project), "spec": "add", "session_id": "leaky-run"})
    run_skill(run.pk)
    run.refresh_from_db()

    assert run.status == "pass"
    for field in (run.stdout, run.stderr, str(run.worker_report), str(run.attempt_log), str(run.result)):
        assert not any(secret in field for secret in SECRETS), field
    assert "[REDACTED:aws_access_key]" in run.stderr and "[REDACTED:private_key]" in run.stdout
    flagged = patterns(run.redactions)
    assert {
        ("stderr", "aws_access_key"),
        ("stderr", "openai_key"),
        ("stderr", "private_key"),
        ("stdout", "private_key"),
        ("worker_report", "openai_key"),
    } <= flagged

    client.force_login(get_user_model().objects.create_superuser("admin", password="x" * 12))
    page = client.get(reverse("sessions-detail", args=["leaky-run"])).content.decode()
    assert "redacted:" in page and AWS_KEY not in page
    admin = client.get(reverse("admin:supervisor_skillrun_change", args=[run.pk]))
    assert admin.status_code == 200 and "aws_access_key" in admin.content.decode()


def test_a_note_a_skill_writes_is_stored_redacted_with_its_redactions_in_the_provenance(
    fake_claude,  # noqa: F811 - the fixture imported above
    settings,
    tmp_path,
):
    from brain.models import Note

    settings.DATA_DIR = tmp_path
    fake_claude.script(
        [
            {
                "report": {
                    "title": "Deploy",
                    "spec": f"Deploy with {AWS_KEY}.\n{PRIVATE_KEY}",
                    "acceptance_criteria": [f"uses {SK_TOKEN}"],
                }
            }
        ]
    )
    run = start_skill_run("spec", {"text": "deploy", "project": "hg"})
    run_skill(run.pk)
    run.refresh_from_db()

    note = Note.objects.get(pk=run.result["note_id"])
    assert not any(secret in note.body for secret in SECRETS)
    assert {(f["field"], f["pattern"]) for f in note.provenance["redactions"]} == {
        ("body", "aws_access_key"),
        ("body", "private_key"),
        ("body", "openai_key"),
    }


def test_a_session_entry_with_the_kinds_issue_35_found_is_stored_without_them():
    from tests.sessions.test_redaction import MISSED_KINDS

    message = " ".join(secret for secret, _, _ in MISSED_KINDS)
    do_log_checked_entry(
        "leaky-35", {"kind": "note", "message": message, "data": {"env": MISSED_KINDS[2][0]}}, source="rest"
    )
    entry = SessionEntry.objects.get(session__external_id="leaky-35")
    stored = entry.message + str(entry.data)
    assert not any(part in stored for _, _, part in MISSED_KINDS), stored
    assert {pattern for _, pattern in patterns(entry.redactions)} == {name for _, name, _ in MISSED_KINDS}
