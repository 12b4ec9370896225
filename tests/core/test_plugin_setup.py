"""`manage.py plugin_setup`: the plugin's lines for this server, and which token the plugin needs."""

from __future__ import annotations

import json
import subprocess
from io import StringIO

import pytest
from django.core.management import CommandError, call_command


def run(**options) -> str:
    out = StringIO()
    call_command("plugin_setup", stdout=out, **options)
    return out.getvalue()


def test_it_prints_the_two_plugin_lines_for_this_checkout_and_the_user_scope_lines(settings):
    settings.BRAIN_MCP_TOKEN = settings.SUPERVISOR_MCP_TOKEN = settings.ROUTING_MCP_TOKEN = ""
    output = run(url="http://10.0.0.5:8000/")
    assert f"claude plugin marketplace add {settings.BASE_DIR / 'claude-plugin'}\n" in output
    assert "claude plugin install hyperguild@hyperguild\n" in output
    assert "export HYPERGUILD_URL=http://10.0.0.5:8000\n" in output
    assert "or leave it empty" in output
    assert "--scope sessions:write" in output and "/tokens/" in output
    assert "claude mcp add --scope user --transport http hyperguild-brain http://10.0.0.5:8000/mcp/brain\n" in output
    assert "Authorization" not in output


def test_one_token_for_all_is_named_and_never_printed(settings):
    settings.BRAIN_MCP_TOKEN = settings.SUPERVISOR_MCP_TOKEN = settings.ROUTING_MCP_TOKEN = "shared-secret-1"
    output = run()
    assert "shared-secret-1" not in output
    assert "the value of BRAIN_MCP_TOKEN, SUPERVISOR_MCP_TOKEN, ROUTING_MCP_TOKEN (all the same here)" in output
    assert '--header "Authorization: Bearer $BRAIN_MCP_TOKEN"' in output
    assert f"export HYPERGUILD_URL=http://127.0.0.1:{settings.HYPERGUILD_PORT}" in output


def test_different_endpoint_tokens_are_pointed_out(settings):
    settings.BRAIN_MCP_TOKEN, settings.SUPERVISOR_MCP_TOKEN, settings.ROUTING_MCP_TOKEN = "a-secret", "b-secret", ""
    output = run()
    assert (
        "differ here, so none of them opens every endpoint and the hooks (the hooks use BRAIN_MCP_TOKEN's): give them one value"
        in output
    )
    assert "a-secret" not in output and "b-secret" not in output


def test_the_default_url_follows_the_public_url(settings):
    settings.HYPERGUILD_PUBLIC_URL = "https://hg.example.com"
    # The --url default is read when the parser is built, i.e. on each call_command.
    assert "export HYPERGUILD_URL=https://hg.example.com\n" in run()


def test_it_shows_where_the_spool_is_and_how_to_flush_or_clear_it(settings, tmp_path):
    output = run(url="http://10.0.0.5:8000/")
    assert "~/.hyperguild/spool/http___10.0.0.5_8000.jsonl" in output
    manifest = json.loads(
        (settings.BASE_DIR / "claude-plugin" / "hyperguild" / ".claude-plugin" / "plugin.json").read_text()
    )
    script = f"~/.claude/plugins/cache/hyperguild/hyperguild/{manifest['version']}/hooks/hyperguild-hook"
    for command in ("status", "flush", "clear"):
        assert f"    sh {script} {command}" in output

    # The file named is the one the hook script keeps for that URL.
    hook = settings.BASE_DIR / "claude-plugin" / "hyperguild" / "hooks" / "hyperguild-hook"
    status = subprocess.run(
        ["sh", str(hook), "status"],
        capture_output=True,
        text=True,
        timeout=30,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "HYPERGUILD_URL": "http://10.0.0.5:8000/"},
    )
    assert f"{tmp_path}/.hyperguild/spool/http___10.0.0.5_8000.jsonl" in status.stdout


@pytest.mark.django_db
def test_it_asks_only_for_the_scopes_the_persons_role_allows(settings):
    from tests.people.conftest import make_person

    settings.BRAIN_MCP_TOKEN = settings.SUPERVISOR_MCP_TOKEN = settings.ROUTING_MCP_TOKEN = ""
    make_person("rita", "reader")
    make_person("otto", "operator")
    reader = run(user="rita")
    assert "token create rita --scope brain:read --scope sessions:write`" in reader
    assert "brain:write" not in reader and "supervisor:run" not in reader
    operator = run(user="otto")
    assert "--scope supervisor:run --scope routing:run`" in operator and "--scope brain:write" not in operator
    anyone = run()
    assert "token create USERNAME --scope brain:read --scope sessions:write`" in anyone
    assert "add brain:write supervisor:run routing:run if your role allows them" in anyone


@pytest.mark.django_db
def test_it_registers_only_the_plugins_and_endpoints_the_persons_role_can_use(settings):
    """Issue 46: with a reader's token the operator's endpoints would show as "Failed to connect"."""
    from tests.people.conftest import make_person

    settings.BRAIN_MCP_TOKEN = settings.SUPERVISOR_MCP_TOKEN = settings.ROUTING_MCP_TOKEN = ""
    make_person("rita", "reader")
    make_person("mia", "member")
    make_person("otto", "operator")
    for username in ("rita", "mia"):
        output = run(user=username, url="http://10.0.0.5:8000")
        assert "claude plugin install hyperguild@hyperguild\n" in output
        assert "hyperguild-operator" not in output.split("Claude Code plugins")[1].split("\n", 1)[1]
        assert "hyperguild-brain http://10.0.0.5:8000/mcp/brain" in output
        assert "/mcp/supervisor" not in output and "/mcp/routing" not in output
    member = run(user="mia")
    assert "--scope brain:read --scope brain:write --scope sessions:write`" in member
    operator = run(user="otto", url="http://10.0.0.5:8000")
    assert "claude plugin install hyperguild@hyperguild\n" in operator
    assert "claude plugin install hyperguild-operator@hyperguild\n" in operator
    assert "/mcp/supervisor\n" in operator and "/mcp/routing\n" in operator
    anyone = run()
    assert "claude plugin install hyperguild-operator@hyperguild   # operators only" in anyone


@pytest.mark.django_db
def test_an_unknown_person_is_refused():
    with pytest.raises(CommandError, match="No account called 'nobody'"):
        run(user="nobody")
