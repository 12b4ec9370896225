"""The plugin in the real Claude Code CLI: validated, installed, and its hooks logging a headless run.

Here the CLI is not logged in: `claude -p` runs the SessionStart and
UserPromptSubmit hooks, fails the model turn ("Not logged in", exit 1) and
runs SessionEnd. PostToolUse, PostToolUseFailure and Stop need a model turn,
so they are run as Claude Code runs them: the installed hook command in a
shell, the hook's documented JSON on stdin.
"""

from __future__ import annotations

import json
import shlex
import socket
import subprocess
import threading
import time
import uuid
from pathlib import Path

import psutil
import pytest
from django_q.models import OrmQ

from brain.actions import do_ingest_note
from sessions.models import AgentSession, SessionEntry
from tests.conftest import free_port
from tests.plugin.conftest import MARKETPLACE, PINNED, claude, offline_env

pytestmark = pytest.mark.django_db(transaction=True)

AWS_KEY = "AKIAIOSFODNN7EXAMPLE"
OPENAI_KEY = "sk-proj-abcdefghijklmnopqrstuvwxyz012345"

LEDGERLY_NOTES = [
    (
        "ledgerly-architecture",
        "Ledgerly architecture",
        "Ledgerly is the billing service; ledgerly keeps every invoice as an append-only event.",
    ),
    (
        "ledgerly-currency-rounding",
        "Ledgerly rounds per line",
        "Ledgerly rounds currency per invoice line, never on the total, to match the tax office.",
    ),
    ("pasta-water", "Salting pasta water", "Salt the pasta water generously; it should taste like the sea."),
]


def project(tmp_path: Path, name: str) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    return folder


def entries(session_id: str) -> list[SessionEntry]:
    return list(SessionEntry.objects.for_session(session_id))


def entries_soon(session_id: str, count: int, seconds: float = 30) -> list[SessionEntry]:
    """The session's entries once there are `count`: a hook that found the service slow (a cold start takes
    more than its 2 s) spooled its event, and the ones after it queue behind it, sent in the background."""
    deadline = time.monotonic() + seconds
    while len(found := entries(session_id)) < count and time.monotonic() < deadline:
        time.sleep(0.2)
    return found


def hook_payload(event: str, session_id: str, cwd: Path, **fields) -> dict:
    """A hook's input as the hooks reference documents it."""
    return {
        "session_id": session_id,
        "transcript_path": f"/home/someone/.claude/projects/x/{session_id}.jsonl",
        "cwd": str(cwd),
        "permission_mode": "default",
        "hook_event_name": event,
        **fields,
    }


def test_the_pinned_cli_validates_the_marketplace_and_the_plugin(tmp_path):
    version = claude(["--version"], tmp_path)
    assert version.returncode == 0 and version.stdout.startswith(PINNED), version.stdout + version.stderr

    marketplace = claude(["plugin", "validate", str(MARKETPLACE)], tmp_path)
    assert marketplace.returncode == 0, marketplace.stdout + marketplace.stderr
    assert "Validation passed" in marketplace.stdout

    plugin = claude(["plugin", "validate", str(MARKETPLACE / "hyperguild")], tmp_path)
    output = plugin.stdout + plugin.stderr
    assert plugin.returncode == 0, output
    assert "Validation passed" in output
    assert "ignored at runtime" not in output  # every hook is one the CLI runs
    for event in (
        "SessionStart",
        "UserPromptSubmit",
        "PostToolUse",
        "PostToolUseFailure",
        "PreCompact",
        "Stop",
        "SessionEnd",
    ):
        assert f"hooks: {event}" in output, output
    assert "mcpServers: brain http" in output
    assert "skills: hyperguild:hyperguild-loop" in output

    operator = claude(["plugin", "validate", str(MARKETPLACE / "hyperguild-operator")], tmp_path)
    output = operator.stdout + operator.stderr
    assert operator.returncode == 0 and "Validation passed" in output, output
    for name in ("supervisor", "routing"):
        assert f"mcpServers: {name} http" in output


def test_marketplace_add_and_install_leave_the_plugin_in_a_fresh_home(plugin):
    assert set(plugin.hooks) == {
        "SessionStart",
        "UserPromptSubmit",
        "PostToolUse",
        "PostToolUseFailure",
        "PreCompact",
        "Stop",
        "SessionEnd",
    }
    mcp = json.loads((plugin.root / ".mcp.json").read_text())["mcpServers"]
    assert sorted(mcp) == ["brain"]  # every role's; the operator's endpoints come with hyperguild-operator
    installed = json.loads((plugin.home / ".claude" / "plugins" / "installed_plugins.json").read_text())["plugins"]
    operator_root = Path(installed["hyperguild-operator@hyperguild"][0]["installPath"])
    operator_mcp = json.loads((operator_root / ".mcp.json").read_text())["mcpServers"]
    assert sorted(operator_mcp) == ["routing", "supervisor"]
    assert not (operator_root / "hooks").exists()  # one plugin's hooks: nothing is logged twice
    for server in [*mcp.values(), *operator_mcp.values()]:
        assert server["headers"] == {"Authorization": "Bearer ${HYPERGUILD_TOKEN:-}"}
    # No secret on a command line: the commands name no token, the script reads it into a header file descriptor.
    for event in plugin.hooks:
        assert "TOKEN" not in plugin.command(event) and "Bearer" not in plugin.command(event)
    # Tool-use capture never holds Claude Code up; the hooks whose answer or order matters run in line.
    assert {event for event, groups in plugin.hooks.items() if groups[0]["hooks"][0].get("async")} == {
        "PostToolUse",
        "PostToolUseFailure",
    }


def test_a_headless_run_leaves_its_session_in_the_service(asgi_server, plugin_home, tmp_path):
    folder = project(tmp_path, "ledgerly")
    completed = claude(
        ["-p", f"Rotate the key {AWS_KEY} and the token {OPENAI_KEY}", "--output-format", "json"],
        plugin_home,
        cwd=folder,
        HYPERGUILD_URL=asgi_server,
    )
    assert completed.returncode == 1, completed.stdout + completed.stderr  # not logged in: no model turn
    result = json.loads(completed.stdout)
    session_id = result["session_id"]

    logged = entries_soon(session_id, 3)
    session = AgentSession.objects.get(external_id=session_id)
    assert session.project_root == str(folder)
    assert session.project.name == "ledgerly"
    assert [entry.kind for entry in logged] == ["start", "prompt", "end"]
    prompt = logged[1]
    assert AWS_KEY not in prompt.message and OPENAI_KEY not in prompt.message
    assert "[REDACTED:aws_access_key]" in prompt.message and "[REDACTED:openai_key]" in prompt.message
    assert prompt.message.startswith("Rotate the key ")
    assert {flag["pattern"] for flag in prompt.redactions} == {"aws_access_key", "openai_key"}
    assert OrmQ.objects.count() >= 1  # SessionEnd queued the retrospective


def test_a_headless_run_while_the_service_is_down_arrives_with_the_next_run(service, plugin_home, tmp_path):
    folder = project(tmp_path, "ledgerly")
    offline = claude(
        ["-p", "Fix the rounding of invoice lines", "--output-format", "json"],
        plugin_home,
        cwd=folder,
        HYPERGUILD_URL=service.url,
    )
    assert offline.returncode == 1, offline.stdout + offline.stderr  # not logged in: no model turn
    first = json.loads(offline.stdout)["session_id"]
    assert not AgentSession.objects.filter(external_id=first).exists()

    service.start()
    online = claude(
        ["-p", "And now the totals", "--output-format", "json"], plugin_home, cwd=folder, HYPERGUILD_URL=service.url
    )
    second = json.loads(online.stdout)["session_id"]
    logged = entries_soon(first, 3)  # the spool goes in the background: the second run does not wait for it
    assert [entry.kind for entry in logged] == ["start", "prompt", "end"]
    assert logged[1].message == "Fix the rounding of invoice lines"
    assert all(entry.occurred_at is not None for entry in logged)  # when it happened, not when it arrived
    assert AgentSession.objects.get(external_id=first).project_root == str(folder)
    assert [entry.kind for entry in entries_soon(second, 3)] == ["start", "prompt", "end"]


def test_post_tool_use_and_stop_through_the_installed_hook_command(asgi_server, plugin, tmp_path):
    folder = project(tmp_path, "ledgerly")
    session_id = str(uuid.uuid4())
    secret_content = "def rounding():\n    return 'the whole file, never stored'\n"
    wrote = hook_payload(
        "PostToolUse",
        session_id,
        folder,
        tool_name="Write",
        tool_use_id="toolu_write_1",
        tool_input={"file_path": str(folder / "ledgerly" / "rounding.py"), "content": secret_content},
        tool_response={"filePath": str(folder / "ledgerly" / "rounding.py"), "success": True},
    )
    failed = hook_payload(
        "PostToolUseFailure",
        session_id,
        folder,
        tool_name="Bash",
        tool_use_id="toolu_test_1",
        tool_input={"command": "pytest tests/test_rounding.py -q", "description": "Run the tests"},
        error="Command exited with non-zero status code 1\nE   assert 10.01 == 10.0\n1 failed in 0.02s",
        is_interrupt=False,
    )
    passed = hook_payload(
        "PostToolUse",
        session_id,
        folder,
        tool_name="Bash",
        tool_use_id="toolu_test_2",
        tool_input={"command": "pytest tests/test_rounding.py -q"},
        tool_response={"stdout": "1 passed in 0.01s", "stderr": "", "interrupted": False, "isImage": False},
    )
    listing = hook_payload(
        "PostToolUse",
        session_id,
        folder,
        tool_name="Bash",
        tool_use_id="toolu_ls",
        tool_input={"command": "ls -la"},
        tool_response={"stdout": "total 0", "stderr": "", "interrupted": False},
    )
    stop = hook_payload("Stop", session_id, folder, stop_hook_active=False)

    for event, payload in (
        ("PostToolUse", wrote),
        ("PostToolUseFailure", failed),
        ("PostToolUse", passed),
        ("PostToolUse", listing),
        ("Stop", stop),
        ("PostToolUse", wrote),
    ):
        ran = plugin.run_hook(event, payload, url=asgi_server)
        assert ran.returncode == 0, ran.stderr
        assert ran.stdout == ""  # capture hooks tell Claude nothing

    logged = entries(session_id)
    assert [(e.kind, e.status) for e in logged] == [("file", "pass"), ("test", "fail"), ("test", "pass"), ("stop", "")]
    write = logged[0]
    assert write.message == "wrote ledgerly/rounding.py"
    assert "whole file" not in json.dumps(write.data) + write.message
    assert logged[1].skill == logged[2].skill == "test: pytest tests/test_rounding.py -q"
    assert "assert 10.01 == 10.0" in logged[1].message
    assert AgentSession.objects.get(external_id=session_id).project_root == str(folder)
    assert OrmQ.objects.count() == 1  # Stop queued the retrospective


def test_session_start_names_the_wiki_notes_of_a_project_the_brain_knows(asgi_server, plugin, tmp_path):
    for slug, title, body in LEDGERLY_NOTES:
        do_ingest_note(title=title, body=body, wing="concepts", slug=slug)
    known = project(tmp_path, "ledgerly")

    ran = plugin.run_hook(
        "SessionStart", hook_payload("SessionStart", str(uuid.uuid4()), known, source="startup"), url=asgi_server
    )
    assert ran.returncode == 0, ran.stderr
    output = json.loads(ran.stdout)
    context = output["hookSpecificOutput"]["additionalContext"]
    assert output["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert "ledgerly-architecture" in context and "ledgerly-currency-rounding" in context
    assert "Ledgerly rounds per line" in context
    assert "pasta-water" not in context
    assert len(context) <= 2000

    unrelated = project(tmp_path, "zebra-garden")
    session_id = str(uuid.uuid4())
    ran = plugin.run_hook(
        "SessionStart", hook_payload("SessionStart", session_id, unrelated, source="startup"), url=asgi_server
    )
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout) == {}  # no context at all
    assert [e.kind for e in entries(session_id)] == ["start"]  # but the session is logged


def test_with_the_service_stopped_the_hook_exits_0_at_once(plugin, tmp_path):
    folder = project(tmp_path, "ledgerly")
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    spool = tmp_path / "spool"
    for event in plugin.hooks:
        began = time.monotonic()
        ran = plugin.run_hook(
            event,
            hook_payload(event, str(uuid.uuid4()), folder, source="startup"),
            url=url,
            HYPERGUILD_SPOOL_DIR=str(spool),
        )
        elapsed = time.monotonic() - began
        assert ran.returncode == 0, ran.stderr
        assert elapsed < 2, elapsed
        if event == "SessionStart":
            message = json.loads(ran.stdout)
            assert set(message) == {"systemMessage"} and len(message["systemMessage"]) < 200
            assert "waiting to be sent (service unreachable)" in message["systemMessage"]
        else:
            assert ran.stdout == ""


class SilentServer:
    """Accepts connections and never answers: a service that hangs."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.held: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(connection)

    def close(self) -> None:
        for connection in self.held:
            connection.close()
        self.sock.close()


def test_a_hanging_service_gets_two_seconds_and_the_token_is_on_no_command_line(plugin, tmp_path):
    folder = project(tmp_path, "ledgerly")
    server = SilentServer()
    token = "hg-token-" + uuid.uuid4().hex
    payload = json.dumps(hook_payload("SessionStart", str(uuid.uuid4()), folder, source="startup"))
    try:
        env = offline_env(
            plugin.home, CLAUDE_PLUGIN_ROOT=str(plugin.root), HYPERGUILD_URL=server.url, HYPERGUILD_TOKEN=token
        )
        began = time.monotonic()
        process = subprocess.Popen(
            ["sh", "-c", plugin.command("SessionStart")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            text=True,
        )
        process.stdin.write(payload)
        process.stdin.close()
        command_lines = []
        while process.poll() is None and time.monotonic() - began < 1.5:
            try:
                for child in psutil.Process(process.pid).children(recursive=True):
                    command_lines.append(" ".join(child.cmdline()))
            except psutil.Error:
                pass
            time.sleep(0.05)
        output = process.stdout.read()
        process.wait(timeout=10)
        elapsed = time.monotonic() - began
    finally:
        server.close()
    assert any("curl" in line for line in command_lines), command_lines  # the request was in flight
    assert not any(token in line for line in command_lines)
    assert process.returncode == 0
    assert 1.9 < elapsed < 3.5, elapsed  # curl's --max-time 2, then the hook is done
    assert "did not answer" in json.loads(output)["systemMessage"]


def test_a_wrong_token_gets_one_short_message_and_writes_nothing(asgi_server, plugin, settings, tmp_path):
    settings.BRAIN_MCP_TOKEN = "the-right-token-123"
    folder = project(tmp_path, "ledgerly")
    session_id = str(uuid.uuid4())
    payload = hook_payload("SessionStart", session_id, folder, source="startup")

    ran = plugin.run_hook("SessionStart", payload, url=asgi_server, token="a-wrong-token")
    assert ran.returncode == 0
    assert "refused the token" in json.loads(ran.stdout)["systemMessage"]
    prompt = hook_payload("UserPromptSubmit", session_id, folder, prompt="hello", prompt_id="p1")
    ran = plugin.run_hook("UserPromptSubmit", prompt, url=asgi_server, token="a-wrong-token")
    assert ran.returncode == 0 and ran.stdout == ""
    assert not AgentSession.objects.filter(external_id=session_id).exists()

    ran = plugin.run_hook("SessionStart", payload, url=asgi_server, token="the-right-token-123")
    assert ran.returncode == 0 and "systemMessage" not in ran.stdout
    assert [e.kind for e in entries(session_id)] == ["start"]


def test_claude_mcp_list_shows_the_three_endpoints_connected(asgi_server, plugin_home, tmp_path):
    listed = claude(["mcp", "list"], plugin_home, cwd=project(tmp_path, "elsewhere"), HYPERGUILD_URL=asgi_server)
    assert listed.returncode == 0, listed.stdout + listed.stderr
    for plugin, name in (
        ("hyperguild", "brain"),
        ("hyperguild-operator", "supervisor"),
        ("hyperguild-operator", "routing"),
    ):
        line = next(line for line in listed.stdout.splitlines() if line.startswith(f"plugin:{plugin}:{name}:"))
        assert f"{asgi_server}/mcp/{name}" in line and "Connected" in line, listed.stdout


def test_the_endpoints_get_hyperguild_token_from_the_environment(asgi_server, plugin_home, settings, tmp_path):
    settings.BRAIN_MCP_TOKEN = settings.SUPERVISOR_MCP_TOKEN = settings.ROUTING_MCP_TOKEN = "one-token-for-all-42"
    folder = project(tmp_path, "elsewhere")
    right = claude(
        ["mcp", "list"], plugin_home, cwd=folder, HYPERGUILD_URL=asgi_server, HYPERGUILD_TOKEN="one-token-for-all-42"
    )
    assert right.returncode == 0, right.stdout + right.stderr
    assert (
        sum(line.startswith("plugin:hyperguild") and "Connected" in line for line in right.stdout.splitlines()) == 3
    ), right.stdout
    wrong = claude(["mcp", "list"], plugin_home, cwd=folder, HYPERGUILD_URL=asgi_server, HYPERGUILD_TOKEN="wrong")
    assert not any(line.startswith("plugin:hyperguild") and "Connected" in line for line in wrong.stdout.splitlines())


def transcript(home: Path, session_id: str) -> str:
    """What Claude Code kept of a session (its JSONL transcript under HOME/.claude/projects)."""
    found = list((home / ".claude" / "projects").glob(f"*/{session_id}.jsonl"))
    assert len(found) == 1, found
    return found[0].read_text()


def test_the_mcp_prompts_are_slash_commands_that_the_cli_expands(asgi_server, plugin_home, tmp_path):
    for slug, title, body in LEDGERLY_NOTES:
        do_ingest_note(title=title, body=body, wing="concepts", slug=slug)
    folder = project(tmp_path, "ledgerly")

    recall = claude(
        ["-p", "/mcp__plugin_hyperguild_brain__recall ledgerly rounding", "--output-format", "json"],
        plugin_home,
        cwd=folder,
        HYPERGUILD_URL=asgi_server,
    )
    session_id = json.loads(recall.stdout)["session_id"]
    expanded = transcript(plugin_home, session_id)
    assert "ledgerly-currency-rounding" in expanded and "cite each claim" in expanded  # what prompts/get answered

    tdd = claude(
        ["-p", "/mcp__plugin_hyperguild-operator_supervisor__tdd invoices round per line", "--output-format", "json"],
        plugin_home,
        cwd=folder,
        HYPERGUILD_URL=asgi_server,
    )
    expanded = transcript(plugin_home, json.loads(tdd.stdout)["session_id"])
    assert "invoices round per line" in expanded and "tdd_red" in expanded


def test_the_loop_skill_is_found_by_the_cli(asgi_server, plugin_home, tmp_path):
    ran = claude(
        ["-p", "/hyperguild:hyperguild-loop", "--output-format", "json"],
        plugin_home,
        cwd=project(tmp_path, "ledgerly"),
        HYPERGUILD_URL=asgi_server,
    )
    expanded = transcript(plugin_home, json.loads(ran.stdout)["session_id"])
    assert "# The hyperguild loop" in expanded and "review queue" in expanded


def installed_as_plugin_setup_says(home: Path, base: str, username: str) -> list[str]:
    """Run the `claude plugin …` lines `manage.py plugin_setup --user USERNAME` prints, in a fresh HOME."""
    from django.contrib.auth import get_user_model

    from hyperguild.management.commands.plugin_setup import setup_lines

    person = get_user_model().objects.get(username=username)
    commands = [
        shlex.split(line.strip()) for line in setup_lines(base, person) if line.strip().startswith("claude plugin ")
    ]
    assert commands, "plugin_setup printed no plugin lines"
    for command in commands:
        ran = claude(command[1:], home)
        assert ran.returncode == 0, (command, ran.stdout + ran.stderr)
    return [" ".join(command) for command in commands]


@pytest.mark.parametrize(
    ("role", "endpoints"),
    [("reader", ["brain"]), ("member", ["brain"]), ("operator", ["brain", "routing", "supervisor"])],
)
def test_with_a_persons_plugin_setup_the_cli_lists_every_registered_endpoint_as_connected(
    asgi_server, settings, tmp_path, role, endpoints
):
    """Issue 46: the plugin registers only the endpoints the person's role can use, so none shows as failed."""
    from hyperguild.management.commands.plugin_setup import plugin_scopes
    from people.actions import do_create_personal_token
    from tests.people.conftest import make_person

    settings.BRAIN_MCP_TOKEN = settings.SUPERVISOR_MCP_TOKEN = settings.ROUTING_MCP_TOKEN = "nobody-has-this-42"
    person = make_person(f"p-{role}", role)
    token = do_create_personal_token(person, name="plugin", scopes=plugin_scopes(person)).secret
    home = tmp_path / "home"
    home.mkdir()
    installed_as_plugin_setup_says(home, asgi_server, person.username)

    listed = claude(
        ["mcp", "list"], home, cwd=project(tmp_path, "elsewhere"), HYPERGUILD_URL=asgi_server, HYPERGUILD_TOKEN=token
    )
    assert listed.returncode == 0, listed.stdout + listed.stderr
    ours = [line for line in listed.stdout.splitlines() if line.startswith("plugin:hyperguild")]
    assert sorted(line.split(":")[2] for line in ours) == endpoints, listed.stdout
    for line in ours:
        assert "Connected" in line and "Failed" not in line, listed.stdout
