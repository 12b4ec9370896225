"""Issue 49: the core's doors reach people, the ledger and observability only through what they hand down.

Started, the apps have handed their functions to `hyperguild.providers`; with none handed down (a core
without the people app), a door refuses with an error rather than opening, while the ledger's and
observability's parts are simply left out.
"""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import RequestFactory

from hyperguild import providers
from ledger.usage import add_usage
from observability.metrics import observe_mcp
from people.auth import authenticate_bearer
from people.permissions import permission_refusal


def test_the_apps_hand_their_checks_down_at_start_up():
    handed = providers._providers
    assert handed.authenticate_bearer is authenticate_bearer
    assert handed.permission_refusal is permission_refusal
    assert handed.add_usage is add_usage
    assert handed.observe_mcp is observe_mcp


def test_without_the_people_app_every_door_stays_shut(monkeypatch):
    monkeypatch.setattr(providers, "_providers", providers._Providers())
    request = RequestFactory().post("/mcp/brain", HTTP_AUTHORIZATION="Bearer anything")
    with pytest.raises(ImproperlyConfigured, match="people app"):
        providers.authenticate_bearer(request, "brain:read")
    with pytest.raises(ImproperlyConfigured, match="people app"):
        providers.permission_refusal(None, "brain:read")


def test_without_the_ledger_or_observability_a_call_is_answered_unpriced_and_uncounted(monkeypatch):
    monkeypatch.setattr(providers, "_providers", providers._Providers())
    result = {"answer": "42"}
    providers.add_usage(result, [1, 2], None)
    assert result == {"answer": "42"}
    providers.observe_mcp("brain", "tools/call", "brain_query", "ok", 0.01)
    with providers.mcp_span("brain", {"method": "ping"}, person_id=None, revision=None):
        pass
    ran = []
    providers.carry_context(lambda: ran.append(1))()
    assert ran == [1]
