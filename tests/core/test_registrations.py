"""The core names no app: what it shows and runs comes from what the apps register."""

from __future__ import annotations

import os

import pytest
from django_q.models import Schedule

from hyperguild.actions import do_ensure_schedules
from hyperguild.checks import public_bind_problem
from hyperguild.mcp.registry import all_endpoints, token_settings
from supervisor.executor import child_environment


def test_the_apps_register_the_three_endpoints_in_installed_apps_order():
    assert [(e.name, e.token_setting) for e in all_endpoints()] == [
        ("brain", "BRAIN_MCP_TOKEN"),
        ("supervisor", "SUPERVISOR_MCP_TOKEN"),
        ("routing", "ROUTING_MCP_TOKEN"),
    ]


def test_a_public_bind_names_every_registered_token_that_is_empty(settings):
    settings.HYPERGUILD_ALLOW_NO_AUTH = False
    settings.BRAIN_MCP_TOKEN, settings.SUPERVISOR_MCP_TOKEN, settings.ROUTING_MCP_TOKEN = "b", "", ""
    problem = public_bind_problem("0.0.0.0")
    assert "SUPERVISOR_MCP_TOKEN, ROUTING_MCP_TOKEN is empty" in problem
    assert "BRAIN_MCP_TOKEN" not in problem
    settings.SUPERVISOR_MCP_TOKEN, settings.ROUTING_MCP_TOKEN = "s", "r"
    assert public_bind_problem("0.0.0.0") is None


def test_workers_never_see_a_registered_endpoint_token(monkeypatch, settings):
    for name in token_settings():
        monkeypatch.setenv(name, "secret")
    monkeypatch.setenv("SOME_PROJECT_VARIABLE", "kept")
    settings.SUPERVISOR_WORKER_ENV_ALLOW = ["SOME_PROJECT_*", "*_MCP_TOKEN"]  # even an allow-list that asks for them
    env = child_environment(worker=True)
    assert not set(token_settings()) & set(env)
    assert env["SOME_PROJECT_VARIABLE"] == "kept"
    assert os.environ["BRAIN_MCP_TOKEN"] == "secret"  # the service itself still has it


@pytest.mark.django_db
def test_ensure_schedules_installs_what_each_app_registered(settings, tmp_path):
    settings.BRAIN_DIR = str(tmp_path)
    names = do_ensure_schedules()
    assert {"hyperguild-heartbeat", "brain-mirror", "sessions-trainer-extract", "supervisor-reaper"} <= set(names)
    assert set(Schedule.objects.values_list("name", flat=True)) == set(names)
    assert do_ensure_schedules() == names  # a second run changes nothing
    assert Schedule.objects.count() == len(names)
