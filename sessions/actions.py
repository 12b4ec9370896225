"""Every write of the sessions app: session log entries and training-data curation."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypedDict

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.utils import timezone
from jsonschema import Draft202012Validator

from brain.actions import do_find_or_make_project
from brain.models import Project
from hyperguild.lib.batches import new_project_allowance, person_key
from hyperguild.lib.limits import hostile_value_problem
from hyperguild.lib.typed import JSON
from sessions.errors import EntryRefused, FlaggedExample, InvalidExampleEdit, SessionNotFound, SessionNotYours
from sessions.inputs import (
    ENTRY_FIELDS_SCHEMA,
    MAX_CLIENT_BYTES,
    MAX_ENTRY_DATA_BYTES,
    SESSION_ID_RULE,
    SESSION_ID_SCHEMA,
)
from sessions.models import AgentSession, EntrySource, RetrospectiveRun, SessionEntry, TrainingExample
from sessions.redaction import redact_fields, redact_value

if TYPE_CHECKING:  # the type only: replay runs tests, importing it here is not needed
    from sessions.replay import ReplayOutcome

MESSAGE_FIELDS = ("prompt", "completion", "chosen", "rejected")
EDITABLE_FIELDS = (*MESSAGE_FIELDS, "review_note")
ROLES = {"system", "user", "assistant", "tool"}
# What the redaction leaves in a text (sessions.redaction.REDACTED).
REDACTION_MARKER = re.compile(r"\[REDACTED:([A-Za-z0-9_]+)\]")


def _session_for_update(
    external_id: str, *, project: str | None, project_root: str | None, client: JSON | None, user: User | None = None
) -> AgentSession:
    """Create the session on first use, then lock its row for the rest of the transaction."""
    try:
        # A savepoint so a lost creation race does not abort the outer transaction.
        with transaction.atomic():
            # The project is looked for (or made) only when the session is new, not on every entry.
            if not AgentSession.objects.filter(external_id=external_id).exists():
                AgentSession.objects.get_or_create(
                    external_id=external_id,
                    defaults={
                        "project": _project(project, project_root, user),
                        "project_root": project_root or "",
                        "client": client or {},
                    },
                )
    except IntegrityError:
        pass  # another caller created it a moment ago; the locked read below finds it
    session = AgentSession.objects.select_for_update().get(external_id=external_id)
    # Checked under the lock, before the idempotency keys are looked at: another person can neither append
    # nor take a key (a prompt id) first, nor learn whether one is there.
    check_session_owner(session, user)
    # Metadata fills in what is missing; it never overwrites what an earlier call said.
    changed: list[str] = []
    if (project or project_root) and session.project_id is None:
        session.project, changed = _project(project, project_root, user), [*changed, "project"]
    if project_root and not session.project_root:
        session.project_root, changed = project_root, [*changed, "project_root"]
    if client and not session.client:
        session.client, changed = client, [*changed, "client"]
    if getattr(user, "pk", None) and session.started_by_id is None:
        session.started_by, changed = user, [*changed, "started_by"]
    if changed:
        session.save(update_fields=[*changed, "updated_at"])
    return session


def check_session_owner(session: AgentSession, user: User | None) -> None:
    """A session belongs to the person whose credential started it: SessionNotYours for anyone else.

    The service identity (user None: an environment token, an open endpoint, an import) may append to any
    session. A person may append to their own session, or to a new one (no entries yet), which becomes theirs;
    a session the service already logged into stays the service's.
    """
    if user is None or not user.pk:
        return
    if session.started_by_id == user.pk:
        return
    if session.started_by_id is None and session.last_seq == 0:
        return  # a new session: the caller's (set by the caller below)
    raise SessionNotYours(
        f"Session {session.external_id!r} was started by someone else; only they can log to it. "
        "Start a session of your own (a new session_id)."
    )


def may_read_session(session: AgentSession, user: User | None) -> bool:
    """Its owner and staff read a session's entries (the service identity, user None, reads every one)."""
    if user is None or not user.pk:
        return user is None
    return bool(user.is_staff or session.started_by_id == user.pk)


def session_for(session_id: str, user: User | None, *, must_exist: bool = True) -> AgentSession | None:
    """The session a skill names, for `user`: only its owner, staff and the service (None) reach it.

    Another person's session is answered as if it did not exist (SessionNotFound), as REST's 404 does,
    so a skill naming it neither reads its entries nor writes anything from them. `must_exist` False:
    an id nobody logged under yet is None (a skill may tag a new session), not an error.
    """
    session = AgentSession.objects.filter(external_id=session_id).select_related("started_by").first()
    if session is None and not must_exist:
        return None
    if session is None or not may_read_session(session, user):
        raise SessionNotFound(f"No session {session_id!r} of yours; log entries with session_log first.")
    return session


def check_session_named(session_id: str, user: User | None) -> None:
    """A skill that names `session_id` (tags its run with it): refused when it is another person's session."""
    if session_id:
        session_for(session_id, user, must_exist=False)


# -- the session-entry contract (sessions.inputs): one definition for every door (MCP session_log, REST) ----

_SESSION_ID = Draft202012Validator(SESSION_ID_SCHEMA)
_ENTRY_FIELDS = Draft202012Validator(ENTRY_FIELDS_SCHEMA)


def _project(name: str | None, root: str | None, user: User | None) -> Project | None:
    """The brain Project a session names or runs in (see brain.actions.do_find_or_make_project); a new one
    only within the person's HYPERGUILD_NEW_PROJECTS_PER_HOUR, else None (the session is logged without)."""
    found = do_find_or_make_project(name=name or "", cwd=root or "", create=False)
    if found is not None or not (name or root):
        return found
    if new_project_allowance.take(person_key(user), 1):
        return None
    return do_find_or_make_project(name=name or "", cwd=root or "")


def check_session_id(session_id: Any) -> str:
    if not _SESSION_ID.is_valid(session_id):
        raise EntryRefused(f"session_id: {SESSION_ID_RULE}", details={"session_id": SESSION_ID_RULE})
    return session_id


def check_entry_fields(fields: Any) -> None:
    """`fields` against ENTRY_FIELDS_SCHEMA, then the size limits; EntryRefused names each bad field."""
    problems = sorted(_ENTRY_FIELDS.iter_errors(fields), key=lambda e: list(e.absolute_path))
    if problems:
        details = {"/".join(str(p) for p in e.absolute_path) or "body": e.message for e in problems}
        raise EntryRefused("; ".join(f"{field}: {message}" for field, message in details.items()), details=details)
    # NUL, lone surrogates and NaN cannot be stored (PostgreSQL would refuse them with SQL in the message).
    for name, value in fields.items():
        problem = hostile_value_problem(value, name)
        if problem:
            raise EntryRefused(problem, details={name: problem})
    if "data" in fields:
        size = len(json.dumps(fields["data"], ensure_ascii=False).encode())
        if size > MAX_ENTRY_DATA_BYTES:
            message = f"data is {size} bytes; the limit is {MAX_ENTRY_DATA_BYTES}. Log a summary instead."
            raise EntryRefused(message, details={"data": message})
    client = fields.get("client")
    if client is not None and len(json.dumps(client).encode()) > MAX_CLIENT_BYTES:
        message = f"client metadata is over {MAX_CLIENT_BYTES} bytes; send name and version only."
        raise EntryRefused(message, details={"client": message})


class LoggedEntry(TypedDict):
    """The entry an outside door logged (or found: a retried idempotency_key): what session_log and REST answer."""

    session_id: str
    seq: int
    created: bool  # False when an idempotency_key matched an earlier entry
    entry_id: int


def do_log_checked_entry(
    session_id: str,
    fields: Mapping[str, Any],
    *,
    source: str,
    user: User | None = None,
    occurred_at: datetime | None = None,
) -> LoggedEntry:
    """Validate an entry from outside (MCP session_log, REST) against the one limit table, then log it.

    Raises EntryRefused, with nothing written, when the id or a field breaks a limit. `occurred_at`
    is when it happened, for an entry that arrives late (a hook replayed from the plugin's spool).
    """
    check_session_id(session_id)
    check_entry_fields(fields)
    entry, created = do_log_entry(
        session_id,
        kind=fields["kind"],
        skill=fields.get("skill"),
        phase=fields.get("phase"),
        status=fields.get("status"),
        message=fields.get("message"),
        data=fields.get("data"),
        idempotency_key=fields.get("idempotency_key"),
        project=fields.get("project"),
        project_root=fields.get("project_root"),
        client=fields.get("client"),
        source=source,
        occurred_at=occurred_at,
        user=user,
    )
    return LoggedEntry(session_id=session_id, seq=entry.seq, created=created, entry_id=entry.pk)


def do_log_entry(
    session_id: str,
    *,
    kind: str,
    skill: str | None = None,
    phase: str | None = None,
    status: str | None = None,
    message: str | None = None,
    data: Any = None,
    idempotency_key: str | None = None,
    project: str | None = None,
    project_root: str | None = None,
    client: dict[str, Any] | None = None,
    source: str = EntrySource.MCP,
    raw_line: str = "",
    occurred_at: datetime | None = None,
    user: User | None = None,
) -> tuple[SessionEntry, bool]:
    """Append one entry to `session_id` (created on first use); returns (entry, created).

    Sequence numbers are gap-free per session: the session row is locked
    with SELECT ... FOR UPDATE for the whole transaction, so concurrent
    callers take turns reading and raising `last_seq`. A sequence object or
    MAX(seq)+1 would leave gaps on rollback or hand out duplicates under
    concurrency. The idempotency key is checked under the same lock, so two
    concurrent retries of one call still write a single entry.
    """
    with transaction.atomic():
        session = _session_for_update(session_id, project=project, project_root=project_root, client=client, user=user)
        if idempotency_key is not None:
            existing = session.entries.filter(idempotency_key=idempotency_key).first()
            if existing is not None:
                return existing, False
        seq = session.last_seq + 1
        session.last_seq = seq
        session.save(update_fields=["last_seq", "updated_at"])
        text, redactions = redact_fields({"message": message or "", "data": data, "raw_line": raw_line})
        entry = SessionEntry.objects.create(
            session=session,
            seq=seq,
            kind=kind,
            skill=skill or "",
            phase=phase or "",
            status=status or "",
            message=text["message"],
            data=text["data"],
            redactions=redactions,
            idempotency_key=idempotency_key,
            source=source,
            raw_line=text["raw_line"],
            occurred_at=occurred_at,
            logged_by=user.get_username() if user is not None and user.pk else "",
        )
    return entry, True


def do_append_entries(session_id: str, entries: list[dict[str, Any]]) -> tuple[int, int]:
    """Append many entries in one go (imports); returns (created, already there).

    Each item holds SessionEntry fields and must carry an `idempotency_key`.
    The session row is locked and `last_seq` raised once: updating it line
    by line inside one transaction would leave thousands of row versions
    that every later lookup has to walk.
    """
    with transaction.atomic():
        session = _session_for_update(session_id, project=None, project_root=None, client=None)
        keys = [item["idempotency_key"] for item in entries]
        known = set(session.entries.filter(idempotency_key__in=keys).values_list("idempotency_key", flat=True))
        new = [item for item in entries if item["idempotency_key"] not in known]
        rows = [
            SessionEntry(
                session=session,
                seq=session.last_seq + offset,
                **_redacted_entry({"skill": "", "phase": "", "status": "", "message": "", **item}),
            )
            for offset, item in enumerate(new, start=1)
        ]
        SessionEntry.objects.bulk_create(rows, batch_size=1000)
        if rows:
            session.last_seq += len(rows)
            session.save(update_fields=["last_seq", "updated_at"])
    return len(rows), len(entries) - len(rows)


def _redacted_entry(item: dict[str, Any]) -> dict[str, Any]:
    """An entry's fields with secrets taken out of message, data and raw_line, and counted in `redactions`."""
    fields: dict[str, Any] = {name: item[name] for name in ("message", "data", "raw_line") if name in item}
    cleaned, redactions = redact_fields(fields)
    return {**item, **cleaned, "redactions": redactions}


@transaction.atomic
def do_set_session_file_layout(session_id: str, layout: dict[str, Any]) -> AgentSession:
    """Remember how an imported file was laid out (newlines), for a byte-exact export."""
    session, _ = AgentSession.objects.get_or_create(external_id=session_id)
    session.file_layout = layout
    session.save(update_fields=["file_layout", "updated_at"])
    return session


@transaction.atomic
def do_record_retrospective(
    session: AgentSession,
    *,
    method: str,
    model: str,
    learnings: list[dict[str, Any]],
    notes_written: list[str],
    message: str = "",
    redactions: list[dict[str, Any]] | None = None,
    requested_by: User | None = None,
) -> RetrospectiveRun:
    """Keep, for operators, what a retrospective that wrote notes proposed and wrote (already redacted).

    `requested_by`: the person whose request caused it (the session's owner for one a hook queued)."""
    return RetrospectiveRun.objects.create(
        requested_by=requested_by if getattr(requested_by, "pk", None) else None,
        redactions=redactions or [],
        session=session,
        method=method,
        model=model,
        status=RetrospectiveRun.Status.OK,
        learnings=learnings,
        notes_written=notes_written,
        message=message,
    )


def do_record_failed_retrospective(
    session: AgentSession,
    *,
    model: str,
    message: str,
    model_output: str,
    model_calls: list[int],
    requested_by: User | None = None,
) -> RetrospectiveRun:
    """Keep a retrospective whose model answer was refused: the reason, the model's text (redacted) and its calls."""
    cleaned, redactions = redact_fields({"model_output": model_output[:100_000], "message": message})
    run = RetrospectiveRun.objects.create(
        requested_by=requested_by if getattr(requested_by, "pk", None) else None,
        session=session,
        method=RetrospectiveRun.Method.LLM,
        model=model,
        status=RetrospectiveRun.Status.MALFORMED,
        message=cleaned["message"],
        model_output=cleaned["model_output"],
        redactions=redactions,
    )
    if model_calls:
        run.model_calls.set(model_calls)
    return run


# --- training-data curation -----------------------------------------------------------


def _reviewer_label(reviewer: User | None) -> str:
    return getattr(reviewer, "get_username", lambda: str(reviewer))() if reviewer is not None else ""


def _history(
    example: TrainingExample, reviewer: User | None, action: str, changes: JSON | None = None, /, **extra: Any
) -> None:
    record: JSON = {"at": timezone.now().isoformat(), "by": _reviewer_label(reviewer), "action": action}
    if changes:
        record["changes"] = changes
    record.update(extra)
    example.edits = [*(example.edits or []), record]


def validate_messages(name: str, value: Any) -> list[dict[str, Any]]:
    if not isinstance(value, list) or not value:
        raise InvalidExampleEdit(f"{name} must be a non-empty list of {{role, content}} messages.")
    for index, message in enumerate(value):
        if not isinstance(message, dict) or set(message) != {"role", "content"}:
            raise InvalidExampleEdit(f"{name}[{index}] must have exactly the keys role and content.")
        if message["role"] not in ROLES or not isinstance(message["content"], str):
            raise InvalidExampleEdit(
                f"{name}[{index}]: role must be one of {', '.join(sorted(ROLES))} and content a string."
            )
    return value


@transaction.atomic
def do_approve_example(
    example: TrainingExample, *, reviewer: User | None, confirm_flagged: bool = False
) -> TrainingExample:
    """candidate → approved. A flagged example (possible secret) is refused unless `confirm_flagged`."""
    example = TrainingExample.objects.select_for_update().get(pk=example.pk)
    if example.flagged and not confirm_flagged:
        raise FlaggedExample(
            f"Example #{example.pk} is flagged for a possible secret ({_flag_summary(example.flags)}): edit it out, "
            "or confirm that you checked it and nothing secret is left."
        )
    before = _decision_state(example)
    example.status = TrainingExample.Status.APPROVED
    example.reviewer, example.reviewed_at = reviewer, timezone.now()
    _history(example, reviewer, "approve", before=before, **({"confirmed_flagged": True} if example.flagged else {}))
    example.save(update_fields=["status", "reviewer", "reviewed_at", "edits", "updated_at"])
    return example


def _flag_summary(flags: list[dict[str, Any]]) -> str:
    return ", ".join(f"{flag.get('field')}: {flag.get('pattern')}" for flag in flags or []) or "flagged"


@transaction.atomic
def do_reject_example(example: TrainingExample, *, reviewer: User | None, reason: str = "") -> TrainingExample:
    example = TrainingExample.objects.select_for_update().get(pk=example.pk)
    before = _decision_state(example)
    example.status = TrainingExample.Status.REJECTED
    example.reviewer, example.reviewed_at = reviewer, timezone.now()
    example.review_note = reason
    _history(example, reviewer, "reject", before=before, reason=reason)
    example.save(update_fields=["status", "reviewer", "reviewed_at", "review_note", "edits", "updated_at"])
    return example


def _rescan(example: TrainingExample, changed: set[str]) -> None:
    """Run the secret scan again on edited fields: redact anything new, then flag what still shows a secret.

    An edited field flags when it holds a `[REDACTED:<pattern>]` marker (a
    secret just redacted, or an old redaction the reviewer left in); once
    the markers are edited out its flag clears. Flags of fields not edited
    (and of the provenance, which cannot be edited here) stay as they were.
    """
    flags = [flag for flag in example.flags or [] if flag.get("field") not in changed]
    for name in sorted(changed):
        value, _ = redact_value(getattr(example, name))
        setattr(example, name, value)
        found: dict[str, int] = {}
        for content in _contents(value):
            for pattern in REDACTION_MARKER.findall(content):
                found[pattern] = found.get(pattern, 0) + 1
        flags += [{"field": name, "pattern": pattern, "count": count} for pattern, count in sorted(found.items())]
    example.flags = flags
    example.flagged = bool(flags)


def _contents(messages: Any) -> list[str]:
    return [m.get("content", "") for m in messages or [] if isinstance(m, dict) and isinstance(m.get("content"), str)]


@transaction.atomic
def do_edit_example(example: TrainingExample, *, reviewer: User | None, **fields: Any) -> TrainingExample:
    """Change prompt/completion/chosen/rejected/review_note; each change is kept in `edits`.

    Edited messages go through the secret scan again: a secret pasted in is
    redacted and flags the example; editing the redaction out clears the flag.
    """
    unknown = set(fields) - set(EDITABLE_FIELDS)
    if unknown:
        raise InvalidExampleEdit(f"Cannot edit {', '.join(sorted(unknown))}; editable: {', '.join(EDITABLE_FIELDS)}.")
    example = TrainingExample.objects.select_for_update().get(pk=example.pk)
    allowed = {"prompt", "completion"} if example.kind == TrainingExample.Kind.SFT else {"prompt", "chosen", "rejected"}
    changes = {}
    for name, value in fields.items():
        if name in MESSAGE_FIELDS:
            if name not in allowed:
                raise InvalidExampleEdit(f"A {example.kind} example has no {name}.")
            validate_messages(name, value)
        before = copy.deepcopy(getattr(example, name))
        if before != value:
            changes[name] = {"before": before, "after": value}
            setattr(example, name, value)
    if not changes:
        return example
    was_flagged, flags_before = example.flagged, copy.deepcopy(example.flags)
    _rescan(example, set(changes) & set(MESSAGE_FIELDS))
    for name in set(changes) & set(MESSAGE_FIELDS):
        changes[name]["after"] = getattr(example, name)
    extra = {}
    if (was_flagged, flags_before) != (example.flagged, example.flags):
        extra = {"flagged": {"before": was_flagged, "after": example.flagged}}
    example.reviewer = reviewer
    _history(example, reviewer, "edit", changes, **extra)
    example.replay_status = TrainingExample.ReplayStatus.PENDING  # the answer changed: replay it again
    example.save(update_fields=[*changes, "flagged", "flags", "reviewer", "edits", "replay_status", "updated_at"])
    return example


SWAPPED_SIDE = {"chosen": "rejected", "rejected": "chosen"}


@transaction.atomic
def do_swap_dpo(example: TrainingExample, *, reviewer: User | None) -> TrainingExample:
    """Exchange chosen and rejected (a reviewer judged the pair the other way round).

    The evidence moves with the texts: `provenance.verification` keeps each
    side's check under the side its text is now on, and so do the secret flags.
    """
    example = TrainingExample.objects.select_for_update().get(pk=example.pk)
    if example.kind != TrainingExample.Kind.DPO:
        raise InvalidExampleEdit("Only DPO examples have chosen and rejected to swap.")
    before = _decision_state(example)
    _exchange_sides(example)
    # Swapping is not a review: a candidate stays unreviewed (the history says who swapped).
    _history(example, reviewer, "swap", before=before)
    example.replay_status = TrainingExample.ReplayStatus.PENDING
    example.save(update_fields=["chosen", "rejected", "provenance", "flags", "edits", "replay_status", "updated_at"])
    return example


def _exchange_sides(example: TrainingExample) -> None:
    example.chosen, example.rejected = example.rejected, example.chosen
    provenance = copy.deepcopy(example.provenance or {})
    verification = provenance.get("verification")
    if isinstance(verification, dict) and ("chosen" in verification or "rejected" in verification):
        swapped = {key: value for key, value in verification.items() if key not in SWAPPED_SIDE}
        for side, other in SWAPPED_SIDE.items():
            if side in verification:
                swapped[other] = verification[side]
        provenance["verification"] = swapped
    example.provenance = provenance
    example.flags = [
        {**flag, "field": SWAPPED_SIDE.get(flag.get("field"), flag.get("field"))} for flag in example.flags or []
    ]


def _decision_state(example: TrainingExample) -> dict[str, Any]:
    """What an approve, reject or swap changes besides the texts: kept in its history record for its undo."""
    return {
        "status": example.status,
        "reviewer_id": example.reviewer_id,
        "reviewed_at": example.reviewed_at.isoformat() if example.reviewed_at else None,
        "review_note": example.review_note,
        "replay_status": example.replay_status,
    }


UNDOABLE_DECISIONS = ("approve", "reject", "swap")


@transaction.atomic
def do_undo_example_decision(example: TrainingExample, *, reviewer: User | None, step: int) -> TrainingExample:
    """Undo the approve, reject or swap recorded at `edits[step]`; the undo is recorded too.

    Refused, with nothing written, unless that decision is still the last thing that happened to the
    example (undo the later change first) and its record says what came before.
    """
    example = TrainingExample.objects.select_for_update().get(pk=example.pk)
    edits = example.edits or []
    if not 0 <= step < len(edits):
        raise InvalidExampleEdit(f"Example #{example.pk} has no such decision to undo.")
    record = edits[step]
    action = record.get("action")
    if action not in UNDOABLE_DECISIONS or not isinstance(record.get("before"), dict):
        raise InvalidExampleEdit(f"The {action or 'change'} of example #{example.pk} cannot be undone here.")
    if step != len(edits) - 1:
        raise InvalidExampleEdit(
            f"Example #{example.pk} changed after that {action} ({edits[-1].get('action')}); nothing was undone."
        )
    before = record["before"]
    if action == "swap":
        _exchange_sides(example)
    reviewer_id = before["reviewer_id"]
    if reviewer_id is not None and not get_user_model().objects.filter(pk=reviewer_id).exists():
        reviewer_id = None  # that account is gone; the history still names it
    example.status, example.reviewer_id = before["status"], reviewer_id
    example.reviewed_at = datetime.fromisoformat(before["reviewed_at"]) if before["reviewed_at"] else None
    example.review_note, example.replay_status = before["review_note"], before["replay_status"]
    _history(example, reviewer, "undo", undoes=step, undone=action)
    example.save()
    return example


@transaction.atomic
def do_store_training_example(
    *,
    source_key: str,
    kind: str,
    skill: str,
    prompt: list[dict[str, Any]],
    completion: list[dict[str, Any]] | None = None,
    chosen: list[dict[str, Any]] | None = None,
    rejected: list[dict[str, Any]] | None = None,
    provenance: dict[str, Any],
    flags: list[dict[str, Any]] | None = None,
) -> tuple[TrainingExample, bool]:
    """Store an extracted candidate once; a second extraction of the same source returns the first."""
    example, created = TrainingExample.objects.get_or_create(
        source_key=source_key,
        defaults={
            "kind": kind,
            "skill": skill,
            "prompt": prompt,
            "completion": completion or [],
            "chosen": chosen or [],
            "rejected": rejected or [],
            "provenance": provenance,
            "flagged": bool(flags),
            "flags": flags or [],
        },
    )
    return example, created


@transaction.atomic
def do_name_extractor(examples: list[TrainingExample], requested_by: User) -> list[TrainingExample]:
    """Name, in each newly extracted candidate's provenance, the person whose trainer call extracted it."""
    for example in examples:
        example.provenance = {**(example.provenance or {}), "requested_by": requested_by.get_username()}
        example.save(update_fields=["provenance", "updated_at"])
    return examples


@transaction.atomic
def do_record_replay(
    example: TrainingExample, outcome: ReplayOutcome, *, requested_by: User | None = None
) -> TrainingExample:
    """Keep what `trainer_verify` found (valid / invalid / n/a, why, each side's test run) and who asked for it."""
    example = TrainingExample.objects.select_for_update().get(pk=example.pk)
    example.replay_status = outcome["status"]
    example.replay = {key: value for key, value in outcome.items() if key != "status"}
    if requested_by is not None:
        example.replay["requested_by"] = requested_by.get_username()
    example.save(update_fields=["replay_status", "replay", "updated_at"])
    return example
