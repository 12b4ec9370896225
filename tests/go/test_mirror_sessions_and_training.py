"""With BRAIN_DIR set the folder stays a complete copy: session logs (append-only) and approved training data.

"One mirror interval" is one run of the scheduled task `brain.tasks.sync_brain_dir`.
"""

from __future__ import annotations

import json

import pytest

from brain.tasks import sync_brain_dir
from sessions.actions import do_approve_example, do_log_entry, do_store_training_example
from sessions.models import AgentSession
from tests.conftest import call_tool

TOKEN = "brain-mirror-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def brain_dir(tmp_path, settings):
    settings.BRAIN_DIR = str(tmp_path / "brain")
    settings.BRAIN_SESSIONS_DIR = ""
    return tmp_path / "brain"


def test_a_session_log_call_is_in_its_jsonl_file_after_one_mirror_round(
    transactional_db, asgi_server, brain_dir, settings
):
    settings.BRAIN_MCP_TOKEN = TOKEN
    result = call_tool(
        f"{asgi_server}/mcp/brain",
        "session_log",
        {"session_id": "mirror-s1", "kind": "decision", "message": "use pgvector"},
        AUTH,
    )
    assert not result.get("isError"), result

    summary = sync_brain_dir()

    lines = (brain_dir / "sessions" / "mirror-s1.jsonl").read_text().splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["message"] == "use pgvector"
    assert json.loads(lines[0])["kind"] == "decision"
    assert summary["sessions"]["created"] == 1


@pytest.mark.django_db
def test_session_files_are_appended_to_never_rewritten(brain_dir):
    sessions = brain_dir / "sessions"
    sessions.mkdir(parents=True)
    original = b'{"ts": "2026-01-05T10:00:00Z",   "kind": "decision", "message": "Go wrote this"}\n'
    (sessions / "go-s1.jsonl").write_bytes(original)
    sync_brain_dir()  # imports the Go line
    assert AgentSession.objects.get(external_id="go-s1").last_seq == 1

    do_log_entry("go-s1", kind="correction", message="logged here")
    sync_brain_dir()

    data = (sessions / "go-s1.jsonl").read_bytes()
    assert data.startswith(original)  # the Go line, byte for byte (its odd spacing too)
    added = data[len(original) :].decode().splitlines()
    assert len(added) == 1 and json.loads(added[0])["message"] == "logged here"
    assert sync_brain_dir()["sessions"]["appended"] == 0


@pytest.mark.django_db
def test_lines_added_on_disk_are_imported_and_an_edited_file_is_left_alone(brain_dir):
    sessions = brain_dir / "sessions"
    do_log_entry("s2", kind="note", message="one")
    sync_brain_dir()
    path = sessions / "s2.jsonl"
    with path.open("a") as handle:
        handle.write('{"kind": "note", "message": "two, written on disk"}\n')

    sync_brain_dir()
    assert AgentSession.objects.get(external_id="s2").last_seq == 2

    edited = path.read_text().replace('"one"', '"ONE"')
    path.write_text(edited)
    do_log_entry("s2", kind="note", message="three")
    summary = sync_brain_dir()

    assert any("s2.jsonl" in conflict for conflict in summary["sessions"]["conflicts"])
    assert "ONE" in path.read_text()  # left as the person edited it


@pytest.mark.django_db
def test_sessions_go_to_brain_sessions_dir_when_set(brain_dir, settings, tmp_path):
    settings.BRAIN_SESSIONS_DIR = str(tmp_path / "go-sessions")
    do_log_entry("s3", kind="note", message="elsewhere")

    sync_brain_dir()

    assert (tmp_path / "go-sessions" / "s3.jsonl").is_file()
    assert not (brain_dir / "sessions" / "s3.jsonl").exists()


@pytest.mark.django_db
def test_an_approved_example_is_in_training_data_after_one_mirror_round(brain_dir, django_user_model):
    reviewer = django_user_model.objects.create_user("rev", is_staff=True)
    example, _ = do_store_training_example(
        source_key="mirror-test-1",
        kind="sft",
        skill="tdd_green",
        prompt=[{"role": "system", "content": "Make the test pass."}, {"role": "user", "content": "add(a, b)"}],
        completion=[{"role": "assistant", "content": "def add(a, b):\n    return a + b"}],
        provenance={"run_id": 1},
    )
    sync_brain_dir()
    assert not (brain_dir / "training-data" / "sft.jsonl").exists()  # candidates are not training data yet

    do_approve_example(example, reviewer=reviewer)
    summary = sync_brain_dir()

    records = [json.loads(line) for line in (brain_dir / "training-data" / "sft.jsonl").read_text().splitlines()]
    assert records == [
        {
            "messages": [
                {"role": "system", "content": "Make the test pass."},
                {"role": "user", "content": "add(a, b)"},
                {"role": "assistant", "content": "def add(a, b):\n    return a + b"},
            ]
        }
    ]
    assert summary["training_data"]["sft"]["written"] == 1
