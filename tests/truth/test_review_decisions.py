"""Issue 38, the reviewer's side without a browser: "supersedes it" on promote, and bad input writes nothing."""

from __future__ import annotations

import pytest

from brain.actions import do_ingest_note, do_undo_revision, do_write_raw_note
from brain.models import Note, NoteRevision
from tests.people.conftest import make_person

pytestmark = pytest.mark.django_db


def test_a_raw_note_promoted_as_superseding_a_wiki_note_takes_its_place_and_one_undo_restores_both(client):
    old = do_ingest_note(title="Deploys", body="Deploy with fabric on Fridays.", wing="concepts", hall="ops")
    new = do_write_raw_note(title="Deploys", body="Deploy with the pipeline, any day but Friday.")
    rita = make_person("rita", "reviewer")
    client.force_login(rita)

    answer = client.post(f"/review/{new.pk}/supersedes/", {"old": old.slug, "reason": "we moved to the pipeline"})

    assert answer.status_code == 302
    new.refresh_from_db()
    old.refresh_from_db()
    assert (new.status, new.wing, new.hall) == ("wiki", "concepts", "ops")
    assert old.superseded_by == new and old.superseded_reason == "we moved to the pipeline"
    group = NoteRevision.objects.filter(note=old).order_by("-id").first().group
    assert set(NoteRevision.objects.filter(group=group).values_list("action", flat=True)) == {"promote", "supersede"}

    do_undo_revision(group, user=rita)
    new.refresh_from_db()
    old.refresh_from_db()
    assert new.status == "raw" and old.superseded_by_id is None


def test_superseding_needs_the_reviewer_role_a_known_successor_and_a_reason(client):
    old = do_ingest_note(title="Deploys", body="Deploy with fabric.", wing="concepts")
    new = do_ingest_note(title="Pipeline", body="Deploy with the pipeline.", wing="concepts")
    client.force_login(make_person("vic"))
    assert client.post(f"/review/{old.pk}/supersede/", {"by": new.slug, "reason": "x"}).status_code == 403
    client.force_login(make_person("rita", "reviewer"))
    client.post(f"/review/{old.pk}/supersede/", {"by": "no-such-note", "reason": "x"})
    client.post(f"/review/{old.pk}/supersede/", {"by": new.slug, "reason": "  "})
    old.refresh_from_db()
    assert old.superseded_by_id is None and not NoteRevision.objects.filter(note=old, action="supersede").exists()
    client.post(f"/review/{old.pk}/supersede/", {"by": new.slug, "reason": "the pipeline replaced fabric"})
    assert Note.objects.get(pk=old.pk).superseded_by_id == new.pk


def test_the_projects_page_shows_each_projects_head_and_counts_or_why_it_cannot_be_read(client, code_root, tmp_path):
    from tests.truth.conftest import add_project, make_repo, write_notes

    add_project("ledgerly", str(make_repo(code_root)))
    write_notes()
    add_project("outside", str(make_repo(tmp_path / "elsewhere")))
    client.force_login(make_person("vic"))

    page = client.get("/review/projects/").content.decode()

    ledgerly = page.split('data-project="ledgerly"')[1].split("</tr>")[0]
    assert "<td>10</td>" in ledgerly and "cannot be read" not in ledgerly  # ten verified notes
    outside = page.split('data-project="outside"')[1].split("</tr>")[0]
    assert "cannot be read" in outside and "outside SUPERVISOR_ALLOWED_ROOTS" in outside
