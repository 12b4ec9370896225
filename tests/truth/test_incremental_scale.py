"""Acceptance 5 of issue 38: with 5,000 anchored notes, a commit touching one file re-checks only that file's notes."""

from __future__ import annotations

import pytest
from django.utils import timezone

from brain.actions import do_add_project, do_sync_project
from brain.models import Anchor, Note, NoteStatus
from tests.truth.conftest import git, make_repo

pytestmark = pytest.mark.django_db

NOTES, FILES = 5000, 100


def test_a_one_file_commit_re_checks_only_the_notes_anchored_to_that_file(code_root):
    files = {f"mod/file_{i}.py": f"def func_{i}(value):\n    return value + {i}\n" for i in range(FILES)}
    repo = make_repo(code_root, files)
    project = do_add_project(name="scale", repo=str(repo))
    # Built in bulk (5,000 writes through the action would only slow the test); the first sync extracts and
    # checks their anchors exactly as it does for notes that predate a project.
    Note.objects.bulk_create(
        [
            Note(
                slug=f"n-{k}",
                title=f"Note {k}",
                body=f"`mod/file_{k % FILES}.py` defines `func_{k % FILES}`.",
                status=NoteStatus.WIKI,
                wing="concepts",
                project=project,
            )
            for k in range(NOTES)
        ],
        batch_size=1000,
    )
    project.last_synced_commit = ""
    project.save(update_fields=["last_synced_commit"])
    first = do_sync_project(project)
    assert (first.notes_rechecked, first.anchors_rechecked) == (NOTES, 2 * NOTES)
    assert Note.objects.filter(verification_state="verified").count() == NOTES

    touched = repo / "mod/file_7.py"
    touched.write_text(touched.read_text().replace("def func_7(", "def func_seven("))
    git(repo, "commit", "-qam", "rename func_7")
    before = timezone.now()

    outcome = do_sync_project(project)

    anchored_to_it = Note.objects.filter(anchors__path="mod/file_7.py").distinct()
    assert anchored_to_it.count() == NOTES // FILES
    assert outcome.changed_files == 1
    assert outcome.notes_rechecked == anchored_to_it.count()
    assert outcome.anchors_rechecked == Anchor.objects.filter(path="mod/file_7.py").count() == 2 * NOTES // FILES
    assert Anchor.objects.filter(checked_at__gte=before).exclude(path="mod/file_7.py").count() == 0
    assert set(Note.objects.filter(verification_state="stale").values_list("pk", flat=True)) == set(
        anchored_to_it.values_list("pk", flat=True)
    )
    assert set(Note.objects.filter(verification_state="verified").values_list("verified_commit", flat=True)) == {
        outcome.new
    }
