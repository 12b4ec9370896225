"""Claude Code hooks: the hook's JSON in, the hook's JSON out (`POST /api/hooks/<event>`).

The plugin in `claude-plugin/` posts each hook's input as Claude Code gives
it, with one key added: `hyperguild_hook_id`, an id for that run of the hook.
The session is Claude Code's `session_id`, the project root the hook's `cwd`.
Every entry carries an idempotency key derived from the payload (its
`prompt_id` or `tool_use_id` when it has one, else its `hyperguild_hook_id`,
else a hash of the whole payload), so a retried hook never writes twice.

    SessionStart        start entry; answers the project's notes as additionalContext
                        (brain.context's ranking and abstention: nothing for an unrelated folder)
    UserPromptSubmit    prompt entry (redacted by do_log_entry, like every entry)
    PostToolUse         what matters, compactly: files written, test/build commands with
    PostToolUseFailure  their outcome, failed commands; never file contents; the rest is skipped
    PreCompact          compact entry (phase: manual or auto): where the session's context was cut
    Stop                stop entry (the reply ended); queues the retrospective if anything is new
    SessionEnd          end entry (the session ended); the same

What the plugin could not deliver (the service away, busy or failing) waits in its spool on the
user's machine and comes later, oldest first, to `POST /api/hooks/spool` (`replay_spool`): each
entry keeps the time it happened (`occurred_at`), a replay of one that did arrive writes nothing,
and entries the spool dropped over its cap leave a `gap` entry in their session saying how many.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Required, TypedDict

from django.conf import settings
from django.contrib.auth.models import User
from django.core.cache import cache
from django.db import transaction
from django.db.models import Max
from django.utils import timezone
from django_q.tasks import async_task
from jsonschema import Draft202012Validator, ValidationError

from brain.context import ContextInputError, context
from hyperguild.lib.text import excerpt
from sessions.actions import LoggedEntry, check_session_id, do_log_checked_entry
from sessions.errors import EntryRefused, HookRefused, SessionNotYours
from sessions.inputs import MAX_MESSAGE_CHARS, SESSION_ID_PATTERN, SPOOL_BATCH_SCHEMA, time_in_range
from sessions.models import AgentSession, SessionEntry

logger = logging.getLogger(__name__)

HOOK_EVENTS = (
    "SessionStart",
    "UserPromptSubmit",
    "PostToolUse",
    "PostToolUseFailure",
    "PreCompact",
    "Stop",
    "SessionEnd",
)
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

    answer: dict[str, Any] = field(default_factory=dict)
    logged: LoggedEntry | None = None
    queued_retrospective: bool = False
    queued_verification: bool = False


HOOK_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,100}$")


def idempotency_key(event: str, payload: dict[str, Any]) -> str:
    """Claude Code's own id of the prompt or tool use; else the id the plugin's hook script gives each hook it
    runs (`hyperguild_hook_id`: two identical Stops are two entries, a late copy from the spool is none);
    else a hash of the whole input."""
    natural = payload.get("prompt_id") if event == "UserPromptSubmit" else payload.get("tool_use_id")
    if isinstance(natural, str) and 0 < len(natural) <= 120:
        return f"hook:{event}:{natural}"
    hook_id = payload.get("hyperguild_hook_id")
    if isinstance(hook_id, str) and HOOK_ID.match(hook_id):
        return f"hook:{event}:run:{hook_id}"
    canonical = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return f"hook:{event}:{hashlib.sha256(canonical.encode()).hexdigest()}"


def handle_hook(
    event: str,
    payload: Any,
    *,
    user: User | None = None,
    may_read_brain: bool = True,
    occurred_at: datetime | None = None,
) -> HookOutcome:
    """Log what the hook says and answer it; HookRefused (nothing written) for input it cannot use.

    `user` is the person whose token posted the hook (None: the service identity); the SessionStart
    context comes only to a caller that may read the brain (`brain:read`). `occurred_at` is when the
    hook ran, for one that comes late from the plugin's spool (None: now)."""
    if event not in HOOK_EVENTS:
        raise HookRefused(f"Unknown hook event {event!r}; this route takes {', '.join(HOOK_EVENTS)}.")
    if not isinstance(payload, dict):
        raise HookRefused("The body must be the hook's JSON object, as Claude Code sends it.")
    named = payload.get("hook_event_name")
    if named is not None and named != event:
        raise HookRefused(f"The payload is a {named} hook, posted to the {event} route.")
    session_id = check_session_id(payload.get("session_id"))
    cwd = payload.get("cwd")
    if not isinstance(cwd, str) or not (cwd.startswith("/") or re.match(r"^[A-Za-z]:[\\/]", cwd)):
        raise HookRefused("cwd must be the absolute folder Claude Code runs in.")

    fields = entry_fields(event, payload, cwd)
    outcome = HookOutcome()
    if fields is not None:
        fields["idempotency_key"] = idempotency_key(event, payload)
        fields["project"] = project_label(cwd)
        fields["project_root"] = cwd[:1000]
        fields["client"] = CLIENT
        outcome.logged = do_log_checked_entry(session_id, fields, source="rest", user=user, occurred_at=occurred_at)
        if event in ("Stop", "SessionEnd") and outcome.logged["created"]:
            outcome.queued_retrospective = queue_retrospective(session_id, final=event == "SessionEnd")
    if event == "Stop" or (event == "PostToolUse" and moves_head(payload)):
        outcome.queued_verification = queue_verification(session_id)
    if event == "SessionStart" and payload.get("source") != "resume" and may_read_brain:
        text = context_text(cwd)
        if text:
            outcome.answer = {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": text}}
    return outcome


@dataclass
class SpoolReplay:
    """What a batch from the plugin's spool became: counts, what was refused (entries by index, gaps by
    session) and the gaps logged."""

    received: int = 0
    logged: int = 0
    already_logged: int = 0
    not_worth_an_entry: int = 0
    refused: list[dict[str, Any]] = field(default_factory=list)
    gaps: dict[str, int] = field(default_factory=dict)
    refused_gaps: list[dict[str, Any]] = field(default_factory=list)
    retrospectives_queued: int = 0


@dataclass
class SpoolLine:
    """One entry of a spool batch: its hook, input and time, or why its time cannot be taken."""

    event: str
    input: dict[str, Any]
    at: datetime | None
    problem: str = ""


@dataclass
class SpoolBatch:
    """A checked spool body: its lines, the drop counts worth logging and the drop report's key."""

    lines: list[SpoolLine]
    dropped: dict[str, int]
    drop_key: str

    @property
    def items(self) -> int:
        """The work it asks for (entries plus gap entries), counted against the person's batch budget."""
        return len(self.lines) + len(self.dropped)


_SPOOL_BATCH = Draft202012Validator(SPOOL_BATCH_SCHEMA)


def replay_spool(body: Any, *, user: User | None = None) -> SpoolReplay:
    """Log a batch of hooks the plugin could not deliver, in the order it sends them (oldest first).

    Each entry is handled as its hook would have been when it ran (`handle_hook`, at its original
    time, without the SessionStart context nobody waits for any more); its idempotency key makes a
    replay of one that did arrive write nothing. An entry that is refused (the hook route would refuse
    it, its time is out of range, its session is someone else's) is reported by index and the rest are
    stored: one bad line must not hold the spool up forever. The sessions whose entries the spool's cap
    dropped get a `gap` entry with the count, logged once per `drop_key` (refused by session likewise).
    The batch is one transaction, each item a savepoint in it. A batch that is not the spool's shape
    (over its ceilings, or a time that is not one) is refused whole: HookRefused.
    """
    batch = body if isinstance(body, SpoolBatch) else check_spool_batch(body)
    lines, dropped, drop_key = batch.lines, batch.dropped, batch.drop_key
    replay = SpoolReplay(received=len(lines))
    with transaction.atomic():
        timed = [(line.at, line.input.get("session_id")) for line in lines if line.at is not None]
        for session_id, count in dropped.items():
            # What was dropped came before what is left: the gap sits at the oldest time the batch knows of.
            times = [at for at, of in timed if of == session_id] or [at for at, _ in timed]
            try:
                logged = do_log_checked_entry(
                    session_id,
                    gap_fields(count, drop_key),
                    source="rest",
                    user=user,
                    occurred_at=min(times, default=None),
                )
            except (EntryRefused, SessionNotYours) as exc:
                replay.refused_gaps.append({"session": session_id, "error": exc.message})
                continue
            if logged["created"]:
                replay.gaps[session_id] = count
        for index, line in enumerate(lines):
            try:
                if line.problem:
                    raise HookRefused(line.problem)
                outcome = handle_hook(line.event, line.input, user=user, may_read_brain=False, occurred_at=line.at)
            except (HookRefused, EntryRefused, SessionNotYours) as exc:
                replay.refused.append({"index": index, "event": line.event, "error": exc.message})
                continue
            if outcome.logged is None:
                replay.not_worth_an_entry += 1
            elif outcome.logged["created"]:
                replay.logged += 1
            else:
                replay.already_logged += 1
            replay.retrospectives_queued += outcome.queued_retrospective
    return replay


def _schema_problem(error: ValidationError) -> str:
    """A schema error in a sentence, without echoing a large value back (a ceiling's error names its count)."""
    where = "/".join(str(part) for part in error.absolute_path) or "body"
    if error.validator in ("maxItems", "maxProperties"):
        noun = "entries" if error.validator == "maxItems" else "sessions"
        return (
            f"{where}: at most {error.validator_value} {noun} a request (got {len(error.instance)}); "
            "send the rest in the next request."
        )
    if error.validator == "maximum":
        return f"{where}: at most {error.validator_value} (got {error.instance})."
    return f"{where}: {error.message}"


def check_spool_batch(body: Any) -> SpoolBatch:
    """The batch's lines (each with its time, or why it has none that can be taken), the drop counts worth
    logging, and the drop report's key. HookRefused for a batch that is not the spool's shape."""
    problems = sorted(_SPOOL_BATCH.iter_errors(body), key=lambda e: list(e.absolute_path))
    if problems:
        raise HookRefused(f"Not a batch from the plugin's spool: {_schema_problem(problems[0])}")
    lines = []
    now = timezone.now()
    for index, item in enumerate(body["entries"]):
        try:
            occurred_at = datetime.fromisoformat(item["at"].replace("Z", "+00:00"))
        except ValueError:
            occurred_at = None
        if occurred_at is None or occurred_at.tzinfo is None:
            raise HookRefused(f"entries/{index}/at: {item['at']!r} is not an ISO 8601 time with its zone.")
        lines.append(SpoolLine(item["event"], item["input"], *time_in_range(occurred_at, now, f"entries/{index}/at")))
    # The plugin reads session ids out of the lines it drops; one it could not read cannot be told.
    dropped = {
        session_id: count
        for session_id, count in (body.get("dropped") or {}).items()
        if count > 0 and re.fullmatch(SESSION_ID_PATTERN, session_id)
    }
    drop_key = body.get("drop_key") or ""
    if dropped and not drop_key:
        raise HookRefused("drop_key: a drop report needs its key, so that sending it twice logs it once.")
    return SpoolBatch(lines, dropped, drop_key)


class GapEntry(TypedDict):
    """The fields of the `gap` entry that says how many hook entries the plugin's spool dropped."""

    kind: str
    status: str
    message: str
    data: dict[str, Any]
    idempotency_key: str
    client: dict[str, str]


def gap_fields(count: int, drop_key: str) -> GapEntry:
    noun = "entry" if count == 1 else "entries"
    return {
        "kind": "gap",
        "status": "dropped",
        "message": (
            f"{count} hook {noun} of this session never arrived: the plugin's offline spool dropped them "
            "(its oldest, when it was full: HYPERGUILD_SPOOL_MAX_BYTES; or a line the service could not take)"
        ),
        "data": {"dropped": count, "by": "the plugin's offline spool"},
        "idempotency_key": f"spool-gap:{drop_key}",
        "client": CLIENT,
    }


class HookEntry(TypedDict, total=False):
    """The session entry a hook becomes: the fields of `sessions.inputs.EntryFields` a hook fills in."""

    kind: Required[str]
    skill: str
    phase: str
    status: str
    message: str
    data: dict[str, object]
    idempotency_key: str
    project: str
    project_root: str
    client: dict[str, str]


def project_label(cwd: str) -> str:
    """The folder's name, for POSIX and Windows paths alike (`C:\\src\\ledgerly` → `ledgerly`)."""
    return re.split(r"[\\/]+", cwd.rstrip("/\\"))[-1][:200]


def entry_fields(event: str, payload: dict[str, Any], cwd: str) -> HookEntry | None:
    """The session entry a hook becomes, or None when it is not worth one."""
    if event == "SessionStart":
        source = str(payload.get("source") or "startup")[:64]
        return {"kind": "start", "phase": source, "message": f"Claude Code session started ({source}) in {cwd}"}
    if event == "UserPromptSubmit":
        prompt = payload.get("prompt")
        if not isinstance(prompt, str) or not prompt.strip():
            return None
        fields: HookEntry = {"kind": "prompt", "message": prompt[:MAX_PROMPT_CHARS]}
        if len(prompt) > MAX_PROMPT_CHARS:
            fields["data"] = {"truncated_from_chars": len(prompt)}
        return fields
    if event in ("PostToolUse", "PostToolUseFailure"):
        return tool_fields(payload, cwd, failed=event == "PostToolUseFailure")
    if event == "Stop":
        return {"kind": "stop", "message": "Claude finished its reply"}
    if event == "PreCompact":
        trigger = str(payload.get("trigger") or "unknown")[:64]
        message = f"Claude Code compacts the context ({trigger})"
        instructions = payload.get("custom_instructions")
        if isinstance(instructions, str) and instructions.strip():
            message += f": {instructions}"
        return {"kind": "compact", "phase": trigger, "message": message[:MAX_PROMPT_CHARS]}
    reason = str(payload.get("reason") or "other")[:64]
    return {"kind": "end", "phase": reason, "message": f"Claude Code session ended ({reason})"}


def tool_fields(payload: dict[str, Any], cwd: str, *, failed: bool) -> HookEntry | None:
    tool = payload.get("tool_name")
    tool_input = payload.get("tool_input")
    tool_input = tool_input if isinstance(tool_input, dict) else {}
    status = "fail" if failed else "pass"
    if tool in FILE_TOOLS:
        path = tool_input.get("file_path") or tool_input.get("notebook_path")
        if not isinstance(path, str) or not path:
            return None
        shown = os.path.relpath(path, cwd) if path.startswith(cwd.rstrip("/") + "/") else path
        verb = "wrote" if tool == "Write" else "edited"
        message = f"{verb} {shown}" if not failed else f"could not change {shown}: {error_text(payload)}"
        return {
            "kind": "file",
            "skill": tool,
            "status": status,
            "message": message,
            "data": {"tool": tool, "file": shown},
        }
    if tool != "Bash":
        return None
    command = tool_input.get("command")
    if not isinstance(command, str) or not command.strip():
        return None
    kind = "test" if TEST_COMMAND.search(command) else "build" if BUILD_COMMAND.search(command) else None
    if kind is None and not failed:
        return None  # ls, cat, grep…: not worth a line
    one_line = " ".join(command.split())[:MAX_COMMAND_CHARS]
    fields: HookEntry = {
        "kind": kind or "error",
        "status": status,
        "message": one_line if not failed else f"{one_line}\n{error_text(payload)}",
        "data": {"tool": "Bash", "command": one_line},
    }
    if kind:
        # The same command is the same "skill": a failure then a pass is what the retrospective looks for.
        fields["skill"] = f"{kind}: {one_line}"[:MAX_SKILL_CHARS]
    return fields


def error_text(payload: dict[str, Any]) -> str:
    error = payload.get("error")
    text = error if isinstance(error, str) else json.dumps(error, ensure_ascii=False) if error else "failed"
    # The end of a failure says most (the assertion, the summary line).
    return text[-MAX_ERROR_CHARS:]


def context_text(project: str) -> str:
    """The project's notes for the model, compact and capped; '' when the brain knows nothing about it.

    `project` is the session's full cwd: brain.context resolves the Project it belongs to. Every line
    carries the note's state ("verified at 1a2b3c4", "may be outdated: …", or why it is unverified), but for a
    note that claims nothing about code (brain.truth: no label).
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
        label = entry["verification"]["label"]
        head = f"- {entry['title']} ({entry['slug']})" + (f" [{label}]" if label else "") + ": "
        # The state is never cut off: the excerpt gives way.
        line = excerpt(head + " ".join(entry["excerpt"].split()), max(CONTEXT_LINE_CHARS, len(head) + 40)) + "\n"
        if len(text) + len(line) > budget:
            break
        text += line
    return text.rstrip() if "\n- " in text else ""


# Bash commands after which the branch head may have moved: the project's notes are re-verified.
GIT_MOVES_HEAD = re.compile(r"\bgit\s+(?:commit|merge|pull|rebase|cherry-pick|revert|reset|checkout|switch|am)\b")
VERIFY_DEBOUNCE_SECONDS = 30


def moves_head(payload: dict[str, Any]) -> bool:
    tool_input = payload.get("tool_input")
    tool_input = tool_input if isinstance(tool_input, dict) else {}
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

    # On behalf of the session's owner (the person whose hooks caused it): the task runs as them and charges them.
    owner_id = AgentSession.objects.filter(external_id=session_id).values_list("started_by_id", flat=True).first()
    async_task(
        "sessions.tasks.retrospective",
        session_id,
        requested_by_id=owner_id,
        task_name=f"retrospective-{session_id}"[:100],
    )
    return True
