"""do_log_entry: per-session numbering, idempotency and append-only entries."""

from __future__ import annotations

import pytest
from django.db import DatabaseError, transaction

from sessions.actions import do_log_entry
from sessions.models import AgentSession, SessionEntry

pytestmark = pytest.mark.django_db


def test_it_numbers_entries_per_session_starting_at_one():
    first, created = do_log_entry("s-1", kind="note", message="hello", project="p", client={"name": "cc"})
    second, _ = do_log_entry("s-1", kind="note")
    other, _ = do_log_entry("s-2", kind="note")
    assert created and (first.seq, second.seq, other.seq) == (1, 2, 1)
    session = AgentSession.objects.get(external_id="s-1")
    assert session.last_seq == 2 and session.project.name == "p" and session.client == {"name": "cc"}


def test_a_retried_call_with_the_same_idempotency_key_returns_the_first_entry():
    first, created = do_log_entry("s-1", kind="note", message="once", idempotency_key="k1")
    again, created_again = do_log_entry("s-1", kind="note", message="twice", idempotency_key="k1")
    assert created and not created_again and again.pk == first.pk and again.message == "once"
    assert SessionEntry.objects.count() == 1
    assert AgentSession.objects.get(external_id="s-1").last_seq == 1


def test_later_metadata_does_not_overwrite_what_the_first_call_said():
    do_log_entry("s-1", kind="note", project="first")
    do_log_entry("s-1", kind="note", project="second", project_root="/srv/x")
    session = AgentSession.objects.get(external_id="s-1")
    assert (session.project.name, session.project_root) == ("first", "/srv/x")


def test_the_database_refuses_to_edit_an_entry():
    entry, _ = do_log_entry("s-1", kind="note", message="original")
    with pytest.raises(DatabaseError), transaction.atomic():
        SessionEntry.objects.filter(pk=entry.pk).update(message="changed")
    with pytest.raises(ValueError):
        entry.save()
    assert SessionEntry.objects.get(pk=entry.pk).message == "original"
