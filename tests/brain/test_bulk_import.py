"""A folder import inserts its new files a batch per transaction (issue 34) and stores what importing them one
file at a time stores: the same notes, links resolved the same way, bad files reported by name."""

from __future__ import annotations

from pathlib import Path

import pytest

from brain import folder
from brain.actions import SlugsTakenMeanwhile, do_import_new_note_files, do_import_note_file, do_ingest_note
from brain.folder import import_folder
from brain.models import BrainVersion, Note, NoteLink
from brain.placement import resolve_targets

pytestmark = pytest.mark.django_db

WINGS = ["concepts", "entities", "ops"]


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def tangled_brain(root: Path, count: int = 60) -> None:
    """Same-named files in several wings and halls, raw twins, links between them in both directions."""
    for i in range(count):
        name = f"topic-{i % 20}"
        wing = WINGS[i % 3]
        if i % 4 == 0:
            rel = f"raw/{name}.md"
        elif i % 4 == 1:
            rel = f"wiki/{wing}/{name}.md"
        else:
            rel = f"wiki/{wing}/hall-{i % 2}/{name}.md"
        links = f"[[topic-{(i * 7) % 20}]] [[{WINGS[(i + 1) % 3]}/topic-{(i + 3) % 20}]] [[nowhere-{i % 5}]]"
        write(root, rel, f"---\ntitle: Note {i}\nrelated: [topic-{(i + 1) % 20}]\n---\nText {i}. {links}\n")


def stored_links() -> dict[tuple[str, str, str], str | None]:
    return {
        (link.source.slug, link.target_slug, link.kind): link.target.slug if link.target else None
        for link in NoteLink.objects.select_related("source", "target")
    }


def test_every_link_of_a_batched_import_resolves_as_a_fresh_resolution_says(tmp_path):
    tangled_brain(tmp_path)
    summary = import_folder(tmp_path)
    assert summary.added == Note.objects.count() > 40 and not summary.errors
    for note in Note.objects.all():
        links = list(note.links_out.all())
        resolved = resolve_targets(
            [link.target_slug for link in links], wing=note.wing, hall=note.hall, exclude_id=note.id
        )
        assert {link.target_slug: link.target_id for link in links} == {
            target: answer.target_id for target, answer in resolved.items()
        }, note.slug
    assert summary.ambiguous_links  # the tangle has links that several notes answer equally well


def test_a_batched_import_stores_the_same_notes_and_links_as_one_file_at_a_time(tmp_path, monkeypatch):
    tangled_brain(tmp_path)
    batched = import_folder(tmp_path)
    notes = set(Note.objects.values_list("slug", "title", "body", "status", "wing", "hall", "path", "content_hash"))
    links = stored_links()
    NoteLink.objects.all().delete()
    Note.objects.all().delete()

    def one_by_one(new_files, summary, changed):  # what import_folder did before issue 34
        for nf in list(new_files):
            note, outcome = folder._import_one(nf)
            summary.count(outcome)
            changed.append(note)
        new_files.clear()

    monkeypatch.setattr(folder, "_import_new", one_by_one)
    single = import_folder(tmp_path)
    assert single.added == batched.added
    assert (
        set(Note.objects.values_list("slug", "title", "body", "status", "wing", "hall", "path", "content_hash"))
        == notes
    )
    assert stored_links() == links
    assert sorted(single.ambiguous_links) == sorted(batched.ambiguous_links)


def test_a_new_note_takes_over_the_links_of_notes_imported_before_it(tmp_path):
    write(tmp_path, "wiki/concepts/retry.md", "# Retry\n\nGeneric retries.\n")
    write(tmp_path, "wiki/ops/runbook.md", "# Runbook\n\nFollow [[retry]].\n")
    import_folder(tmp_path)
    write(tmp_path, "wiki/ops/retry.md", "# Retry in ops\n\nHow ops retries.\n")
    import_folder(tmp_path)
    assert NoteLink.objects.get(source__slug="runbook").target.slug == "ops/retry"


def test_a_bad_file_in_a_batch_is_reported_by_name_and_the_others_are_imported(tmp_path):
    for i in range(5):
        write(tmp_path, f"raw/good-{i}.md", f"# Good {i}\n\nFine.\n")
    write(tmp_path, "raw/bad.md", "# Bad\n\nA NUL \x00 in the body.\n")
    summary = import_folder(tmp_path)
    assert summary.added == 5
    [(name, message)] = summary.errors
    assert name == "raw/bad.md" and "NUL" in message
    assert not Note.objects.filter(slug="bad").exists()


def test_the_corpus_version_moves_once_per_batch_of_new_files(tmp_path, monkeypatch):
    monkeypatch.setattr(folder, "NEW_FILES_PER_TRANSACTION", 10)
    for i in range(25):
        write(tmp_path, f"raw/n-{i}.md", f"# N {i}\n\nBody {i}.\n")
    before = BrainVersion.current()
    import_folder(tmp_path)
    assert BrainVersion.current() - before == 3


def test_a_batch_with_a_slug_another_writer_took_writes_nothing(tmp_path):
    do_ingest_note(title="Taken", body="Written through the service meanwhile.", wing="concepts", slug="taken")
    files = [
        {
            "slug": slug,
            "title": slug,
            "body": "From a file.",
            "frontmatter": {},
            "status": "raw",
            "wing": "",
            "hall": "",
            "path": f"raw/{slug}.md",
        }
        for slug in ("fresh", "taken")
    ]
    with pytest.raises(SlugsTakenMeanwhile):
        do_import_new_note_files(files)
    assert not Note.objects.filter(slug="fresh").exists()


def test_an_import_meeting_a_slug_taken_meanwhile_imports_those_files_one_by_one(tmp_path):
    do_ingest_note(title="Taken", body="Written through the service meanwhile.", wing="concepts", slug="taken")
    files = [folder.parse_note_text(f"raw/{slug}.md", f"# {slug}\n\nFrom a file.\n") for slug in ("fresh", "taken")]
    summary, changed = folder.FolderSummary(), []
    folder._import_new(files, summary, changed)
    assert (summary.added, summary.updated) == (1, 1)
    assert Note.objects.get(slug="taken").path == "raw/taken.md"  # the file updated the note that took its slug


def test_a_batch_stores_what_the_single_file_action_stores(tmp_path):
    arguments = {
        "title": "Same",
        "body": "Key sk-ant-api03-" + "x" * 40 + " in a file.",
        "frontmatter": {"tags": ["a"]},
        "status": "wiki",
        "wing": "concepts",
        "hall": "python",
    }
    [batched] = do_import_new_note_files([{**arguments, "slug": "batched", "path": "wiki/concepts/python/batched.md"}])
    single, outcome = do_import_note_file(**arguments, slug="single", path="wiki/concepts/python/single.md")
    assert outcome == "added"
    fields = ["title", "body", "frontmatter", "status", "wing", "hall", "source", "content_hash", "redactions"]
    batched.refresh_from_db()
    assert {f: getattr(batched, f) for f in fields} == {f: getattr(single, f) for f in fields}
    assert batched.provenance == {"source": "import", "path": "wiki/concepts/python/batched.md"}
