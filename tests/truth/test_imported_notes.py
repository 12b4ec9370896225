"""Notes brought in by a folder import (inserted a batch at a time, issue 34) get their anchors and truth state
as a single write gives them (issue 38)."""

from __future__ import annotations

import pytest

from brain.actions import do_ingest_note
from brain.folder import import_folder
from brain.models import Anchor, Note
from brain.truth import verification_dict

pytestmark = pytest.mark.django_db


def test_a_batch_imported_note_cites_what_a_single_write_would(tmp_path):
    folder = tmp_path / "notes"
    folder.mkdir()
    body = "Workers start in `run_worker` of `supervisor/executor.py`."
    (folder / "workers.md").write_text(f"# Workers\n\n{body}\n")
    (folder / "plain.md").write_text("# Plain\n\nNothing from the code here.\n")

    summary = import_folder(folder)

    assert summary.added == 2
    imported = Note.objects.get(title="Workers")
    written = do_ingest_note(title="Workers too", body=body, wing="concepts", hall="python")
    kinds = lambda note: sorted((a.kind, a.value) for a in Anchor.objects.filter(note=note))  # noqa: E731
    assert kinds(imported) == kinds(written) and kinds(imported)
    assert verification_dict(imported)["label"] == verification_dict(Note.objects.get(pk=written.pk))["label"]
    assert verification_dict(Note.objects.get(title="Plain"))["state"] == "unverified"
