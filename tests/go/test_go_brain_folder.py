"""A Go hyperguild brain folder as it is: same-named notes in different wings, [[bare-name]] links, _index.md."""

from __future__ import annotations

import pytest

from brain.actions import do_write_raw_note
from brain.folder import export_folder, import_folder, sync_mirror
from brain.models import AreaDescription, Note, NoteLink
from brain.presenters import note_detail

pytestmark = pytest.mark.django_db


def write(root, rel_path: str, text: str) -> None:
    path = root / rel_path
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def target_of(source_slug: str, target_slug: str) -> str | None:
    link = NoteLink.objects.select_related("target").get(source__slug=source_slug, target_slug=target_slug)
    return link.target.slug if link.target else None


@pytest.fixture
def two_wings(tmp_path):
    write(tmp_path, "wiki/concepts/pgvector.md", "# Vector search\n\nHNSW inside PostgreSQL.\n")
    write(tmp_path, "wiki/entities/pgvector.md", "# The extension\n\nVersion 0.8. The technique: [[pgvector]].\n")
    write(tmp_path, "wiki/entities/databases/pgvector.md", "# pgvector as a database add-on\n\nSee [[pgvector]].\n")
    write(tmp_path, "wiki/sources/pg-talk.md", "# A talk\n\nAbout [[pgvector]] and [[entities/pgvector]].\n")
    return tmp_path


def test_same_named_notes_in_different_wings_all_import_with_wing_qualified_slugs(two_wings):
    summary = import_folder(two_wings)

    assert summary.errors == [] and summary.added == 4
    assert dict(Note.objects.values_list("path", "slug")) == {
        "wiki/concepts/pgvector.md": "pgvector",
        "wiki/entities/pgvector.md": "entities/pgvector",
        "wiki/entities/databases/pgvector.md": "entities/databases/pgvector",
        "wiki/sources/pg-talk.md": "pg-talk",
    }
    assert import_folder(two_wings).changes == 0  # slugs are stable: nothing renamed, nothing re-imported


def test_bare_name_links_resolve_to_the_most_specific_note_and_ambiguity_is_reported(two_wings):
    summary = import_folder(two_wings)

    # Never itself while another fits; among the others, the one in its own wing is the most specific.
    assert target_of("entities/pgvector", "pgvector") == "entities/databases/pgvector"
    assert target_of("entities/databases/pgvector", "pgvector") == "entities/pgvector"
    assert target_of("pg-talk", "entities/pgvector") == "entities/pgvector"  # a qualified link names one note
    assert target_of("pg-talk", "pgvector") == "pgvector"  # ambiguous from another wing: the bare slug wins
    talk_links = {
        link.target_slug: link.model_dump() for link in note_detail(Note.objects.get(slug="pg-talk")).links_out
    }
    assert talk_links["pgvector"]["ambiguous"] == ["entities/databases/pgvector", "entities/pgvector", "pgvector"]
    assert talk_links["entities/pgvector"]["ambiguous"] == []
    assert any(
        line.startswith("wiki/sources/pg-talk.md: [[pgvector]] is ambiguous: resolved to pgvector")
        for line in summary.ambiguous_links
    )


def test_a_link_moves_to_a_more_specific_note_when_one_appears(tmp_path):
    write(tmp_path, "wiki/concepts/retry.md", "# Retry\n\nGeneric retries.\n")
    write(tmp_path, "wiki/ops/runbook.md", "# Runbook\n\nFollow [[retry]].\n")
    import_folder(tmp_path)
    assert target_of("runbook", "retry") == "retry"

    write(tmp_path, "wiki/ops/retry.md", "# Retry in ops\n\nHow ops retries.\n")
    import_folder(tmp_path)

    assert Note.objects.get(path="wiki/ops/retry.md").slug == "ops/retry"
    assert target_of("runbook", "retry") == "ops/retry"  # same wing beats the bare slug elsewhere


def test_a_wiki_note_keeps_the_bare_slug_over_a_raw_note_of_the_same_name(tmp_path):
    write(tmp_path, "raw/idea.md", "# Idea (draft)\n\nraw\n")
    write(tmp_path, "wiki/concepts/idea.md", "# Idea\n\nreviewed\n")

    import_folder(tmp_path)

    assert dict(Note.objects.values_list("path", "slug")) == {
        "wiki/concepts/idea.md": "idea",
        "raw/idea.md": "raw/idea",
    }


def test_a_moved_file_keeps_its_note(tmp_path):
    write(tmp_path, "wiki/concepts/gil.md", "# GIL\n\nbody\n")
    import_folder(tmp_path)
    note = Note.objects.get()
    (tmp_path / "wiki/concepts/gil.md").rename(tmp_path / "wiki/python.md")
    write(tmp_path, "wiki/python/gil.md", "# GIL\n\nbody\n")
    (tmp_path / "wiki/python.md").unlink()

    import_folder(tmp_path)

    moved = Note.objects.get(slug="gil")
    assert moved.pk == note.pk and moved.wing == "python" and Note.objects.count() == 1


def test_index_files_are_wing_and_hall_descriptions_not_notes_and_export_back(tmp_path):
    write(tmp_path, "wiki/_index.md", "---\ntitle: Team wiki\n---\nAll reviewed notes.\n")
    write(tmp_path, "wiki/concepts/_index.md", "---\ntitle: Concepts\n---\nIdeas.\n")
    write(tmp_path, "wiki/concepts/python/_index.md", "# Python\n\nThe language.\n")
    write(tmp_path, "wiki/entities/_index.md", "---\ntitle: Entities\n---\nThings we run.\n")
    write(tmp_path, "wiki/concepts/python/gil.md", "# GIL\n\nbody\n")

    summary = import_folder(tmp_path)

    assert summary.errors == [] and summary.added == 1 and summary.descriptions == 4
    assert list(Note.objects.values_list("slug", flat=True)) == ["gil"]
    places = {(d.wing, d.hall): d.title for d in AreaDescription.objects.all()}
    assert places == {
        ("", ""): "Team wiki",
        ("concepts", ""): "Concepts",
        ("concepts", "python"): "Python",
        ("entities", ""): "Entities",
    }
    assert import_folder(tmp_path).changes == 0

    out = tmp_path.parent / "exported"
    export_folder(out)
    assert (out / "wiki/concepts/python/_index.md").is_file() and (out / "wiki/_index.md").is_file()
    AreaDescription.objects.all().delete()
    assert import_folder(out).descriptions == 4
    assert {(d.wing, d.hall): d.title for d in AreaDescription.objects.all()} == places


def test_an_index_file_below_a_hall_is_reported_not_imported(tmp_path):
    write(tmp_path, "wiki/concepts/python/async/_index.md", "# Async\n")

    summary = import_folder(tmp_path)

    assert summary.errors and summary.errors[0][0] == "wiki/concepts/python/async/_index.md"
    assert "describes the wiki, a wing or a hall" in summary.errors[0][1]
    assert AreaDescription.objects.count() == 0 and Note.objects.count() == 0


def test_the_mirror_keeps_same_named_notes_and_index_files_without_churn(two_wings):
    write(two_wings, "wiki/entities/_index.md", "# Entities\n\nThings we run.\n")

    first = sync_mirror(two_wings)

    assert first.errors == [] and first.added == 4 and first.descriptions == 1
    assert not (two_wings / "wiki/entities/entities").exists()  # qualified slugs keep their file
    write(two_wings, "wiki/entities/_index.md", "# Entities\n\nThings we run, and pay for.\n")
    second = sync_mirror(two_wings)
    assert second.descriptions == 1 and "pay for" in AreaDescription.objects.get(wing="entities").body
    assert sync_mirror(two_wings).changes == 0


def test_a_note_written_through_the_service_with_a_taken_bare_name_still_mirrors(two_wings):
    sync_mirror(two_wings)
    do_write_raw_note(title="pgvector", body="A raw thought about pgvector.")

    summary = sync_mirror(two_wings)

    assert summary.errors == [] and summary.written == 1
    assert sync_mirror(two_wings).changes == 0
