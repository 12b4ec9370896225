"""Acceptance 2 of issue 38: sessions see each note's state, stale notes rank lower, superseded notes leave.

A live server, the plugin's hook route and the MCP tools, over real HTTP; the project's code is a real git repo.
"""

from __future__ import annotations

import io
import uuid

import httpx
import pytest
from django.core.management import call_command

from brain.actions import do_ingest_note, do_supersede_note, do_undo_revision
from brain.models import Note
from brain.search import search
from sessions.models import AgentSession
from tests.conftest import call_tool
from tests.people.conftest import bearer, make_person, token_for
from tests.truth.conftest import STALE_AFTER_CHANGE, Ledgerly, add_project, git, make_repo, write_notes

pytestmark = pytest.mark.django_db(transaction=True)

SUCCESSOR_BODY = (
    "Ledgerly has no CSV export any more. "
    + "Reports are built from invoice totals, one per month, by the team. " * 6
    + "Use `invoice_total` for the totals."
)


@pytest.fixture
def project(live, code_root):
    repo = make_repo(code_root)
    add_project("ledgerly", str(repo))
    write_notes()
    new = Ledgerly(repo=repo, first=git(repo, "rev-parse", "HEAD")).change()
    call_command("project_sync", "ledgerly", stdout=io.StringIO())
    successor = do_ingest_note(
        title="Monthly reports",
        body=SUCCESSOR_BODY,
        wing="concepts",
        slug="reports",
        frontmatter={"project": "ledgerly"},
    )
    reviewer = make_person("rita", "reviewer")
    return {"repo": repo, "new": new, "successor": successor, "reviewer": reviewer, "base": live}


def session_start(base: str, cwd: str, token: str) -> str:
    body = {
        "session_id": str(uuid.uuid4()),
        "transcript_path": "/tmp/t.jsonl",
        "cwd": cwd,
        "hook_event_name": "SessionStart",
        "source": "startup",
    }
    answer = httpx.post(f"{base}/api/hooks/SessionStart", json=body, headers=bearer(token), timeout=30)
    assert answer.status_code == 200, answer.text
    return answer.json().get("hookSpecificOutput", {}).get("additionalContext", "")


def test_session_start_and_brain_context_mark_stale_notes_and_rank_them_below_verified_ones(project):
    base, new = project["base"], project["new"]
    make_person("sam")
    token = token_for("sam", "brain:read", "sessions:write")
    # Search alone puts a stale note above the verified one: the ranking below is the state's doing.
    order = [hit.slug for hit in search("ledgerly", limit=10).hits]
    assert order.index("spawn") < order.index("reports"), order

    text = session_start(base, str(project["repo"]), token)  # the full cwd resolves the project

    lines = [line for line in text.splitlines() if line.startswith("- ")]
    assert all("[verified at " in line or "[may be outdated: " in line or "[unverified" in line for line in lines)
    assert f"(spawn) [may be outdated: `spawn_worker` changed in {new[:7]}]" in text
    assert f"(reports) [verified at {new[:7]} (anchors hold)]" in text
    slugs = [line.split("(")[1].split(")")[0] for line in lines]
    stale_at = [i for i, slug in enumerate(slugs) if slug in STALE_AFTER_CHANGE]
    verified_at = [i for i, slug in enumerate(slugs) if slug not in STALE_AFTER_CHANGE]
    assert stale_at and verified_at and max(verified_at) < min(stale_at), slugs

    found = call_tool(
        f"{base}/mcp/brain", "brain_context", {"project_root": str(project["repo"])}, headers=bearer(token)
    )
    entries = found["structuredContent"]["entries"]
    assert found["structuredContent"]["project"] == "ledgerly"
    states = [entry["verification"]["state"] for entry in entries]
    assert states == sorted(states, key=lambda state: state == "stale") and "stale" in states
    spawn = next(entry for entry in entries if entry["slug"] == "spawn")
    assert spawn["verification"]["commit"] == new
    assert spawn["verification"]["evidence"][0]["anchor"] == "spawn_worker"


def test_a_superseded_note_leaves_context_and_search_and_brain_get_names_its_successor(project):
    base, successor, reviewer = project["base"], project["successor"], project["reviewer"]
    make_person("sam")
    token = bearer(token_for("sam", "brain:read", "sessions:write"))
    mcp = f"{base}/mcp/brain"
    old = Note.objects.get(slug="export")
    assert "(export)" in session_start(base, str(project["repo"]), token["Authorization"].split()[1])

    do_supersede_note(old, successor, reason="the CSV export was removed; reports replace it", user=reviewer)

    assert "(export)" not in session_start(base, str(project["repo"]), token["Authorization"].split()[1])
    context = call_tool(mcp, "brain_context", {"project_root": str(project["repo"])}, headers=token)
    assert "export" not in [entry["slug"] for entry in context["structuredContent"]["entries"]]
    default = call_tool(mcp, "brain_query", {"query": "CSV export"}, headers=token)["structuredContent"]
    assert "export" not in [hit["slug"] for hit in default["hits"]]
    every = call_tool(mcp, "brain_query", {"query": "CSV export", "include_superseded": True}, headers=token)
    hit = next(hit for hit in every["structuredContent"]["hits"] if hit["slug"] == "export")
    assert hit["superseded_by"] == "reports"

    got = call_tool(mcp, "brain_get", {"slug": "export"}, headers=token)["structuredContent"]
    day = Note.objects.get(slug="export").superseded_at.date().isoformat()
    assert (
        got["superseded"] == f"superseded by reports on {day} by rita: the CSV export was removed; reports replace it"
    )
    assert got["superseded_by"] == "reports" and got["verification"]["state"] == "stale"
    assert call_tool(mcp, "brain_get", {"slug": "reports"}, headers=token)["structuredContent"]["supersedes"] == [
        "export"
    ]

    # Undo restores it: back in search and context.
    do_undo_revision(Note.objects.get(slug="export").revisions.order_by("-id").first().group, user=reviewer)
    default = call_tool(mcp, "brain_query", {"query": "CSV export"}, headers=token)["structuredContent"]
    assert "export" in [hit["slug"] for hit in default["hits"]]
    assert call_tool(mcp, "brain_get", {"slug": "export"}, headers=token)["structuredContent"]["superseded"] is None


def test_brain_verify_and_brain_supersede_are_for_reviewers_and_staff_only(project):
    base = project["base"]
    mcp = f"{base}/mcp/brain"
    make_person("wendy", "curator")  # may write raw notes, holds no reviewer role
    writer = bearer(token_for("wendy", "brain:read", "brain:write"))
    reviewer = bearer(token_for("rita", "brain:read", "brain:write"))
    before = Note.objects.get(slug="export")

    for tool, arguments in (
        ("brain_verify", {"slug": "export"}),
        ("brain_supersede", {"slug": "export", "by": "reports", "reason": "gone"}),
    ):
        refused = call_tool(mcp, tool, arguments, headers=writer)
        assert refused["isError"] is True and "reviewer role" in refused["content"][0]["text"], refused
        service = call_tool(mcp, tool, arguments, headers={"Authorization": "Bearer brain-env"})
        assert service["isError"] is True and "names no person" in service["content"][0]["text"]
    after = Note.objects.get(slug="export")
    assert (after.superseded_by_id, after.version) == (None, before.version)

    verified = call_tool(mcp, "brain_verify", {"slug": "export"}, headers=reviewer)
    assert verified["isError"] is False, verified
    assert verified["structuredContent"]["verification"]["state"] == "stale"
    kinds = {(a["kind"], a["state"]) for a in verified["structuredContent"]["anchors"]}
    assert kinds == {("path", "gone"), ("symbol", "gone")}

    superseded = call_tool(
        mcp, "brain_supersede", {"slug": "export", "by": "reports", "reason": "gone"}, headers=reviewer
    )
    assert superseded["isError"] is False, superseded
    assert superseded["structuredContent"]["superseded_by"] == "reports"
    again = call_tool(mcp, "brain_supersede", {"slug": "export", "by": "reports", "reason": "gone"}, headers=reviewer)
    assert again["isError"] is True and "already superseded" in again["content"][0]["text"]
    itself = call_tool(mcp, "brain_supersede", {"slug": "reports", "by": "reports", "reason": "x"}, headers=reviewer)
    assert itself["isError"] is True and "cannot supersede itself" in itself["content"][0]["text"]


def test_a_stop_hook_in_the_project_queues_a_re_verification(project):
    from django_q.models import OrmQ

    make_person("sam")
    token = token_for("sam", "brain:read", "sessions:write")
    session_id = str(uuid.uuid4())
    body = {
        "session_id": session_id,
        "transcript_path": "/tmp/t.jsonl",
        "cwd": str(project["repo"] / "ledgerly"),
        "hook_event_name": "Stop",
    }
    OrmQ.objects.all().delete()
    assert (
        httpx.post(f"{project['base']}/api/hooks/Stop", json=body, headers=bearer(token), timeout=30).status_code == 200
    )
    assert AgentSession.objects.get(external_id=session_id).project.name == "ledgerly"
    tasks = [item.task for item in OrmQ.objects.all()]
    queued = [task for task in tasks if task["func"] == "brain.tasks.verify_project"]
    assert len(queued) == 1 and tuple(queued[0]["args"]) == (
        AgentSession.objects.get(external_id=session_id).project_id,
    )
