"""Existing data migrates (issue 38): sessions link to projects by their project_root and the old project text,
and notes follow their session's project (or the one their frontmatter names)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("agent_sessions", "0005_role_permissions"), ("brain", "0011_note_writers")]
AFTER = [("agent_sessions", "0006_session_project_link"), ("brain", "0012_truth_projects_anchors_supersession")]


def migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


@pytest.fixture(autouse=True)
def _back_to_the_newest_schema():
    """The test walks the schema back; whatever happens, the next test (on this worker) finds every migration
    applied, not the schema as of AFTER (which lacks every later migration's columns)."""
    yield
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())


def test_sessions_and_notes_are_linked_to_projects_made_from_what_they_said():
    old = migrate(BEFORE)
    Session = old.get_model("agent_sessions", "AgentSession")
    Note = old.get_model("brain", "Note")
    Session.objects.create(external_id="s-1", project="ledgerly", project_root="/home/ana/src/ledgerly")
    Session.objects.create(external_id="s-2", project="", project_root="/home/ana/src/ledgerly")
    Session.objects.create(external_id="s-3", project="billing tools", project_root="")
    Note.objects.create(slug="from-session", title="t", session_id="s-3")
    Note.objects.create(slug="from-frontmatter", title="t", frontmatter={"project": "ledgerly"})
    Note.objects.create(slug="loose", title="t")

    new = migrate(AFTER)

    Session = new.get_model("agent_sessions", "AgentSession")
    Note = new.get_model("brain", "Note")
    Project = new.get_model("brain", "Project")
    assert sorted(Project.objects.values_list("name", flat=True)) == ["billing-tools", "ledgerly"]
    assert Project.objects.get(name="ledgerly").folders == ["/home/ana/src/ledgerly"]
    linked = dict(Session.objects.values_list("external_id", "project__name"))
    assert linked == {"s-1": "ledgerly", "s-2": "ledgerly", "s-3": "billing-tools"}
    notes = dict(Note.objects.values_list("slug", "project__name"))
    assert notes == {"from-session": "billing-tools", "from-frontmatter": "ledgerly", "loose": None}
