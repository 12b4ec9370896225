"""Brain folders: import, export, and the two-way mirror."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest
from django.core.management import call_command

from brain.actions import do_promote_note, do_reject_note, do_write_raw_note
from brain.folder import export_folder, import_folder, sync_mirror
from brain.models import Note, NoteLink, NoteStatus
from brain.tasks import schedules

pytestmark = pytest.mark.django_db

WINGS = ["concepts", "entities", "sources"]
HALLS = ["python", "databases", "ops"]
UNICODE_TITLES = ["Café au lait ☕", "Straße und Öl", "日本語のメモ", "Ελληνικά σημειώσεις", "naïve résumé"]


def frontmatter_shape(i: int) -> str:
    shapes = [
        "",  # no frontmatter at all: title from the heading
        f"---\ntitle: Note number {i}\n---\n",
        f"---\ntitle: 'Quoted: {i}'\ntags:\n  - t{i % 7}\n  - shared\ncreated: 2024-01-{i % 28 + 1:02d}\n---\n",
        f"---\ntitle: Nested {i}\nmeta:\n  score: {i / 10}\n  flags: [a, b]\nrelated:\n  - '[[note-{(i + 1) % 200}]]'\n---\n",
        f"---\ntitle: {UNICODE_TITLES[i % len(UNICODE_TITLES)]} {i}\nlinks: note-{(i + 3) % 200}\ndraft: true\n---\n",
        "---\n---\n",  # empty frontmatter: title from the file name
    ]
    return shapes[i % len(shapes)]


def make_brain(root: Path, count: int = 210) -> None:
    for i in range(count):
        body = f"# Heading {i}\n\nText about topic {i % 11}. See [[note-{(i * 7) % count}]] and [[missing-{i % 5}|a missing one]].\n"
        if i % 3 == 0:
            rel = f"raw/note-{i}.md"
        elif i % 3 == 1:
            rel = f"wiki/{WINGS[i % 3]}/{HALLS[i % 3]}/note-{i}.md"
        elif i % 9 == 2:
            rel = f"wiki/{WINGS[i % 3]}/{HALLS[(i + 1) % 3]}/deeper/down/note-{i}.md"
        else:
            rel = f"wiki/{WINGS[(i + 1) % 3]}/note-{i}.md"
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(frontmatter_shape(i) + body, encoding="utf-8")
    (root / "wiki/concepts/Ünïcode Fïle Name.md").write_text("---\ntitle: Ünïcode file\n---\nbody\n", encoding="utf-8")
    (root / "wiki/concepts/broken.md").write_text("---\ntitle: [unclosed\n---\nbody\n", encoding="utf-8")
    (root / "raw/empty.md").write_text("", encoding="utf-8")
    (root / "training-data").mkdir()
    (root / "training-data/ignored.md").write_text("not a note", encoding="utf-8")


def tree_bytes(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_import_export_reimport_is_a_fixed_point(tmp_path):
    source = tmp_path / "brain"
    make_brain(source)

    first = import_folder(source)
    assert first.added == 211
    assert sorted(name for name, _ in first.errors) == ["raw/empty.md", "wiki/concepts/broken.md"]
    assert "not valid YAML" in dict(first.errors)["wiki/concepts/broken.md"]
    assert "empty" in dict(first.errors)["raw/empty.md"]

    again = import_folder(source)
    assert (again.added, again.updated, again.archived, again.unchanged) == (0, 0, 0, 211)

    export_folder(tmp_path / "export1")
    reimported = import_folder(tmp_path / "export1")
    assert reimported.changes == 0 and reimported.errors == []
    export_folder(tmp_path / "export2")
    first_export, second_export = tree_bytes(tmp_path / "export1"), tree_bytes(tmp_path / "export2")
    assert first_export == second_export
    assert len(first_export) == 211


def test_imported_notes_get_their_place_title_and_links_from_the_folder(tmp_path):
    make_brain(tmp_path, count=30)
    import_folder(tmp_path)
    deep = Note.objects.get(slug="deeper/down/note-2")
    assert (deep.status, deep.wing, deep.hall) == (NoteStatus.WIKI, "sources", "python")
    assert deep.path == "wiki/sources/python/deeper/down/note-2.md"
    assert Note.objects.get(slug="note-0").title == "Heading 0"  # no frontmatter: the heading
    assert Note.objects.get(slug="note-4").title == "naïve résumé 4"
    assert Note.objects.get(slug="note-4").frontmatter == {"links": "note-7", "draft": True}
    assert Note.objects.get(slug="note-5").title == "Heading 5"  # empty frontmatter: the heading
    unicode_name = Note.objects.get(slug="unicode-file-name")
    assert unicode_name.title == "Ünïcode file"
    assert NoteLink.objects.filter(
        source__slug="note-3", target_slug="note-4", kind="related", target__isnull=False
    ).exists()
    assert NoteLink.objects.filter(target_slug="missing-0", target__isnull=True).exists()


def test_the_import_command_prints_a_summary_with_the_broken_file_named(tmp_path):
    make_brain(tmp_path, count=12)
    out = io.StringIO()
    call_command("brain_import", str(tmp_path), "--no-progress", stdout=out, stderr=io.StringIO())
    text = out.getvalue()
    assert "added 13, updated 0, unchanged 0, archived 0, errors 2" in text
    assert "wiki/concepts/broken.md" in text and "raw/empty.md" in text
    assert "Imported the brain folder" in text
    out = io.StringIO()
    call_command("brain_import", str(tmp_path), "--no-progress", stdout=out, stderr=io.StringIO())
    assert "added 0, updated 0, unchanged 13, archived 0" in out.getvalue()


def test_the_export_command_leaves_out_rejected_and_archived_notes(tmp_path, django_user_model):
    reviewer = django_user_model.objects.create_user("r")
    do_write_raw_note(title="Keep", body="x")
    do_reject_note(do_write_raw_note(title="Drop", body="y"), reviewer=reviewer, reason="no")
    out = io.StringIO()
    call_command("brain_export", str(tmp_path), "--no-progress", stdout=out, stderr=io.StringIO())
    assert sorted(tree_bytes(tmp_path)) == ["raw/keep.md"]
    assert (tmp_path / "raw/keep.md").read_text() == "---\ntitle: Keep\n---\nx"
    assert "Exported 1 note(s)." in out.getvalue()


def test_an_edit_on_disk_is_picked_up_by_the_mirror(tmp_path):
    note = do_write_raw_note(title="Mirror me", body="first")
    sync_mirror(tmp_path)
    path = tmp_path / "raw/mirror-me.md"
    assert path.read_text() == "---\ntitle: Mirror me\n---\nfirst"
    path.write_text("---\ntitle: Mirror me\n---\nedited on disk [[elsewhere]]", encoding="utf-8")
    os.utime(path, ns=(1, 1))  # a different mtime, as an editor would leave
    summary = sync_mirror(tmp_path)
    note.refresh_from_db()
    assert summary.updated == 1
    assert note.body == "edited on disk [[elsewhere]]"
    assert note.links_out.filter(target_slug="elsewhere").exists()
    assert sync_mirror(tmp_path).changes == 0


def test_a_file_removed_on_disk_archives_its_note_and_never_deletes_it(tmp_path):
    note = do_write_raw_note(title="Going away", body="x")
    sync_mirror(tmp_path)
    (tmp_path / "raw/going-away.md").unlink()
    summary = sync_mirror(tmp_path)
    note.refresh_from_db()
    assert summary.archived == 1
    assert note.status == NoteStatus.ARCHIVED and "removed from the brain folder" in note.review_note
    assert sync_mirror(tmp_path).changes == 0
    assert not (tmp_path / "raw/going-away.md").exists()


def test_notes_written_through_the_service_appear_on_disk_and_move_when_promoted(tmp_path, django_user_model):
    sync_mirror(tmp_path)
    note = do_write_raw_note(title="From the service", body="hello")
    assert sync_mirror(tmp_path).written == 1
    assert (tmp_path / "raw/from-the-service.md").is_file()
    do_promote_note(note, reviewer=django_user_model.objects.create_user("r"), wing="concepts", hall="ops")
    summary = sync_mirror(tmp_path)
    assert (summary.written, summary.removed) == (1, 1)
    assert not (tmp_path / "raw/from-the-service.md").exists()
    assert (tmp_path / "wiki/concepts/ops/from-the-service.md").read_text().endswith("hello")
    assert Note.objects.get(pk=note.pk).status == NoteStatus.WIKI


def test_a_new_file_on_disk_becomes_a_note_and_a_broken_one_is_reported(tmp_path):
    (tmp_path / "wiki/concepts").mkdir(parents=True)
    (tmp_path / "wiki/concepts/new.md").write_text("---\ntitle: New\n---\nbody", encoding="utf-8")
    (tmp_path / "wiki/concepts/bad.md").write_text("---\n- not a mapping\n---\n", encoding="utf-8")
    summary = sync_mirror(tmp_path)
    assert summary.added == 1
    assert [name for name, _ in summary.errors] == ["wiki/concepts/bad.md"]
    assert Note.objects.get(slug="new").wing == "concepts"


def test_the_mirror_schedule_exists_only_with_brain_dir(settings, tmp_path):
    settings.BRAIN_DIR = ""
    assert [entry for entry in schedules() if entry[0] == "brain-mirror"] == []
    settings.BRAIN_DIR = str(tmp_path)
    settings.BRAIN_SYNC_INTERVAL = 120
    assert ("brain-mirror", "brain.tasks.sync_brain_dir", 120) in schedules()


def test_the_scheduled_task_mirrors_brain_dir(settings, tmp_path):
    from brain.tasks import sync_brain_dir

    settings.BRAIN_DIR = ""
    assert sync_brain_dir() == {"skipped": "BRAIN_DIR is not set"}
    settings.BRAIN_DIR = str(tmp_path)
    do_write_raw_note(title="Scheduled", body="x")
    result = sync_brain_dir()
    assert result["written"] == 1 and result["errors"] == []
    assert (tmp_path / "raw/scheduled.md").is_file()


def test_session_logs_are_handed_to_the_sessions_app_both_ways(tmp_path):
    lines = '{"ts": "2025-01-01T10:00:00Z", "kind": "note", "message": "hello"}\n{"ts": "2025-01-01T10:01:00Z", "kind": "decision", "message": "use pg"}\n'
    (tmp_path / "brain/sessions").mkdir(parents=True)
    (tmp_path / "brain/sessions/sess-1.jsonl").write_text(lines, encoding="utf-8")
    (tmp_path / "brain/raw").mkdir()
    (tmp_path / "brain/raw/a.md").write_text("---\ntitle: A\n---\nbody", encoding="utf-8")
    summary = import_folder(tmp_path / "brain")
    assert summary.added == 1
    assert summary.sessions["files"] == 1 and summary.sessions["entries_created"] == 2
    assert import_folder(tmp_path / "brain").sessions["entries_created"] == 0
    export_folder(tmp_path / "out")
    assert (tmp_path / "out/sessions/sess-1.jsonl").read_text(encoding="utf-8") == lines


def test_a_note_rejected_in_the_service_leaves_the_folder_and_a_disk_edit_wins_a_conflict(tmp_path, django_user_model):
    reviewer = django_user_model.objects.create_user("r")
    doomed = do_write_raw_note(title="Doomed", body="x")
    contested = do_write_raw_note(title="Contested", body="original")
    sync_mirror(tmp_path)
    do_reject_note(doomed, reviewer=reviewer, reason="wrong")
    from brain.actions import do_edit_note

    do_edit_note(contested, body="service edit")
    path = tmp_path / "raw/contested.md"
    path.write_text("---\ntitle: Contested\n---\ndisk edit", encoding="utf-8")
    os.utime(path, ns=(2, 2))
    summary = sync_mirror(tmp_path)
    assert summary.removed == 1 and not (tmp_path / "raw/doomed.md").exists()
    assert Note.objects.get(pk=doomed.pk).status == NoteStatus.REJECTED
    assert Note.objects.get(pk=contested.pk).body == "disk edit"
    assert path.read_text() == "---\ntitle: Contested\n---\ndisk edit"
    assert sync_mirror(tmp_path).changes == 0


def test_importing_a_missing_directory_is_a_command_error(tmp_path):
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="not a directory"):
        call_command(
            "brain_import", str(tmp_path / "nope"), "--no-progress", stdout=io.StringIO(), stderr=io.StringIO()
        )


def test_archive_missing_archives_imported_notes_whose_file_is_gone(tmp_path):
    (tmp_path / "raw").mkdir()
    (tmp_path / "raw/stays.md").write_text("---\ntitle: Stays\n---\nx", encoding="utf-8")
    (tmp_path / "raw/goes.md").write_text("---\ntitle: Goes\n---\ny", encoding="utf-8")
    import_folder(tmp_path)
    (tmp_path / "raw/goes.md").unlink()
    service_note = do_write_raw_note(title="Service note", body="not from the folder")
    assert import_folder(tmp_path).archived == 0
    summary = import_folder(tmp_path, archive_missing=True)
    assert summary.archived == 1
    assert Note.objects.get(slug="goes").status == NoteStatus.ARCHIVED
    assert Note.objects.get(pk=service_note.pk).status == NoteStatus.RAW
