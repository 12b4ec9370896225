"""POST /api/hooks/spool: the hooks the plugin kept in its local spool while the service was away, sent later."""

from __future__ import annotations

import threading
import uuid

import httpx
import pytest
from django_q.models import OrmQ

from sessions.models import AgentSession, SessionEntry
from tests.conftest import rest_error
from tests.people.conftest import bearer, make_person, token_for

pytestmark = pytest.mark.django_db(transaction=True)

CWD = "/home/someone/src/ledgerly"


@pytest.fixture(autouse=True)
def quiet_services(settings):
    settings.BRAIN_EMBEDDER = "off"
    settings.BRAIN_RERANKER_URL = ""
    settings.LITELLM_BASE_URL = ""
    settings.BRAIN_MCP_TOKEN = ""


def line(event: str, session_id: str, at: str, **fields) -> dict:
    """One spool line as the plugin's hook script writes it."""
    hook_input = {
        "session_id": session_id,
        "transcript_path": "/tmp/t.jsonl",
        "cwd": CWD,
        "hook_event_name": event,
        **fields,
    }
    return {"hyperguild_spool": 1, "event": event, "at": at, "session": session_id, "input": hook_input}


def a_session_offline(session_id: str) -> list[dict]:
    """The five hooks of a session whose service was away, a minute apart."""
    command = {"command": "pytest tests/test_rounding.py -q"}
    return [
        line("SessionStart", session_id, "2026-03-02T09:00:00Z", source="startup"),
        line("UserPromptSubmit", session_id, "2026-03-02T09:01:00Z", prompt="fix the rounding", prompt_id="p1"),
        line(
            "PostToolUseFailure",
            session_id,
            "2026-03-02T09:02:00Z",
            tool_name="Bash",
            tool_input=command,
            tool_use_id="t1",
            error="E   assert 10.01 == 10.0\n1 failed",
        ),
        line(
            "PostToolUse",
            session_id,
            "2026-03-02T09:03:00Z",
            tool_name="Bash",
            tool_input=command,
            tool_use_id="t2",
            tool_response={"stdout": "1 passed"},
        ),
        line("Stop", session_id, "2026-03-02T09:04:00Z", stop_hook_active=False),
    ]


def send(base: str, body, headers: dict | None = None) -> httpx.Response:
    if isinstance(body, (dict, list)):
        return httpx.post(f"{base}/api/hooks/spool", json=body, headers=headers or {}, timeout=30)
    # Raw bytes as the plugin sends them: JSON's media type (the route takes no other), whatever the body.
    headers = {"Content-Type": "application/json", **(headers or {})}
    return httpx.post(f"{base}/api/hooks/spool", content=body, headers=headers, timeout=30)


def logged(session_id: str) -> list[SessionEntry]:
    return list(SessionEntry.objects.for_session(session_id))


def test_spooled_hooks_are_logged_in_order_at_their_original_time_and_queue_the_retrospective(asgi_server):
    session_id = str(uuid.uuid4())
    answer = send(asgi_server, {"entries": a_session_offline(session_id)})
    assert answer.status_code == 200, answer.text
    assert answer.json() == {
        "received": 5,
        "logged": 5,
        "already_logged": 0,
        "not_worth_an_entry": 0,
        "refused": [],
        "gaps": {},
        "refused_gaps": [],
        "retrospectives_queued": 1,
    }
    entries = logged(session_id)
    assert [(e.kind, e.status) for e in entries] == [
        ("start", ""),
        ("prompt", ""),
        ("test", "fail"),
        ("test", "pass"),
        ("stop", ""),
    ]
    assert [e.occurred_at.isoformat() for e in entries] == [f"2026-03-02T09:0{minute}:00+00:00" for minute in range(5)]
    assert tuple(OrmQ.objects.get().task["args"]) == (session_id,)
    # The read-back shows when each happened, besides when it arrived.
    read = httpx.get(f"{asgi_server}/sessions/{session_id}/entries", timeout=30).json()["entries"]
    assert [entry["occurred_at"] for entry in read] == [e.occurred_at.isoformat() for e in entries]


def test_a_replay_of_what_did_arrive_writes_nothing_even_when_two_come_at_once(asgi_server, settings):
    settings.HYPERGUILD_BATCH_CONCURRENCY = 2  # two web processes, say: the lane is each process's
    session_id = str(uuid.uuid4())
    batch = {"entries": a_session_offline(session_id)}
    # The hook timed out but the service had taken the prompt: it is in the spool as well.
    prompt = batch["entries"][1]["input"]
    assert httpx.post(f"{asgi_server}/api/hooks/UserPromptSubmit", json=prompt, timeout=30).status_code == 200

    answers: list[httpx.Response] = []
    senders = [threading.Thread(target=lambda: answers.append(send(asgi_server, batch))) for _ in range(2)]
    for sender in senders:
        sender.start()
    for sender in senders:
        sender.join()
    assert [answer.status_code for answer in answers] == [200, 200]
    assert sum(answer.json()["logged"] for answer in answers) == 4
    assert sum(answer.json()["already_logged"] for answer in answers) == 6
    assert [e.kind for e in logged(session_id)] == ["prompt", "start", "test", "test", "stop"]
    assert send(asgi_server, batch).json()["logged"] == 0


def test_a_line_the_hook_route_would_refuse_is_reported_and_the_rest_is_logged(asgi_server):
    session_id = str(uuid.uuid4())
    good = a_session_offline(session_id)
    bad = line("UserPromptSubmit", "../../etc/passwd", "2026-03-02T09:01:30Z", prompt="hi")
    other = line("PostToolUse", session_id, "2026-03-02T09:01:40Z", tool_name="Read", tool_input={"file_path": "/x"})
    answer = send(asgi_server, {"entries": [good[0], bad, other, *good[1:]]}).json()
    assert answer["refused"] == [{"index": 1, "event": "UserPromptSubmit", "error": answer["refused"][0]["error"]}]
    assert "session_id" in answer["refused"][0]["error"]
    assert (answer["logged"], answer["not_worth_an_entry"]) == (
        5,
        1,
    )  # a Read is not worth a line, as on the hook route
    assert len(logged(session_id)) == 5


def test_entries_the_spool_dropped_leave_a_gap_entry_with_the_count_once(asgi_server):
    session_id = str(uuid.uuid4())
    batch = {
        "entries": a_session_offline(session_id)[3:],
        "dropped": {session_id: 3, "-unreadable": 2},
        "drop_key": "1764140000-4242",
    }
    answer = send(asgi_server, batch).json()
    assert answer["gaps"] == {session_id: 3}
    assert send(asgi_server, batch).json()["gaps"] == {}  # the same report again: logged once
    entries = logged(session_id)
    assert [e.kind for e in entries] == ["gap", "test", "stop"]  # the dropped ones were older than what is left
    gap = entries[0]
    assert gap.data == {"dropped": 3, "by": "the plugin's offline spool"} and gap.status == "dropped"
    assert gap.occurred_at == entries[1].occurred_at  # no later than what is left, for a timeline in time order
    assert "3 hook entries of this session never arrived" in gap.message
    read = httpx.get(f"{asgi_server}/sessions/{session_id}/entries", timeout=30).json()["entries"]
    assert read[0]["kind"] == "gap" and read[0]["data"]["dropped"] == 3


BAD_BATCHES = [
    (b"{not json", "JSON"),
    ([], "Not a batch"),
    ({"lines": []}, "Not a batch"),
    ({"entries": [{"event": "Stop", "input": {}}]}, "entries/2: 'at' is a required property"),
    ({"entries": [{"event": "Stop", "at": "yesterday", "input": {"session_id": "s1", "cwd": CWD}}]}, "entries/2/at"),
    ({"entries": [{"event": "Stop", "at": "2026-03-02T09:00:00", "input": {"session_id": "s1", "cwd": CWD}}]}, "zone"),
    ({"entries": [], "dropped": {"s1": 2}}, "drop_key"),
    ({"entries": [{"event": "Stop", "at": "2026-03-02T09:00:00Z", "input": {}}] * 501}, "entries"),
]


@pytest.mark.parametrize("body,message", BAD_BATCHES)
def test_a_batch_that_is_not_the_spools_shape_is_refused_whole_and_writes_nothing(asgi_server, body, message):
    if isinstance(body, dict) and body.get("entries"):
        body = {
            **body,
            "entries": [*a_session_offline("s1")[:2], *body["entries"]],
        }  # good lines first: not written either
    answer = send(asgi_server, body)
    assert answer.status_code == 400, answer.text
    assert message in rest_error(answer)["message"]
    assert not AgentSession.objects.exists() and not SessionEntry.objects.exists()


def test_the_spool_route_takes_the_hook_routes_token_and_scope(asgi_server, settings):
    settings.BRAIN_MCP_TOKEN = "brain-token-123"
    session_id = str(uuid.uuid4())
    batch = {"entries": a_session_offline(session_id)}
    missing = send(asgi_server, batch)
    assert missing.status_code == 401 and missing.headers["WWW-Authenticate"].startswith("Bearer")
    assert send(asgi_server, batch, {"Authorization": "Bearer wrong"}).status_code == 401
    make_person("bob")
    reader = send(asgi_server, batch, bearer(token_for("bob", "brain:read")))
    assert reader.status_code == 403 and "sessions:write" in reader.headers["WWW-Authenticate"]
    assert not AgentSession.objects.exists()

    make_person("alice")
    answer = send(asgi_server, batch, bearer(token_for("alice", "sessions:write")))
    assert answer.status_code == 200 and answer.json()["logged"] == 5
    assert {e.logged_by for e in logged(session_id)} == {"alice"}
    assert send(asgi_server, batch, {"Authorization": "Bearer brain-token-123"}).json()["already_logged"] == 5


# -- issue 46: bounded batches ------------------------------------------------------------------------------


def test_a_drop_report_naming_more_sessions_than_a_request_may_is_refused_whole_and_writes_nothing(asgi_server):
    # Finding 1: 1,500 new session ids in `dropped` were 1,500 transactions, holding the web process for minutes.
    flood = {"entries": [], "dropped": {f"flood-{number}": 1 for number in range(1500)}, "drop_key": "k-1"}
    answer = send(asgi_server, flood)
    assert answer.status_code == 400, answer.text
    message = rest_error(answer)["message"]
    assert "dropped" in message and "100" in message
    assert not AgentSession.objects.exists() and not SessionEntry.objects.exists()


def test_a_gap_count_larger_than_a_spool_can_hold_is_refused(asgi_server):
    answer = send(asgi_server, {"entries": [], "dropped": {"s1": 10**15}, "drop_key": "k-1"})
    assert answer.status_code == 400 and "dropped" in rest_error(answer)["message"]
    assert not SessionEntry.objects.exists()


def test_a_person_past_their_share_of_batch_work_is_answered_429_with_retry_after(asgi_server, settings):
    settings.HYPERGUILD_BATCH_ITEMS_PER_MINUTE = 12
    make_person("bob")
    headers = bearer(token_for("bob", "sessions:write"))
    first, second = str(uuid.uuid4()), str(uuid.uuid4())
    assert send(asgi_server, {"entries": a_session_offline(first)}, headers).status_code == 200
    refused = send(asgi_server, {"entries": a_session_offline(second) * 2}, headers)  # 5 + 10 > 12
    assert refused.status_code == 429, refused.text
    assert int(refused.headers["Retry-After"]) >= 1
    assert "HYPERGUILD_BATCH_ITEMS_PER_MINUTE" in rest_error(refused)["message"]
    assert not logged(second)
    make_person("carol")  # another person's share is their own
    assert (
        send(
            asgi_server, {"entries": a_session_offline(second)}, bearer(token_for("carol", "sessions:write"))
        ).status_code
        == 200
    )


def test_a_batch_beyond_the_lane_is_answered_429_at_once_rather_than_queued(asgi_server):
    from hyperguild.lib.batches import batch_lane

    place = batch_lane.enter()  # another batch, running in this process
    assert place is not None
    try:
        busy = send(asgi_server, {"entries": a_session_offline("s1")})
        assert busy.status_code == 429 and busy.headers["Retry-After"] == "1"
        assert not AgentSession.objects.exists()
    finally:
        batch_lane.leave(place)
    assert send(asgi_server, {"entries": a_session_offline("s1")}).status_code == 200


def test_an_entry_or_a_gap_on_someone_elses_session_is_refused_by_index_and_the_rest_is_stored(asgi_server):
    # Finding 5: the first entries were committed, then the whole batch answered 403 and the plugin retried forever.
    make_person("alice")
    make_person("bob")
    alices, bobs = str(uuid.uuid4()), str(uuid.uuid4())
    assert (
        send(
            asgi_server, {"entries": a_session_offline(alices)[:1]}, bearer(token_for("alice", "sessions:write"))
        ).json()["logged"]
        == 1
    )
    mine = a_session_offline(bobs)
    intruder = line("UserPromptSubmit", alices, "2026-03-02T09:01:30Z", prompt="hello from bob", prompt_id="pb")
    batch = {"entries": [*mine[:2], intruder, *mine[2:]], "dropped": {alices: 2, bobs: 1}, "drop_key": "k-7"}
    answer = send(asgi_server, batch, bearer(token_for("bob", "sessions:write")))
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert [(item["index"], item["event"]) for item in body["refused"]] == [(2, "UserPromptSubmit")]
    assert "someone else" in body["refused"][0]["error"]
    assert [item["session"] for item in body["refused_gaps"]] == [alices]
    assert body["logged"] == 5 and body["gaps"] == {bobs: 1}
    assert [e.kind for e in logged(alices)] == ["start"]
    assert [e.kind for e in logged(bobs)] == ["gap", "start", "prompt", "test", "test", "stop"]


OUT_OF_RANGE_TIMES = [
    ("0001-01-01T00:00:00+14:00", "window"),
    ("9999-12-31T23:59:59-14:00", "window"),
    ("2026-03-02T09:00:00+23:59", "offset"),
    ("2026-03-02T09:00:00-15:00", "offset"),
]


@pytest.mark.parametrize("at,problem", OUT_OF_RANGE_TIMES)
def test_a_time_out_of_range_is_refused_by_index_and_the_session_still_reads(asgi_server, at, problem):
    # Finding 6: such a time was stored (or answered 500), and then every read of the session answered 500.
    session_id = str(uuid.uuid4())
    entries = a_session_offline(session_id)
    entries[1]["at"] = at
    answer = send(asgi_server, {"entries": entries})
    assert answer.status_code == 200, answer.text
    refused = answer.json()["refused"]
    assert [item["index"] for item in refused] == [1]
    assert refused[0]["error"].startswith("entries/1/at") and problem in refused[0]["error"]
    assert answer.json()["logged"] == 4
    read = httpx.get(f"{asgi_server}/sessions/{session_id}/entries", timeout=30)
    assert read.status_code == 200 and len(read.json()["entries"]) == 4
    assert httpx.get(f"{asgi_server}/sessions/{session_id}/", timeout=30).status_code in (200, 302)
