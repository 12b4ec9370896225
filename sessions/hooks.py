"""Claude Code hooks: the hook's JSON in, the hook's JSON out (`POST /api/hooks/<event>`).

The plugin in `claude-plugin/` posts each hook's input exactly as Claude Code
gives it. The session is Claude Code's `session_id`, the project root the
hook's `cwd`. Every entry carries an idempotency key derived from the
payload (its `prompt_id` or `tool_use_id` when it has one, else a hash of the
whole payload), so a retried hook never writes twice.

    SessionStart        start entry; answers the project's notes as additionalContext
                        (brain.context's ranking and abstention: nothing for an unrelated folder)
    UserPromptSubmit    prompt entry (redacted by do_log_entry, like every entry)
    PostToolUse         what matters, compactly: files written, test/build commands with
    PostToolUseFailure  their outcome, failed commands; never file contents; the rest is skipped
    Stop                stop entry (the reply ended); queues the retrospective if anything is new
    SessionEnd          end entry (the session ended); the same
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import time
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db.models import Max

from brain.context import ContextInputError, context
from hyperguild.lib.text import excerpt
from sessions.actions import check_session_id, do_log_checked_entry
from sessions.errors import HookRefused
from sessions.inputs import MAX_MESSAGE_CHARS
from sessions.models import AgentSession, SessionEntry

logger = logging.getLogger(__name__)

HOOK_EVENTS = ("SessionStart", "UserPromptSubmit", "PostToolUse", "PostToolUseFailure", "Stop", "SessionEnd")
CLIENT = {"name": "claude-code", "via": "hyperguild plugin hooks"}

MAX_PROMPT_CHARS = MAX_MESSAGE_CHARS  # a prompt is logged as one entry's message
MAX_COMMAND_CHARS = 500
MAX_ERROR_CHARS = 1500
MAX_SKILL_CHARS = 100
CONTEXT_NOTES = 8
CONTEXT_LINE_CHARS = 160
# A Stop fires after every reply: it queues the retrospective at most this often per session (SessionEnd does not wait).
RETROSPECTIVE_DEBOUNCE_SECONDS = 300
RETROSPECTIVE_MEMORY_SECONDS = 24 * 3600

FILE_TOOLS = frozenset({"Write", "Edit", "MultiEdit", "NotebookEdit"})
# Commands whose outcome is worth a line in the log: test runners first, then builds and checks.
TEST_COMMAND = re.compile(
    r"(?:^|[\s;&|(/])(?:pytest|py\.test|tox|nox|jest|vitest|mocha|rspec|phpunit|ctest|"
    r"go\s+test|cargo\s+(?:test|nextest)|(?:npm|yarn|pnpm|bun)\s+(?:run\s+)?test|mix\s+test|"
    r"dotnet\s+test|(?:python3?|uv\s+run)\s+-m\s+(?:pytest|unittest)|manage\.py\s+test|make\s+(?:test|check))\b"
)
BUILD_COMMAND = re.compile(
    r"(?:^|[\s;&|(/])(?:make|cargo\s+(?:build|check|clippy)|go\s+(?:build|vet)|(?:npm|yarn|pnpm|bun)\s+(?:run\s+)?"
    r"(?:build|lint|typecheck)|tsc|mvn|gradle|gradlew|dotnet\s+build|ruff|mypy|eslint|lint-imports)\b"
)


@dataclass
class HookOutcome:
    """What a hook did: the JSON for Claude Code, what was logged and whether a retrospective was queued."""

    answer: dict = field(default_factory=dict)
    logged: dict | None = None
    queued_retrospective: bool = False
    queued_verification: bool = False


def idempotency_key(event: str, payload: dict) -> str:
    natural = payload.get("prompt_id") if event == "UserPromptSubmit" else payload.get("tool_use_id")
    if isinstance(natural, str) and 0 < len(natural) <= 120:
        return f"hook:{event}:{natural}"
    canonical = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return f"hook:{event}:{hashlib.sha256(canonical.encode()).hexdigest()}"


def handle_hook(event: str, payload: Any, *, user=None, may_read_brain: bool = True) -> HookOutcome:
    """Log what the hook says and answer it; HookRefused (nothing written) for input it cannot use.

    `user` is the person whose token posted the hook (None: the service identity); the SessionStart
    context comes only to a caller that may read the brain (`brain:read`)."""
    if event not in HOOK_EVENTS:
        raise HookRefused(f"Unknown hook event {event!r}; this route takes {', '.join(HOOK_EVENTS)}.")
    if not isinstance(payload, dict):
        raise HookRefused("The body must be the hook's JSON object, as Claude Code sends it.")
    named = payload.get("hook_event_name")
    if named is not None and named != event:
        raise HookRefused(f"The payload is a {named} hook, posted to the {event} route.")
    session_id = payload.get("session_id")
    check_session_id(session_id)
    cwd = payload.get("cwd")
    if not isinstance(cwd, str) or not (cwd.startswith("/") or re.match(r"^[A-Za-z]:[\\/]", cwd)):
        raise HookRefused("cwd must be the absolute folder Claude Code runs in.")

    fields = entry_fields(event, payload, cwd)
    outcome = HookOutcome()
    if fields is not None:
        fields.update(
            idempotency_key=idempotency_key(event, payload),
            project=project_label(cwd),
            project_root=cwd[:1000],
            client=CLIENT,
        )
        outcome.logged = do_log_checked_entry(session_id, fields, source="rest", user=user)
        if event in ("Stop", "SessionEnd") and outcome.logged["created"]:
            outcome.queued_retrospective = queue_retrospective(session_id, final=event == "SessionEnd")
    if event == "Stop" or (event == "PostToolUse" and moves_head(payload)):
        outcome.queued_verification = queue_verification(session_id)
    if event == "SessionStart" and payload.get("source") != "resume" and may_read_brain:
        text = context_text(cwd)
        if text:
            outcome.answer = {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": text}}
    return outcome


def project_label(cwd: str) -> str:
    """The folder's name, for POSIX and Windows paths alike (`C:\\src\\ledgerly` → `ledgerly`)."""
    return re.split(r"[\\/]+", cwd.rstrip("/\\"))[-1][:200]


def entry_fields(event: str, payload: dict, cwd: str) -> dict | None:
    """The session entry a hook becomes, or None when it is not worth one."""
    if event == "SessionStart":
        source = str(payload.get("source") or "startup")[:64]
        return {"kind": "start", "phase": source, "message": f"Claude Code session started ({source}) in {cwd}"}
    if event == "UserPromptSubmit":
        prompt = payload.get("prompt")
        if not isinstance(prompt, str) or not prompt.strip():
            return None
        fields: dict[str, Any] = {"kind": "prompt", "message": prompt[:MAX_PROMPT_CHARS]}
        if len(prompt) > MAX_PROMPT_CHARS:
            fields["data"] = {"truncated_from_chars": len(prompt)}
        return fields
    if event in ("PostToolUse", "PostToolUseFailure"):
        return tool_fields(payload, cwd, failed=event == "PostToolUseFailure")
    if event == "Stop":
        return {"kind": "stop", "message": "Claude finished its reply"}
    reason = str(payload.get("reason") or "other")[:64]
    return {"kind": "end", "phase": reason, "message": f"Claude Code session ended ({reason})"}


def tool_fields(payload: dict, cwd: str, *, failed: bool) -> dict | None:
    tool = payload.get("tool_name")
    tool_input = payload.get("tool_input") if isinstance(payload.get("tool_input"), dict) else {}
    status = "fail" if failed else "pass"
    if tool in FILE_TOOLS:
        path = tool_input.get("file_path") or tool_input.get("notebook_path")
        if not isinstance(path, str) or not path:
            return None
        shown = os.path.relpath(path, cwd) if path.startswith(cwd.rstrip("/") + "/") else path
        verb = "wrote" if tool == "Write" else "edited"
        message = f"{verb} {shown}" if not failed else f"could not change {shown}: {error_text(payload)}"
        return {"kind": "file", "skill": tool, "status": status, "message": message, "data": {"tool": tool, "file": shown}}
    if tool != "Bash":
        return None
    command = tool_input.get("command")
    if not isinstance(command, str) or not command.strip():
        return None
    kind = "test" if TEST_COMMAND.search(command) else "build" if BUILD_COMMAND.search(command) else None
    if kind is None and not failed:
        return None  # ls, cat, grep…: not worth a line
    one_line = " ".join(command.split())[:MAX_COMMAND_CHARS]
    fields: dict[str, Any] = {
        "kind": kind or "error",
        "status": status,
        "message": one_line if not failed else f"{one_line}\n{error_text(payload)}",
        "data": {"tool": "Bash", "command": one_line},
    }
    if kind:
        # The same command is the same "skill": a failure then a pass is what the retrospective looks for.
        fields["skill"] = f"{kind}: {one_line}"[:MAX_SKILL_CHARS]
    return fields


def error_text(payload: dict) -> str:
    error = payload.get("error")
    text = error if isinstance(error, str) else json.dumps(error, ensure_ascii=False) if error else "failed"
    # The end of a failure says most (the assertion, the summary line).
    return text[-MAX_ERROR_CHARS:]


def context_text(project: str) -> str:
    """The project's notes for the model, compact and capped; '' when the brain knows nothing about it.

    `project` is the session's full cwd: brain.context resolves the Project it belongs to. Every line
    carries the note's state ("verified at 1a2b3c4", "may be outdated: …", or why it is unverified).
    """
    try:
        found = context(project, limit=CONTEXT_NOTES)
    except ContextInputError:
        return ""
    except Exception:  # the start is logged already; context is a bonus that must not fail the hook
        logger.exception("could not rank the brain's notes for project %s", project)
        return ""
    entries = found["entries"]
    if not entries:
        return ""
    budget = settings.HYPERGUILD_HOOK_CONTEXT_CHARS
    text = (
        f"hyperguild brain: the team's notes for project {found['project']!r}, most relevant first. "
        "Read one with brain_get <slug>; search more with brain_query.\n"
    )
    for entry in entries:
        head = f"- {entry['title']} ({entry['slug']}) [{entry['verification']['label']}]: "
        # The state is never cut off: the excerpt gives way.
        line = excerpt(head + " ".join(entry["excerpt"].split()), max(CONTEXT_LINE_CHARS, len(head) + 40)) + "\n"
        if len(text) + len(line) > budget:
            break
        text += line
    return text.rstrip() if "\n- " in text else ""


# Bash commands after which the branch head may have moved: the project's notes are re-verified.
GIT_MOVES_HEAD = re.compile(r"\bgit\s+(?:commit|merge|pull|rebase|cherry-pick|revert|reset|checkout|switch|am)\b")
VERIFY_DEBOUNCE_SECONDS = 30


def moves_head(payload: dict) -> bool:
    tool_input = payload.get("tool_input") if isinstance(payload.get("tool_input"), dict) else {}
    command = tool_input.get("command")
    return payload.get("tool_name") == "Bash" and isinstance(command, str) and bool(GIT_MOVES_HEAD.search(command))


def queue_verification(session_id: str) -> bool:
    """Queue a sync of the session's project (brain.tasks.verify_project) when it has a repository.

    A sync whose branch head did not move costs one `git rev-parse`; still, at most one is queued per
    project every VERIFY_DEBOUNCE_SECONDS (docs/truth.md).
    """
    project = AgentSession.objects.filter(external_id=session_id).values_list("project_id", "project__repo").first()
    if project is None or project[0] is None or not project[1]:
        return False
    if not cache.add(f"hyperguild:hook-verify:{project[0]}", True, VERIFY_DEBOUNCE_SECONDS):
        return False
    from django_q.tasks import async_task

    async_task("brain.tasks.verify_project", project[0], task_name=f"verify-project-{project[0]}")
    return True


def queue_retrospective(session_id: str, *, final: bool) -> bool:
    """Queue the session's retrospective (django-q2) when there is something new to look back on.

    Nothing is queued when the setting is off, or when no entry but stops and ends came since the
    last one this process queued. A Stop comes after every reply, so it queues at most once per
    RETROSPECTIVE_DEBOUNCE_SECONDS; SessionEnd is not held back. The retrospective is idempotent,
    so a second run (another web process, a worker retry) only costs time.
    """
    if not settings.HYPERGUILD_HOOK_RETROSPECTIVE:
        return False
    latest = (
        SessionEntry.objects.filter(session__external_id=session_id)
        .exclude(kind__in=("stop", "end"))
        .aggregate(latest=Max("seq"))["latest"]
        or 0
    )
    key = f"hyperguild:hook-retrospective:{session_id}"
    last = cache.get(key)
    if last is not None:
        last_seq, queued_at = last
        if last_seq == latest:
            return False
        if not final and time.time() - queued_at < RETROSPECTIVE_DEBOUNCE_SECONDS:
            return False
    cache.set(key, (latest, time.time()), RETROSPECTIVE_MEMORY_SECONDS)
    from django_q.tasks import async_task

    async_task("sessions.tasks.retrospective", session_id, task_name=f"retrospective-{session_id}"[:100])
    return True
