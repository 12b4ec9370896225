"""POST /api/hooks/<event>: a Claude Code hook's JSON in, the hook's JSON out (the plugin's one route)."""

from __future__ import annotations

import uuid

import httpx
import pytest
from django_q.models import OrmQ

from brain.actions import do_ingest_note
from sessions.models import AgentSession, SessionEntry
from supervisor.skills import RetrospectiveResult
from tests.conftest import rest_error

pytestmark = pytest.mark.django_db(transaction=True)

CWD = "/home/someone/src/ledgerly"


@pytest.fixture(autouse=True)
def quiet_services(settings):
    settings.BRAIN_EMBEDDER = "off"
    settings.BRAIN_RERANKER_URL = ""
    settings.LITELLM_BASE_URL = ""
    settings.BRAIN_MCP_TOKEN = ""


def payload(event: str, session_id: str, **fields) -> dict:
    return {"session_id": session_id, "transcript_path": "/tmp/t.jsonl", "cwd": CWD, "hook_event_name": event, **fields}


def post(base: str, event: str, body, headers: dict | None = None) -> httpx.Response:
    if isinstance(body, (dict, list)):
        return httpx.post(f"{base}/api/hooks/{event}", json=body, headers=headers or {}, timeout=30)
    # Raw bytes go as the plugin sends every body: JSON (the route takes nothing else, issue 35).
    return httpx.post(
        f"{base}/api/hooks/{event}",
        content=body,
        timeout=30,
        headers={"Content-Type": "application/json", **(headers or {})},
    )


def kinds(session_id: str) -> list[str]:
    return [entry.kind for entry in SessionEntry.objects.for_session(session_id)]


def test_a_retried_hook_never_doubles_an_entry(asgi_server):
    session_id = str(uuid.uuid4())
    prompt = payload("UserPromptSubmit", session_id, prompt="fix the rounding", prompt_id="prompt-1")
    start = payload("SessionStart", session_id, source="startup")
    for body, event in (
        (start, "SessionStart"),
        (prompt, "UserPromptSubmit"),
        (start, "SessionStart"),
        (prompt, "UserPromptSubmit"),
    ):
        assert post(asgi_server, event, body).status_code == 200
    # The same words under a new prompt_id are a new prompt.
    assert post(asgi_server, "UserPromptSubmit", {**prompt, "prompt_id": "prompt-2"}).status_code == 200
    assert kinds(session_id) == ["start", "prompt", "prompt"]
    keys = list(SessionEntry.objects.for_session(session_id).values_list("idempotency_key", flat=True))
    assert keys[1] == "hook:UserPromptSubmit:prompt-1" and keys[0].startswith("hook:SessionStart:")


def test_secrets_in_a_prompt_are_stored_redacted(asgi_server):
    session_id = str(uuid.uuid4())
    text = "deploy with AKIAIOSFODNN7EXAMPLE and api_key=supersecretvalue123 and sk-abcdefghijklmnopqrstuvwx"
    assert post(asgi_server, "UserPromptSubmit", payload("UserPromptSubmit", session_id, prompt=text)).json() == {}
    entry = SessionEntry.objects.get(session__external_id=session_id)
    for secret in ("AKIAIOSFODNN7EXAMPLE", "supersecretvalue123", "sk-abcdefghijklmnopqrstuvwx"):
        assert secret not in entry.message
    assert entry.message.count("[REDACTED:") == 3


def test_tool_use_logs_what_matters_and_skips_the_rest(asgi_server):
    session_id = str(uuid.uuid4())
    uses = [
        ("PostToolUse", {"tool_name": "Read", "tool_input": {"file_path": f"{CWD}/a.py"}, "tool_use_id": "t1"}),
        ("PostToolUse", {"tool_name": "Bash", "tool_input": {"command": "git status"}, "tool_use_id": "t2"}),
        (
            "PostToolUse",
            {
                "tool_name": "Edit",
                "tool_input": {"file_path": f"{CWD}/src/a.py", "old_string": "x" * 5000, "new_string": "y" * 5000},
                "tool_use_id": "t3",
            },
        ),
        (
            "PostToolUseFailure",
            {
                "tool_name": "Bash",
                "tool_input": {"command": "make build"},
                "tool_use_id": "t4",
                "error": "x" * 5000 + "the end of the error",
            },
        ),
        (
            "PostToolUseFailure",
            {
                "tool_name": "Bash",
                "tool_input": {"command": "rm nothing-here"},
                "tool_use_id": "t5",
                "error": "rm: cannot remove 'nothing-here': No such file or directory",
            },
        ),
        (
            "PostToolUse",
            {
                "tool_name": "Bash",
                "tool_input": {"command": "cd web && npm run test -- --watch=false"},
                "tool_use_id": "t6",
                "tool_response": {"stdout": "ok"},
            },
        ),
    ]
    for event, fields in uses:
        assert post(asgi_server, event, payload(event, session_id, **fields)).status_code == 200
    logged = list(SessionEntry.objects.for_session(session_id))
    assert [(e.kind, e.status) for e in logged] == [
        ("file", "pass"),
        ("build", "fail"),
        ("error", "fail"),
        ("test", "pass"),
    ]
    assert logged[0].message == "edited src/a.py" and "xxxxx" not in str(logged[0].data)
    assert logged[1].message.endswith("the end of the error") and len(logged[1].message) < 2000
    assert logged[1].skill == "build: make build"
    assert "No such file" in logged[2].message


def test_stop_and_session_end_queue_the_retrospective_when_there_is_something_new(asgi_server, settings):
    session_id = str(uuid.uuid4())

    def say(prompt_id: str) -> None:
        body = payload("UserPromptSubmit", session_id, prompt=f"step {prompt_id}", prompt_id=prompt_id)
        assert post(asgi_server, "UserPromptSubmit", body).status_code == 200

    say("1")
    assert post(asgi_server, "Stop", payload("Stop", session_id, stop_hook_active=False)).status_code == 200
    assert OrmQ.objects.count() == 1
    queued = OrmQ.objects.get().task
    assert queued["func"] == "sessions.tasks.retrospective" and tuple(queued["args"]) == (session_id,)
    say("2")
    assert post(asgi_server, "Stop", payload("Stop", session_id, stop_hook_active=True)).status_code == 200
    assert OrmQ.objects.count() == 1  # a Stop soon after another waits for the debounce
    assert (
        post(asgi_server, "SessionEnd", payload("SessionEnd", session_id, reason="prompt_input_exit")).status_code
        == 200
    )
    assert OrmQ.objects.count() == 2  # the end does not wait: prompt 2 is new
    assert kinds(session_id) == ["prompt", "stop", "prompt", "stop", "end"]
    assert SessionEntry.objects.for_session(session_id).last().phase == "prompt_input_exit"

    # A Stop then the end with nothing in between: one retrospective, not two.
    quick = str(uuid.uuid4())
    assert (
        post(
            asgi_server, "UserPromptSubmit", payload("UserPromptSubmit", quick, prompt="hi", prompt_id="q")
        ).status_code
        == 200
    )
    assert post(asgi_server, "Stop", payload("Stop", quick)).status_code == 200
    assert post(asgi_server, "SessionEnd", payload("SessionEnd", quick, reason="other")).status_code == 200
    assert OrmQ.objects.count() == 3

    settings.HYPERGUILD_HOOK_RETROSPECTIVE = False
    other = str(uuid.uuid4())
    assert (
        post(
            asgi_server, "UserPromptSubmit", payload("UserPromptSubmit", other, prompt="hi", prompt_id="o")
        ).status_code
        == 200
    )
    assert post(asgi_server, "SessionEnd", payload("SessionEnd", other, reason="other")).status_code == 200
    assert kinds(other) == ["prompt", "end"] and OrmQ.objects.count() == 3


def test_the_session_start_context_is_capped(asgi_server, settings):
    for index in range(12):
        do_ingest_note(title=f"Ledgerly note {index}", body=f"Ledgerly detail number {index}. " * 20, wing="concepts")
    settings.HYPERGUILD_HOOK_CONTEXT_CHARS = 600
    answer = post(asgi_server, "SessionStart", payload("SessionStart", str(uuid.uuid4()), source="startup")).json()
    context = answer["hookSpecificOutput"]["additionalContext"]
    assert len(context) <= 600
    assert context.count("\n- ") >= 2 and "ledgerly-note-" in context
    # A resumed session already has its context: logged, nothing added.
    resumed = post(asgi_server, "SessionStart", payload("SessionStart", str(uuid.uuid4()), source="resume")).json()
    assert resumed == {}


@pytest.mark.parametrize(
    ("event", "body", "message"),
    [
        ("Notification", {"session_id": "s1", "cwd": CWD}, "Unknown hook event"),
        ("SessionStart", b"{not json", "JSON"),
        ("SessionStart", [1, 2], "JSON object"),
        ("SessionStart", {"session_id": "../../etc/passwd", "cwd": CWD}, "session_id"),
        ("SessionStart", {"cwd": CWD}, "session_id"),
        ("SessionStart", {"session_id": "s1", "cwd": "relative/dir"}, "cwd"),
        ("SessionStart", {"session_id": "s1"}, "cwd"),
        ("UserPromptSubmit", {"session_id": "s1", "cwd": CWD, "hook_event_name": "Stop"}, "Stop hook"),
        ("UserPromptSubmit", {"session_id": "s1", "cwd": CWD, "prompt": "a\u0000b"}, "NUL"),
    ],
)
def test_bad_hook_input_is_refused_and_nothing_is_written(asgi_server, event, body, message):
    response = post(asgi_server, event, body)
    assert response.status_code == 400, response.text
    assert message in rest_error(response)["message"]
    assert not AgentSession.objects.exists() and not SessionEntry.objects.exists()


def test_the_route_takes_the_brain_token_like_mcp_brain(asgi_server, settings):
    settings.BRAIN_MCP_TOKEN = "brain-token-123"
    body = payload("SessionStart", "s-token", source="startup")
    missing = post(asgi_server, "SessionStart", body)
    assert missing.status_code == 401 and missing.headers["WWW-Authenticate"].startswith("Bearer")
    assert post(asgi_server, "SessionStart", body, {"Authorization": "Bearer wrong"}).status_code == 401
    assert not AgentSession.objects.exists()
    assert post(asgi_server, "SessionStart", body, {"Authorization": "Bearer brain-token-123"}).status_code == 200
    assert kinds("s-token") == ["start"]


def test_a_test_that_fails_then_passes_becomes_a_learning_in_the_queued_retrospective(asgi_server):
    from sessions.tasks import retrospective

    session_id = str(uuid.uuid4())
    command = {"command": "pytest tests/test_rounding.py"}
    steps = [
        (
            "PostToolUseFailure",
            {
                "tool_name": "Bash",
                "tool_input": command,
                "tool_use_id": "a",
                "error": "E   assert round_line(10.005) == 10.01\n1 failed",
            },
        ),
        (
            "PostToolUse",
            {"tool_name": "Edit", "tool_input": {"file_path": f"{CWD}/ledgerly/rounding.py"}, "tool_use_id": "b"},
        ),
        (
            "PostToolUse",
            {"tool_name": "Bash", "tool_input": command, "tool_use_id": "c", "tool_response": {"stdout": "1 passed"}},
        ),
        ("SessionEnd", {"reason": "other"}),
    ]
    for event, fields in steps:
        assert post(asgi_server, event, payload(event, session_id, **fields)).status_code == 200
    assert tuple(OrmQ.objects.get().task["args"]) == (session_id,)

    result = retrospective(session_id)  # what the worker runs for the queued task
    assert isinstance(result, RetrospectiveResult), result  # not skipped
    titles = [learning.title for learning in result.learnings]
    assert any("test: pytest tests/test_rounding.py" in title for title in titles), titles


def test_a_windows_folder_is_named_by_its_last_part(asgi_server):
    do_ingest_note(title="Ledgerly rounds per line", body="Ledgerly rounds currency per invoice line.", wing="concepts")
    session_id = str(uuid.uuid4())
    body = {**payload("SessionStart", session_id, source="startup"), "cwd": "C:\\Users\\someone\\src\\ledgerly"}
    answer = post(asgi_server, "SessionStart", body).json()
    assert "ledgerly-rounds-per-line" in answer["hookSpecificOutput"]["additionalContext"]
    session = AgentSession.objects.get(external_id=session_id)
    assert (session.project.name, session.project_root) == ("ledgerly", "C:\\Users\\someone\\src\\ledgerly")


def test_a_prompt_over_the_entry_limit_is_cut_and_says_how_long_it_was(asgi_server):
    session_id = str(uuid.uuid4())
    long_prompt = "explain " + "x" * 30000
    body = payload("UserPromptSubmit", session_id, prompt=long_prompt, prompt_id="long")
    assert post(asgi_server, "UserPromptSubmit", body).status_code == 200
    entry = SessionEntry.objects.get(session__external_id=session_id)
    assert len(entry.message) == 20000 and entry.message.startswith("explain ")
    assert entry.data == {"truncated_from_chars": len(long_prompt)}


def test_pre_compact_marks_where_the_context_was_cut_with_its_trigger_each_time(asgi_server):
    session_id = str(uuid.uuid4())
    say = payload("UserPromptSubmit", session_id, prompt="go on", prompt_id="p1")
    manual = payload("PreCompact", session_id, trigger="manual", custom_instructions="keep the rounding decisions")
    auto = payload("PreCompact", session_id, trigger="auto", custom_instructions="")
    for event, body in (("UserPromptSubmit", say), ("PreCompact", manual), ("PreCompact", auto)):
        assert post(asgi_server, event, body).json() == {}
    entries = list(SessionEntry.objects.for_session(session_id))
    assert [(e.kind, e.phase) for e in entries] == [("prompt", ""), ("compact", "manual"), ("compact", "auto")]
    assert entries[1].message == "Claude Code compacts the context (manual): keep the rounding decisions"
    assert entries[2].message == "Claude Code compacts the context (auto)"

    # The same input again is the same hook retried; the plugin's script tells two runs apart by their id.
    for hook_id in ("1764140000-101", "1764140900-202", "1764140900-202"):
        assert post(asgi_server, "PreCompact", {"hyperguild_hook_id": hook_id, **auto}).status_code == 200
    assert post(asgi_server, "PreCompact", auto).status_code == 200
    assert [e.phase for e in SessionEntry.objects.for_session(session_id)] == ["", "manual", "auto", "auto", "auto"]


def test_a_session_started_in_a_folder_is_found_again_by_the_context_of_the_next_session_there(asgi_server):
    from brain.actions import do_write_raw_note
    from brain.context import context

    folder = "/some/dir/project"
    first, second = str(uuid.uuid4()), str(uuid.uuid4())
    start = {**payload("SessionStart", first, source="startup"), "cwd": folder}
    assert post(asgi_server, "SessionStart", start).status_code == 200
    # Written in the first session, and naming nothing the folder is called: only the session links it to the folder.
    own = do_write_raw_note(title="Compaction stalls under load", body="Segments wait for the lock.", session_id=first)
    do_write_raw_note(title="Unrelated raw idea", body="Pasta water should be salty.", session_id="elsewhere")

    start = {**payload("SessionStart", second, source="startup"), "cwd": folder}
    assert post(asgi_server, "SessionStart", start).status_code == 200
    # What the next session's SessionStart ranks (sessions.hooks.context_text passes it the hook's cwd).
    assert [note["slug"] for note in context(folder)["unreviewed"]] == [own.slug]


def test_a_persons_sessions_create_projects_from_their_folders_only_within_the_hourly_allowance(asgi_server, settings):
    # Issue 46: 1,000 SessionStarts with distinct folders made 1,000 projects in two requests.
    from brain.models import Project
    from tests.people.conftest import bearer, make_person, token_for

    settings.HYPERGUILD_NEW_PROJECTS_PER_HOUR = 3
    make_person("mallory")
    headers = bearer(token_for("mallory", "sessions:write"))
    started = []
    for number in range(5):
        session_id = str(uuid.uuid4())
        payload = {
            "session_id": session_id,
            "cwd": f"/home/mallory/src/folder-{number}",
            "hook_event_name": "SessionStart",
            "source": "startup",
        }
        answer = httpx.post(f"{asgi_server}/api/hooks/SessionStart", json=payload, headers=headers, timeout=30)
        assert answer.status_code == 200, answer.text
        started.append(session_id)
    assert Project.objects.filter(name__startswith="folder-").count() == 3
    sessions = {s.external_id: s for s in AgentSession.objects.filter(external_id__in=started)}
    assert [sessions[s].project is not None for s in started] == [True, True, True, False, False]
    assert all(sessions[s].entries.filter(kind="start").exists() for s in started)  # every start is logged all the same
    # A folder of a project that exists still finds it; another person's allowance is their own.
    again = {"session_id": str(uuid.uuid4()), "cwd": "/home/mallory/src/folder-0", "hook_event_name": "SessionStart"}
    assert (
        httpx.post(f"{asgi_server}/api/hooks/SessionStart", json=again, headers=headers, timeout=30).status_code == 200
    )
    assert AgentSession.objects.get(external_id=again["session_id"]).project.name == "folder-0"
    make_person("ana")
    other = {"session_id": str(uuid.uuid4()), "cwd": "/home/ana/src/ledger", "hook_event_name": "SessionStart"}
    assert (
        httpx.post(
            f"{asgi_server}/api/hooks/SessionStart",
            json=other,
            timeout=30,
            headers=bearer(token_for("ana", "sessions:write")),
        ).status_code
        == 200
    )
    assert Project.objects.filter(name="ledger").exists()
