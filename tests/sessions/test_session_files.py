"""sessions_import / sessions_export: original-format JSONL folders round-trip byte for byte."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import httpx
import pytest
from django.core.management import CommandError, call_command

from sessions.actions import do_log_entry
from sessions.folder import export_sessions_dir, import_sessions_dir
from sessions.models import AgentSession, SessionEntry

pytestmark = pytest.mark.django_db

# Written the way different clients of the original brain wrote them: key
# orders, spacing and escaping vary, some fields only some lines have.
ORIGINAL_FILES = {
    "7f3c2a10-9b1e-4c55-8d2a-0e6f4b7a9c31.jsonl": (
        '{"ts": "2025-03-02T09:14:03Z", "kind": "start", "project": "hyperguild", "client": {"name": "claude-code", "version": "1.0.31"}}\n'
        '{"ts": "2025-03-02T09:15:11Z", "kind": "skill", "skill": "tdd_red", "phase": "red", "status": "pass", "message": "wrote failing test for slugify"}\n'
        '{"kind":"skill","ts":"2025-03-02T09:17:40Z","skill":"tdd_green","phase":"green","status":"fail","message":"ImportError: unidecode"}\n'
        '{"ts": "2025-03-02T09:19:02Z", "kind": "decision", "message": "Slugs stay ASCII: translitérer « Ærø » → \\"aero\\" with unidecode", "tags": ["slug", "i18n"]}\n'
        '{"ts": "2025-03-02T09:21:30Z", "kind": "skill", "skill": "tdd_green", "phase": "green", "status": "pass", "message": "日本語のタイトルも通る ✅", "data": {"attempt": 2, "files": ["brain/slugs.py"]}}\n'
        "\n"
        '{"ts": "2025-03-02T09:30:00Z", "kind": "end", "status": "ok", "duration_s": 966.5, "extra": null}\n'
    ),
    "legacy_no_trailing_newline.jsonl": (
        '{"type": "note", "text": "tab\\tand emoji 🧠 stay as written", "at": "2024-12-01T10:00:00+01:00"}\n'
        '{"type": "note", "text": "tab\\tand emoji 🧠 stay as written", "at": "2024-12-01T10:00:00+01:00"}\n'
        '{ "type" : "correction" , "text" : "use \\u00e9 escapes sometimes" }'
    ),
    "crlf-and-garbage.jsonl": '{"kind": "note", "message": "windows line"}\r\nnot json at all\r\n[1, 2, 3]\r\n',
    "empty.jsonl": "",
}


def write_folder(folder: Path, files: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_bytes(text.encode("utf-8"))
    return folder


def test_importing_then_exporting_a_folder_gives_identical_files(tmp_path):
    source = write_folder(tmp_path / "in", ORIGINAL_FILES)
    out = StringIO()
    call_command("sessions_import", str(source), stdout=out)
    call_command("sessions_export", str(tmp_path / "out"), stdout=StringIO())

    exported = {p.name: p.read_bytes() for p in (tmp_path / "out").iterdir()}
    assert exported == {name: text.encode("utf-8") for name, text in ORIGINAL_FILES.items()}
    assert "Imported 4 session file(s): 12 new entries" in out.getvalue()


def test_imported_entries_keep_every_original_field_and_the_common_ones_are_searchable(tmp_path):
    import_sessions_dir(write_folder(tmp_path / "in", ORIGINAL_FILES))
    session = AgentSession.objects.get(external_id="7f3c2a10-9b1e-4c55-8d2a-0e6f4b7a9c31")
    decision = session.entries.get(kind="decision")
    green = session.entries.get(seq=5)
    assert decision.data["tags"] == ["slug", "i18n"] and "Ærø" in decision.message
    assert (green.skill, green.phase, green.status, green.data["data"]["attempt"]) == ("tdd_green", "green", "pass", 2)
    assert green.occurred_at.isoformat() == "2025-03-02T09:21:30+00:00"
    assert session.entries.get(seq=6).data == {
        "ts": "2025-03-02T09:30:00Z",
        "kind": "end",
        "status": "ok",
        "duration_s": 966.5,
        "extra": None,
    }
    legacy = AgentSession.objects.get(external_id="legacy_no_trailing_newline").entries.order_by("seq")
    assert [e.kind for e in legacy] == ["note", "note", "correction"]
    assert [e.kind for e in AgentSession.objects.get(external_id="crlf-and-garbage").entries.order_by("seq")] == [
        "note",
        "unparsed",
        "unparsed",
    ]


def test_importing_the_same_folder_twice_writes_nothing_new(tmp_path):
    source = write_folder(tmp_path / "in", ORIGINAL_FILES)
    import_sessions_dir(source)
    ids = set(SessionEntry.objects.values_list("id", flat=True))
    again = import_sessions_dir(source)
    assert again["entries_created"] == 0 and again["entries_existing"] == 12
    assert set(SessionEntry.objects.values_list("id", flat=True)) == ids


def test_a_file_that_grew_imports_only_its_new_lines(tmp_path):
    name = "legacy_no_trailing_newline.jsonl"
    source = write_folder(tmp_path / "in", {name: ORIGINAL_FILES[name]})
    import_sessions_dir(source)
    grown = ORIGINAL_FILES[name] + '\n{"type": "note", "text": "later"}\n'
    (source / name).write_text(grown, encoding="utf-8")
    summary = import_sessions_dir(source)
    export_sessions_dir(tmp_path / "out")
    assert summary["entries_created"] == 1 and summary["entries_existing"] == 3
    assert (tmp_path / "out" / name).read_text(encoding="utf-8") == grown


def test_sessions_logged_through_the_service_export_and_reimport_without_duplicates(tmp_path):
    do_log_entry("live-1", kind="decision", message="keep BM25 in memory", data={"why": "speed"})
    do_log_entry("live-1", kind="skill", skill="review", status="pass")
    export_sessions_dir(tmp_path / "out")
    summary = import_sessions_dir(tmp_path / "out")
    assert summary["entries_created"] == 0 and SessionEntry.objects.count() == 2
    first_line = (tmp_path / "out" / "live-1.jsonl").read_text().splitlines()[0]
    assert first_line.startswith('{"ts": ') and '"kind": "decision"' in first_line and '"seq": 1' in first_line


def test_a_file_whose_name_is_not_a_session_id_is_skipped_and_reported(tmp_path):
    source = write_folder(tmp_path / "in", {"bad name!.jsonl": '{"kind": "note"}\n', "bad.utf8.jsonl": ""})
    (source / "bad.utf8.jsonl").write_bytes(b'{"kind": "\xff"}\n')
    summary = import_sessions_dir(source)
    assert summary["files"] == 0 and {e["file"] for e in summary["errors"]} == {"bad name!.jsonl", "bad.utf8.jsonl"}
    assert not AgentSession.objects.exists() and not SessionEntry.objects.exists()


def test_sessions_import_refuses_a_path_that_is_not_a_folder(tmp_path):
    with pytest.raises(CommandError, match="not a folder"):
        call_command("sessions_import", str(tmp_path / "missing"))
    assert not AgentSession.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_an_imported_time_no_read_can_show_is_kept_in_the_line_only_and_the_session_reads(tmp_path, asgi_server):
    # Issue 46, finding 6: such a time was stored and every read of the session answered 500.
    lines = [
        '{"ts": "0001-01-01T00:00:00+14:00", "kind": "note", "message": "year one"}',
        '{"ts": "9999-12-31T23:59:59-14:00", "kind": "note", "message": "the end of time"}',
        '{"ts": "2025-03-02T09:00:00+23:59", "kind": "note", "message": "no zone is that far"}',
        '{"ts": "2025-03-02T09:00:00Z", "kind": "note", "message": "a real time"}',
    ]
    import_sessions_dir(write_folder(tmp_path / "in", {"odd-times.jsonl": "\n".join(lines) + "\n"}))
    entries = list(AgentSession.objects.get(external_id="odd-times").entries.order_by("seq"))
    assert [e.occurred_at.isoformat() if e.occurred_at else None for e in entries] == [
        None,
        None,
        None,
        "2025-03-02T09:00:00+00:00",
    ]
    assert [e.raw_line for e in entries] == lines
    read = httpx.get(f"{asgi_server}/sessions/odd-times/entries", timeout=30)
    assert read.status_code == 200 and len(read.json()["entries"]) == 4


def test_a_file_over_the_import_ceiling_is_reported_and_writes_nothing(tmp_path, monkeypatch):
    from sessions import folder

    monkeypatch.setattr(folder, "MAX_IMPORT_LINES", 3)
    summary = import_sessions_dir(write_folder(tmp_path / "in", {"big.jsonl": '{"kind": "note"}\n' * 4}))
    assert summary["files"] == 0 and "at most 3" in summary["errors"][0]["error"]
    assert not AgentSession.objects.exists()
