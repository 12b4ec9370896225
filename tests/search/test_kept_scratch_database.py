"""A benchmark's notes stored once and copied after (`bench/load.py --keep-notes`): the kept database is filled
by the first run only, each run works on its own copy, and an interrupted fill keeps nothing."""

from __future__ import annotations

import os

import psycopg
import pytest
from django.db import connections

from brain.models import Note, NoteStatus
from brain.scratch import KEPT_PREFIX, ScratchDatabase
from tests.conftest import test_database_url as database_url

pytestmark = pytest.mark.django_db(transaction=True)


def database_names() -> set[str]:
    with psycopg.connect(database_url(), autocommit=True) as conn:
        return {row[0] for row in conn.execute("SELECT datname FROM pg_database")}


@pytest.fixture
def label():
    label = f"test_{os.getpid()}"
    yield label
    with psycopg.connect(database_url(), autocommit=True) as conn:
        for name in [n for n in database_names() if n.startswith(f"{KEPT_PREFIX}{label}_")]:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_the_first_run_fills_the_kept_database_and_later_runs_copy_it_without_filling(label):
    fills = []

    def fill():
        fills.append(1)
        Note.objects.create(slug="kept", title="Kept", body="stored once", status=NoteStatus.WIKI)

    with ScratchDatabase(kept=label, fill=fill) as first:
        assert first.filled
        Note.objects.create(slug="only-in-the-first-copy", title="Mine", body="a run's own write")
        assert Note.objects.count() == 2
    with ScratchDatabase(kept=label, fill=fill) as second:
        assert not second.filled
        assert list(Note.objects.values_list("slug", flat=True)) == ["kept"]  # a copy: the first run's write is gone
    assert fills == [1]
    kept = [name for name in database_names() if name.startswith(f"{KEPT_PREFIX}{label}_")]
    assert len(kept) == 1 and first.name not in database_names()
    assert connections["default"].settings_dict["NAME"] == first.original


def test_an_interrupted_fill_keeps_no_half_filled_database(label):
    def fill():
        Note.objects.create(slug="half", title="Half", body="then interrupted")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt), ScratchDatabase(kept=label, fill=fill):
        pass
    assert not [name for name in database_names() if name.startswith(f"{KEPT_PREFIX}{label}")]
    assert connections["default"].settings_dict["NAME"] != f"{KEPT_PREFIX}{label}"
