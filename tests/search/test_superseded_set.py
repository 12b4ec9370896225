"""Default search leaves superseded notes out without asking the database for them on every query."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from brain.actions import do_ingest_note, do_supersede_note, do_undo_revision
from brain.search import search

pytestmark = pytest.mark.django_db

SUPERSEDED_QUERY = '"superseded_by_id" IS NOT NULL'


def asked_for_superseded(query: str) -> tuple[list[str], bool]:
    with CaptureQueriesContext(connection) as queries:
        slugs = [hit.slug for hit in search(query, limit=10).hits]
    return slugs, any(SUPERSEDED_QUERY in q["sql"] for q in queries.captured_queries)


def test_the_superseded_set_is_read_once_per_corpus_version_and_a_supersession_or_its_undo_shows_at_once():
    old = do_ingest_note(title="CSV export", body="Export the ledger as CSV from the reports page.", wing="concepts")
    new = do_ingest_note(title="Monthly reports", body="Reports replace the CSV export of the ledger.", wing="concepts")

    assert asked_for_superseded("CSV export") == ([old.slug, new.slug], True)
    assert asked_for_superseded("ledger export") == ([old.slug, new.slug], False)  # same corpus: not asked again

    do_supersede_note(old, new, reason="the export was removed", user=None)
    slugs, asked = asked_for_superseded("CSV export")
    assert slugs == [new.slug] and asked  # the write made a new corpus version: read again, the old note gone
    assert asked_for_superseded("CSV export") == ([new.slug], False)

    old.refresh_from_db()
    do_undo_revision(old.revisions.order_by("-id").first().group, user=None)
    assert asked_for_superseded("CSV export")[0] == [old.slug, new.slug]
