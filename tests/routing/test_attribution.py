"""A routed call made with a person's token names that person on every routing entry it writes."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from supervisor.models import RoutingEntry
from tests.conftest import call_tool
from tests.fakes.openai import Reply
from tests.people.conftest import make_person
from tests.routing.conftest import AUTH, FAST, GOOD_REVIEW, THINKING, seed_history

pytestmark = pytest.mark.django_db(transaction=True)


def test_routing_entries_name_the_person_whose_token_asked(gateway, project, asgi_server):
    rosa = make_person("rosa", "operator")  # routing:run is the operator role's (issue 35)
    out = io.StringIO()
    call_command("token", "create", "rosa", "--scope", "routing:run", stdout=out)
    token = out.getvalue().strip().splitlines()[-1]
    seed_history("review", 0.95)
    gateway.on(FAST, lambda request: Reply.text("not json at all"))  # the fast model fails: a fail-open retry
    gateway.on(THINKING, lambda request: Reply.json(GOOD_REVIEW))
    arguments = {"project_root": str(project), "paths": ["app.py"], "session_id": "s-rosa"}

    result = call_tool(f"{asgi_server}/mcp/routing", "review", arguments, headers={"Authorization": f"Bearer {token}"})

    assert result["isError"] is False, result
    entries = list(RoutingEntry.objects.filter(session_id="s-rosa").order_by("id"))
    assert [entry.model for entry in entries] == [FAST, THINKING]
    assert all(entry.requested_by == rosa for entry in entries)
    # The service token names no one.
    call_tool(f"{asgi_server}/mcp/routing", "review", {**arguments, "session_id": "s-service"}, headers=AUTH)
    assert {entry.requested_by for entry in RoutingEntry.objects.filter(session_id="s-service")} == {None}
