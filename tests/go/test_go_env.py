"""Go hyperguild variable names read as aliases of ours, and the Go hybrid-search rule.

The settings module reads the environment once per process, so the settings
themselves are checked in real `manage.py` child processes; the pure rules
are also checked in process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hyperguild.lib import env as env_module
from hyperguild.lib.env import GO_ALIASES, go_hybrid_rule

ROOT = Path(__file__).resolve().parents[2]
# An unreachable DSN: `manage.py check` and `shell -c` never connect.
GO_DSN = "postgresql://go:secret-pw@127.0.0.1:1/gobrain"
SHOW = (
    "import json; from django.conf import settings as s; print(json.dumps({k: getattr(s, k) for k in "
    "['BRAIN_DIR', 'BRAIN_SESSIONS_DIR', 'HYPERGUILD_PORT', 'HYPERGUILD_PUBLIC_URL', 'BRAIN_EMBEDDER', 'BRAIN_EMBED_URL']}"
    " | {'db': s.DATABASES['default']['NAME'], 'db_port': s.DATABASES['default']['PORT']}))"
)


def go_free_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """The test process's environment without any of the names these tests are about."""
    drop = {
        "DATABASE_URL",
        "BRAIN_DIR",
        "BRAIN_SESSIONS_DIR",
        "HYPERGUILD_PORT",
        "HYPERGUILD_PUBLIC_URL",
        "BRAIN_EMBEDDER",
        "BRAIN_EMBED_URL",
    } | {alias for aliases in GO_ALIASES.values() for alias in aliases}
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env["HYPERGUILD_DATA_DIR"] = str(tmp_path / "var")
    env.update(extra)
    return env


def manage(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def test_go_names_are_read_as_ours_with_one_start_up_line_each(tmp_path):
    env = go_free_env(
        tmp_path,
        BRAIN_PG_DSN=GO_DSN,
        BRAIN_EMBED_URL="http://127.0.0.1:11434",
        INGEST_BRAIN_DIR="/srv/brain",
        SUPERVISOR_SESSIONS_DIR="/srv/brain/sessions",
        INGEST_PORT="8081",
        INGEST_BASE_URL="http://brain.lan:8081",
    )

    completed = manage(env, "shell", "-c", SHOW)

    assert completed.returncode == 0, completed.stderr
    values = json.loads(completed.stdout.strip().splitlines()[-1])
    assert values["db"] == "gobrain" and values["db_port"] == 1
    assert values["BRAIN_DIR"] == "/srv/brain" and values["BRAIN_SESSIONS_DIR"] == "/srv/brain/sessions"
    assert values["HYPERGUILD_PORT"] == 8081 and values["HYPERGUILD_PUBLIC_URL"] == "http://brain.lan:8081"
    assert values["BRAIN_EMBEDDER"] == "ollama"  # the Go rule: DSN + embed URL = hybrid
    lines = [line for line in completed.stderr.splitlines() if "Go hyperguild name" in line]
    assert len(lines) == 5, completed.stderr
    assert any(
        "INGEST_BRAIN_DIR (Go hyperguild name) is read as BRAIN_DIR: set BRAIN_DIR=/srv/brain instead." in line
        for line in lines
    )
    assert any("BRAIN_PG_DSN (Go hyperguild name) is read as DATABASE_URL" in line for line in lines)
    assert "secret-pw" not in completed.stderr  # a password is never printed


def test_ours_win_when_both_names_are_set_and_a_second_go_port_is_reported(tmp_path):
    env = go_free_env(
        tmp_path,
        BRAIN_DIR="/ours",
        INGEST_BRAIN_DIR="/theirs",
        HYPERGUILD_PUBLIC_URL="http://ours",
        BRAIN_URL="http://theirs",
        INGEST_PORT="8081",
        ROUTING_PORT="8082",
        BRAIN_EMBEDDER="off",
        DATABASE_URL=GO_DSN,
    )

    completed = manage(env, "shell", "-c", SHOW)

    assert completed.returncode == 0, completed.stderr
    values = json.loads(completed.stdout.strip().splitlines()[-1])
    assert values["BRAIN_DIR"] == "/ours" and values["HYPERGUILD_PUBLIC_URL"] == "http://ours"
    assert values["HYPERGUILD_PORT"] == 8081  # two Go ports, one service: the first Go name set
    assert "INGEST_BRAIN_DIR (Go hyperguild name) is ignored: BRAIN_DIR is set and wins." in completed.stderr
    assert "BRAIN_URL (Go hyperguild name) is ignored: HYPERGUILD_PUBLIC_URL is set and wins." in completed.stderr
    assert (
        "ROUTING_PORT (Go hyperguild name) is ignored: HYPERGUILD_PORT already comes from another Go name"
        in completed.stderr
    )
    assert (
        "INGEST_PORT (Go hyperguild name) is read as HYPERGUILD_PORT: set HYPERGUILD_PORT=8081 instead."
        in completed.stderr
    )


def test_no_go_name_means_no_notice(monkeypatch):
    monkeypatch.setattr(env_module, "_alias_notices", {})
    for aliases in GO_ALIASES.values():
        for alias in aliases:
            monkeypatch.delenv(alias, raising=False)

    for name in GO_ALIASES:
        env_module.env_str(name)

    assert env_module.alias_notices() == []


@pytest.mark.parametrize(
    ("variables", "expected"),
    [
        ({"BRAIN_PG_DSN": GO_DSN, "BRAIN_EMBED_URL": "http://127.0.0.1:11434"}, ("ollama", None)),
        ({"DATABASE_URL": GO_DSN, "BRAIN_EMBED_URL": "http://127.0.0.1:11434"}, ("ollama", None)),
        ({"BRAIN_PG_DSN": GO_DSN}, (None, "BRAIN_PG_DSN is set without BRAIN_EMBED_URL")),
        (
            {"BRAIN_EMBED_URL": "http://127.0.0.1:11434"},
            (None, "BRAIN_EMBED_URL=http://127.0.0.1:11434 is set without BRAIN_PG_DSN"),
        ),
        ({"BRAIN_PG_DSN": GO_DSN, "BRAIN_EMBEDDER": "local"}, (None, None)),  # an explicit choice of ours wins
        ({"BRAIN_EMBED_URL": "http://x", "BRAIN_EMBEDDER": "ollama"}, (None, None)),
        ({"DATABASE_URL": GO_DSN}, (None, None)),
        ({}, (None, None)),
    ],
)
def test_the_go_hybrid_rule(variables, expected):
    embedder, problem = go_hybrid_rule(variables)

    assert embedder == expected[0]
    if expected[1] is None:
        assert problem is None
    else:
        assert problem is not None and problem.startswith(expected[1])


def test_check_explains_a_half_configured_go_setup(tmp_path):
    env = go_free_env(tmp_path, BRAIN_PG_DSN=GO_DSN, SUPERVISOR_SESSIONS_DIR=str(tmp_path))

    completed = manage(env, "check")

    assert completed.returncode != 0
    assert "hyperguild.E060" in completed.stderr
    assert "BRAIN_PG_DSN is set without BRAIN_EMBED_URL" in completed.stderr
    assert "Set BRAIN_EMBED_URL to the Ollama base URL" in completed.stderr
    assert "hyperguild.W061" in completed.stderr and "Set BRAIN_DIR (INGEST_BRAIN_DIR" in completed.stderr
    assert "BRAIN_PG_DSN (Go hyperguild name) is read as DATABASE_URL" in completed.stderr


def test_check_passes_a_complete_go_setup(tmp_path):
    env = go_free_env(
        tmp_path,
        BRAIN_PG_DSN=GO_DSN,
        BRAIN_EMBED_URL="http://127.0.0.1:11434",
        INGEST_BRAIN_DIR=str(tmp_path),
        SUPERVISOR_SESSIONS_DIR=str(tmp_path / "sessions"),
    )

    completed = manage(env, "check")

    assert completed.returncode == 0, completed.stderr
    assert "hyperguild.E060" not in completed.stderr and "hyperguild.W061" not in completed.stderr


def test_the_alias_reader_prefers_ours(monkeypatch):
    monkeypatch.setattr(env_module, "_alias_notices", {})
    monkeypatch.setenv("INGEST_BRAIN_DIR", "/go")
    monkeypatch.delenv("BRAIN_DIR", raising=False)
    assert env_module.env_str("BRAIN_DIR") == "/go"
    monkeypatch.setenv("BRAIN_DIR", "/ours")
    assert env_module.env_str("BRAIN_DIR") == "/ours"
    assert env_module.alias_notices() == [
        "INGEST_BRAIN_DIR (Go hyperguild name) is ignored: BRAIN_DIR is set and wins."
    ]
