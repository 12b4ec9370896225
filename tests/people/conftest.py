"""People: accounts, personal tokens (made with the real management command) and a live server."""

from __future__ import annotations

import importlib
import io

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management import call_command

from hyperguild.lib.grants import grant_permissions

SERVICE_TOKENS = {"BRAIN_MCP_TOKEN": "brain-env", "SUPERVISOR_MCP_TOKEN": "sup-env", "ROUTING_MCP_TOKEN": "route-env"}


@pytest.fixture
def live(asgi_server, settings, transactional_db):
    """The live server with every environment token set (so nothing is open without a token)."""
    from brain import bm25

    for name, value in SERVICE_TOKENS.items():
        setattr(settings, name, value)
    settings.BRAIN_EMBEDDER = "off"
    bm25.reset()
    yield asgi_server
    bm25.reset()


ROLE_MIGRATIONS = [
    ("brain", "brain.migrations.0009_role_permissions"),
    ("brain", "brain.migrations.0011_note_writers"),
    ("agent_sessions", "sessions.migrations.0005_role_permissions"),
    ("supervisor", "supervisor.migrations.0007_role_permissions"),
    ("supervisor", "supervisor.migrations.0008_operator_role"),
    ("hyperguild", "hyperguild.migrations.0006_operator_role"),
    ("brain", "brain.migrations.0014_member_role"),
    ("agent_sessions", "sessions.migrations.0009_member_role"),
    ("supervisor", "supervisor.migrations.0010_member_role"),
]


def restore_roles() -> None:
    """The groups the migrations made, as they made them: a transactional test's flush empties every table."""
    from django.apps import apps

    for label, module in ROLE_MIGRATIONS:
        grant_permissions(apps, label, importlib.import_module(module).GRANTS)


def make_person(username: str, *roles: str, password: str = "pw-for-tests-123", **fields):
    if roles and not Group.objects.filter(name__in=roles).count() == len(roles):
        restore_roles()
    user = get_user_model().objects.create_user(username, password=password, **fields)
    for role in roles:
        user.groups.add(Group.objects.get(name=role))
    return user


def token_for(username: str, *scopes: str, extra: tuple[str, ...] = ()) -> str:
    """`manage.py token create USERNAME --scope …` as an operator runs it; the token is its last line."""
    out = io.StringIO()
    args = ["token", "create", username, *[arg for scope in scopes for arg in ("--scope", scope)], *extra]
    call_command(*args, stdout=out)
    return out.getvalue().strip().splitlines()[-1]


def bearer(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}
