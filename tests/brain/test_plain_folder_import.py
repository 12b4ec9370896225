"""brain_import of a folder of markdown that is not in the brain layout (no wiki/<wing>/<hall>/, no raw/)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from brain.folder import import_folder
from brain.models import Note


def plain_folder(root: Path) -> Path:
    """Two pages and a sub-folder, as a team's docs/ folder is."""
    root.mkdir(parents=True)
    (root / "install.md").write_text("# Installing\n\nRun `make run`.\n", encoding="utf-8")
    (root / "README.md").write_text("# Our product\n\nSee [[install]].\n", encoding="utf-8")
    (root / "guides").mkdir()
    (root / "guides" / "backups.md").write_text("# Backups\n\nNightly `pg_dump`.\n", encoding="utf-8")
    return root


def run_import(*args: str) -> str:
    out = io.StringIO()
    call_command("brain_import", *args, "--no-progress", stdout=out, stderr=io.StringIO())
    return out.getvalue()


def places() -> set[tuple[str, str, str, str, str]]:
    return set(Note.objects.values_list("slug", "status", "wing", "hall", "path"))


@pytest.mark.django_db
def test_a_plain_folder_becomes_wiki_notes_under_a_wing_named_after_the_folder(tmp_path):
    folder = plain_folder(tmp_path / "Team Docs")

    printed = run_import(str(folder))

    assert places() == {
        ("install", "wiki", "team-docs", "", "wiki/team-docs/install.md"),
        ("readme", "wiki", "team-docs", "", "wiki/team-docs/README.md"),
        # With no hall given, a sub-folder is the hall, as in the brain layout.
        ("backups", "wiki", "team-docs", "guides", "wiki/team-docs/guides/backups.md"),
    }
    assert Note.objects.get(slug="install").title == "Installing"
    assert "a plain folder (no wiki/ or raw/): 3 file(s) imported as wiki notes under wing 'team-docs'" in printed
    assert "added 3," in printed
    # The link between two pages of the folder resolves.
    assert list(Note.objects.get(slug="readme").links_out.values_list("target__slug", flat=True)) == ["install"]


@pytest.mark.django_db
def test_importing_the_plain_folder_again_changes_nothing(tmp_path):
    folder = plain_folder(tmp_path / "docs")
    run_import(str(folder))

    printed = run_import(str(folder))

    assert "added 0, updated 0, unchanged 3" in printed
    assert "3 file(s) imported as wiki notes under wing 'docs'" in printed


@pytest.mark.django_db
def test_wing_and_hall_on_the_command_line_place_the_notes(tmp_path):
    folder = plain_folder(tmp_path / "docs")

    printed = run_import(str(folder), "--wing", "Product", "--hall", "manuals")

    assert {(wing, hall) for _, _, wing, hall, _ in places()} == {("product", "manuals")}
    # Below a hall, folders stay in the slug, as in the brain layout.
    assert Note.objects.get(slug="guides/backups").path == "wiki/product/manuals/guides/backups.md"
    assert "imported as wiki notes under wing 'product', hall 'manuals'" in printed


@pytest.mark.django_db
def test_raw_sends_the_files_to_the_review_queue(tmp_path):
    folder = plain_folder(tmp_path / "docs")

    printed = run_import(str(folder), "--raw")

    assert places() == {
        ("install", "raw", "", "", "raw/install.md"),
        ("readme", "raw", "", "", "raw/README.md"),
        ("guides/backups", "raw", "", "", "raw/guides/backups.md"),
    }
    assert "3 file(s) imported as raw notes waiting for review (raw/)" in printed


@pytest.mark.django_db
def test_a_folder_with_no_markdown_is_refused_with_the_expected_layout_and_nothing_is_written(tmp_path):
    (tmp_path / "notes.txt").write_text("not markdown", encoding="utf-8")

    with pytest.raises(CommandError) as refused:
        run_import(str(tmp_path))

    message = str(refused.value)
    assert "holds no .md file" in message and "nothing to import" in message
    assert "wiki/<wing>/<hall>/<name>.md" in message and "raw/<name>.md" in message
    assert "--wing" in message and "--raw" in message
    assert Note.objects.count() == 0


@pytest.mark.django_db
def test_place_options_are_refused_for_a_brain_folder(tmp_path):
    (tmp_path / "wiki" / "concepts").mkdir(parents=True)
    (tmp_path / "wiki" / "concepts" / "gil.md").write_text("# GIL\n\nOne lock.\n", encoding="utf-8")

    with pytest.raises(CommandError, match="is a brain folder"):
        run_import(str(tmp_path), "--wing", "elsewhere")
    with pytest.raises(CommandError, match="--raw notes wait for review"):
        run_import(str(tmp_path / "wiki"), "--raw", "--wing", "x")
    assert Note.objects.count() == 0


@pytest.mark.django_db
def test_a_brain_folder_names_the_markdown_it_leaves_out(tmp_path):
    (tmp_path / "raw").mkdir()
    (tmp_path / "raw" / "idea.md").write_text("# Idea\n\nText.\n", encoding="utf-8")
    (tmp_path / "README.md").write_text("# About this brain\n", encoding="utf-8")

    printed = run_import(str(tmp_path))

    assert [slug for slug, *_ in places()] == ["idea"]
    assert "1 .md file(s) outside wiki/ and raw/ were not imported" in printed and "README.md" in printed
    assert import_folder(tmp_path).ignored == ["README.md"]


@pytest.mark.django_db
def test_a_plain_folders_titles_come_from_the_top_level_heading_outside_code(tmp_path):
    """Issue 45: a `# comment` in a python block titled 5 of 23 notes of a real project ("Using the top-level API:")."""
    root = tmp_path / "docs"
    (root / "advanced").mkdir(parents=True)
    (root / "quickstart.md").write_text(
        "Using the top-level API:\n\n```python\n# Using the top-level API:\nimport shop\n```\n\n# Quickstart\n\nText.\n",
        encoding="utf-8",
    )
    (root / "advanced" / "timeouts.md").write_text(
        "Intro.\n\n```python\n# a comment, not a heading\n```\n\n## Setting a default\n\nText.\n", encoding="utf-8"
    )
    (root / "front.md").write_text(
        "---\ntitle: From the front matter\n---\n\n## A section\n\nText.\n", encoding="utf-8"
    )
    (root / "both.md").write_text("---\ntitle: Nav label\n---\n\n# The page itself\n\nText.\n", encoding="utf-8")
    (root / "tilde.md").write_text(
        "~~~\n# inside tildes\n~~~\n\nSetext title\n============\n\nText.\n", encoding="utf-8"
    )

    run_import(str(root))

    titles = dict(Note.objects.values_list("slug", "title"))
    assert titles == {
        "quickstart": "Quickstart",
        "timeouts": "Timeouts",  # no `#` heading outside the code, no front matter: the file name
        "front": "From the front matter",  # a `##` section heading is not the note's title
        "both": "The page itself",
        "tilde": "Setext title",
    }, titles
