"""Admin for operators, the secret-pattern system check, and the pinned MCP surface of this app."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.core.checks import run_checks

from hyperguild.mcp.registry import get_endpoint
from sessions.actions import do_log_entry, do_store_training_example
from sessions.models import SessionEntry, TrainingExample

PROMPT = [{"role": "user", "content": "q"}]


def store(key: str) -> TrainingExample:
    example, _ = do_store_training_example(
        source_key=key,
        kind="sft",
        skill="review",
        prompt=PROMPT,
        completion=[{"role": "assistant", "content": "a"}],
        provenance={"runs": [1]},
    )
    return example


@pytest.fixture
def staff_client(client, db):
    user = get_user_model().objects.create_superuser("ops", "ops@example.com", "x" * 12)
    client.force_login(user)
    return client


@pytest.mark.django_db
def test_bulk_approve_and_reject_in_the_admin_go_through_the_actions(staff_client):
    first, second = store("a"), store("b")
    url = "/admin/agent_sessions/trainingexample/"
    staff_client.post(url, {"action": "approve", "_selected_action": [first.pk]})
    staff_client.post(url, {"action": "reject", "_selected_action": [second.pk]})
    first.refresh_from_db()
    second.refresh_from_db()
    assert first.status == "approved" and first.edits[-1]["action"] == "approve" and first.reviewer.username == "ops"
    assert second.status == "rejected" and second.review_note == "rejected in bulk from the admin"


@pytest.mark.django_db
def test_session_pages_show_entries_read_only(staff_client):
    entry, _ = do_log_entry("admin-s", kind="decision", message="keep it")
    session_page = staff_client.get(f"/admin/agent_sessions/agentsession/{entry.session_id}/change/")
    entry_page = staff_client.get(f"/admin/agent_sessions/sessionentry/{entry.pk}/change/")
    refused = staff_client.post(f"/admin/agent_sessions/sessionentry/{entry.pk}/delete/", {"post": "yes"})
    assert session_page.status_code == 200 and "keep it" in session_page.content.decode()
    assert entry_page.status_code == 200 and refused.status_code == 403
    assert SessionEntry.objects.filter(pk=entry.pk).exists()


@pytest.mark.django_db
def test_the_admin_is_closed_to_people_who_are_not_staff(client):
    store("a")
    user = get_user_model().objects.create_user("someone", password="x" * 12)
    client.force_login(user)
    response = client.post("/admin/agent_sessions/trainingexample/", {"action": "approve", "_selected_action": [1]})
    assert response.status_code == 302 and "/admin/login/" in response["Location"]
    assert TrainingExample.objects.get().status == "candidate"


def test_a_bad_secret_pattern_file_stops_start_up(tmp_path, settings):
    bad = tmp_path / "patterns.txt"
    bad.write_text("AKIA[0-9A-Z]{16}\n(unclosed\n")
    settings.TRAINER_SECRET_PATTERNS_FILE = str(bad)
    errors = [e for e in run_checks() if e.id in ("hyperguild.E030", "hyperguild.E031")]
    assert [e.id for e in errors] == ["hyperguild.E031"] and "line 2" in errors[0].msg
    settings.TRAINER_SECRET_PATTERNS_FILE = str(tmp_path / "missing.txt")
    assert [e.id for e in run_checks() if e.id.startswith("hyperguild.E03")] == ["hyperguild.E030"]


def test_the_session_tools_keep_their_names_and_arguments():
    brain, supervisor = get_endpoint("brain").tools, get_endpoint("supervisor").tools
    log = brain["session_log"].input_schema
    assert sorted(log["properties"]) == sorted(
        [
            "session_id",
            "kind",
            "skill",
            "phase",
            "status",
            "message",
            "data",
            "idempotency_key",
            "project",
            "project_root",
            "client",
        ]
    )
    assert log["required"] == ["session_id", "kind"] and log["additionalProperties"] is False
    assert sorted(brain["session_log"].output_schema["required"]) == ["created", "entry_id", "seq", "session_id"]
    for name in ("retrospective", "trainer"):
        schema = supervisor[name].input_schema
        assert sorted(schema["properties"]) == ["model", "session_id"] and schema["required"] == ["session_id"]
    assert "learnings" in supervisor["retrospective"].output_schema["required"]
    assert "examples" in supervisor["trainer"].output_schema["required"]
