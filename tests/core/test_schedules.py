"""Schedules are installed by `migrate` and `manage.py setup`, not only by `make run`."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django_q.models import Schedule

WANTED = {"hyperguild-heartbeat", "brain-index-prune", "sessions-trainer-extract"}


@pytest.mark.django_db
def test_migrate_installs_the_schedules_a_separately_started_qcluster_needs():
    Schedule.objects.all().delete()
    call_command("migrate", interactive=False, verbosity=0)
    assert WANTED <= set(Schedule.objects.values_list("name", flat=True))


@pytest.mark.django_db
def test_setup_installs_the_schedules_once_however_often_it_runs(settings):
    settings.BRAIN_EMBEDDER = "ollama"
    Schedule.objects.all().delete()
    out = StringIO()
    call_command("setup", "--no-admin", stdout=out)
    call_command("setup", "--no-admin", stdout=StringIO())
    names = list(Schedule.objects.values_list("name", flat=True))
    assert WANTED | {"brain-embeddings"} <= set(names)
    assert len(names) == len(set(names))
    assert "setup done" in out.getvalue()
