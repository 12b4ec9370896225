"""Retrospective: a session's log and skill runs → candidate notes in raw.

    run_retrospective(session_id, llm_model=None, requested_by=None) -> result dict

It runs as the person whose request caused it (`requested_by`: who called the skill, or the session's
owner for one a hook queued; None: the service identity): only they (their own session), staff and
the service reach a session; its model calls are theirs (recorded and charged to their budget); and
the raw notes it writes carry the session owner's words, so they name the owner as author and are
written only when the owner's role may write raw notes (`brain:write`): a reader's session yields
learnings in the result and none in the brain.

How learnings are found:
- With an LLM configured (`LITELLM_BASE_URL`), the model named by
  `llm_model`, else `BRAIN_ANSWER_MODEL`, else `HYPERGUILD_THINKING_MODEL`,
  reads the entries and runs and answers JSON validated against
  `LLM_ANSWER_SCHEMA` (evidence must name entries that exist). A malformed
  answer is reported, nothing is written, and a failed RetrospectiveRun keeps
  the model's text (its ModelCall keeps the request and the raw body). A gateway that is down or
  refuses the model falls back to the rules, and the result says so.
- Without one, rules: failure→pass transitions of a skill (in the log and
  in the session's SkillRuns), errors followed by a fix, and entries the
  client marked as decisions, corrections or surprises.

Each learning is compared with the brain (`brain.search`: BM25, fused with
vectors when an embedder is on): when an existing note already says it
(`is_near_duplicate`), the learning becomes a suggestion to merge into that
note instead of a new one. The others become raw notes with provenance
`{session_id, entries, method, runs, retrospective_key}`; the key is derived
from the session, kind and evidence, so a second run writes nothing.
"""

from __future__ import annotations

import hashlib
import logging
import time
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User

from brain.actions import do_write_raw_note
from brain.bm25 import tokenize
from brain.models import Note
from brain.search import SearchInputError, search
from hyperguild.lib.llm import LLMBadResponse, LLMClient, LLMError, get_llm_client
from hyperguild.lib.model_calls import mark_model_call, model_call_context
from hyperguild.lib.text import excerpt
from hyperguild.lib.typed import JSON, JsonSchema
from people.permissions import role_allows
from sessions.actions import do_record_failed_retrospective, do_record_retrospective, session_for
from sessions.models import AgentSession, SessionEntry
from sessions.note_drafts import draft_successors
from sessions.redaction import redact_fields
from supervisor.models import SkillRun
from supervisor.skills import RetrospectiveResult, Verdict, build_result

logger = logging.getLogger(__name__)

LEARNING_KINDS = ("decision", "correction", "surprise", "pattern")
FAIL_STATUSES = frozenset({"fail", "failed", "failure", "error", "timeout", "red"})
PASS_STATUSES = frozenset({"pass", "passed", "ok", "success", "green", "fixed"})
FIX_KINDS = frozenset({"fix", "fixed", "resolution"})
ERROR_KINDS = frozenset({"error", "failure", "exception"})
# Entry kinds a client uses to mark a learning explicitly → the learning's kind.
MARKED_KINDS = {"decision": "decision", "correction": "correction", "surprise": "surprise", "pattern": "pattern"}

# Near-duplicate test against the brain: of the distinct (stemmed) words of
# the learning's title and claim, at least this share must appear in the
# note, among the top SIMILAR_CANDIDATES search hits (any status but archived).
NEAR_DUPLICATE_SHARE = 0.75
SIMILAR_CANDIDATES = 5
# What the LLM sees of each entry and how many entries at most.
PROMPT_MESSAGE_CHARS = 600
TITLE_CHARS = 90  # of an entry's message quoted in a learning's title
PROMPT_MAX_ENTRIES = 400
MAX_LLM_LEARNINGS = 20

LLM_ANSWER_SCHEMA: JsonSchema = {
    "type": "object",
    "additionalProperties": False,
    "required": ["learnings"],
    "properties": {
        "learnings": {
            "type": "array",
            "maxItems": MAX_LLM_LEARNINGS,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["title", "body", "kind", "evidence"],
                "properties": {
                    "title": {"type": "string", "minLength": 3, "maxLength": 200},
                    "body": {"type": "string", "minLength": 1, "maxLength": 8000},
                    "kind": {"type": "string", "enum": list(LEARNING_KINDS)},
                    "evidence": {"type": "array", "minItems": 1, "items": {"type": "integer", "minimum": 1}},
                },
            },
        }
    },
}

SYSTEM_PROMPT = (
    "You review the log of a software engineering session and extract what the team should remember. "
    'Return JSON: {"learnings": [{"title", "body", "kind", "evidence"}]}. kind is one of '
    "decision (a choice made and why), correction (a mistake and what fixed it), surprise (something that "
    "behaved unexpectedly), pattern (a reusable way of working). evidence lists the seq numbers of the "
    "entries that support it. Only learnings a teammate would want in the wiki; none is a valid answer."
)


@dataclass
class Learning:
    title: str
    body: str
    kind: str
    evidence: list[int]
    claim: str  # the core statement, used to compare with existing notes
    method: str
    runs: list[int] = field(default_factory=list)
    skill: str = ""

    def key(self, session_id: str) -> str:
        basis = f"{session_id}|{self.kind}|{','.join(map(str, sorted(self.evidence)))}|{','.join(map(str, sorted(self.runs)))}"
        return hashlib.sha256(basis.encode()).hexdigest()[:24]


# -- rules ---------------------------------------------------------------------------------


def _entry_line(entry: SessionEntry) -> str:
    parts = [f"#{entry.seq}", entry.kind]
    parts += [p for p in (entry.skill, entry.phase, entry.status) if p]
    text = " ".join(parts)
    return f"{text}: {entry.message}" if entry.message else text


def rules_learnings(entries: list[SessionEntry], runs: list[SkillRun]) -> list[Learning]:
    learnings: list[Learning] = []
    covered_skills: set[str] = set()

    # Entries the client marked explicitly.
    for entry in entries:
        kind = MARKED_KINDS.get(entry.kind.lower())
        if kind and entry.message.strip():
            learnings.append(
                Learning(
                    title=f"{kind.capitalize()}: {excerpt(entry.message, TITLE_CHARS)}",
                    body=f"{entry.message.strip()}\n\nRecorded as a {entry.kind} in the session log (entry {entry.seq}).",
                    kind=kind,
                    evidence=[entry.seq],
                    claim=entry.message,
                    method="rules",
                    skill=entry.skill,
                )
            )

    # Failure → pass on the same skill: what happened in between is the fix.
    open_failures: dict[str, SessionEntry] = {}
    for entry in entries:
        skill = entry.skill
        status = entry.status.lower()
        if not skill:
            continue
        if status in FAIL_STATUSES and skill not in open_failures:
            open_failures[skill] = entry
        elif status in PASS_STATUSES and skill in open_failures:
            failed = open_failures.pop(skill)
            between = [
                e
                for e in entries
                if failed.seq < e.seq < entry.seq and e.message and e.kind.lower() not in MARKED_KINDS
            ]
            steps = "\n".join(f"- {_entry_line(e)}" for e in between) or "- (nothing logged in between)"
            claim = f"{skill} failed with {failed.message or failed.status} and then passed"
            learnings.append(
                Learning(
                    title=f"{skill}: from failure to pass — {excerpt(failed.message or failed.status, 60)}",
                    body=(
                        f"`{skill}` failed (entry {failed.seq}): {failed.message or failed.status}\n\n"
                        f"What happened before it passed:\n{steps}\n\n"
                        f"It passed at entry {entry.seq}: {entry.message or entry.status}"
                    ),
                    kind="correction",
                    evidence=[failed.seq, *[e.seq for e in between], entry.seq],
                    claim=claim,
                    method="rules",
                    skill=skill,
                )
            )
            covered_skills.add(skill)

    # An error entry followed by a fix entry (no skill needed).
    pending_error: SessionEntry | None = None
    for entry in entries:
        kind = entry.kind.lower()
        if kind in ERROR_KINDS and entry.message:
            pending_error = entry
        elif kind in FIX_KINDS and pending_error is not None and entry.message:
            if entry.skill and entry.skill in covered_skills:
                pending_error = None
                continue
            learnings.append(
                Learning(
                    title=f"Fix for: {excerpt(pending_error.message, 80)}",
                    body=f"Error (entry {pending_error.seq}): {pending_error.message}\n\nFix (entry {entry.seq}): {entry.message}",
                    kind="correction",
                    evidence=[pending_error.seq, entry.seq],
                    claim=f"{pending_error.message} {entry.message}",
                    method="rules",
                    skill=entry.skill,
                )
            )
            pending_error = None

    # Skill runs of the session: a failed run of a skill followed by a passing one.
    failed_runs: dict[str, SkillRun] = {}
    for run in runs:
        if run.status in (Verdict.FAIL, Verdict.ERROR, Verdict.TIMEOUT) and run.skill not in failed_runs:
            failed_runs[run.skill] = run
        elif run.status == Verdict.PASS and run.skill in failed_runs:
            failed_run = failed_runs.pop(run.skill)
            if run.skill in covered_skills:
                # The log already told this story; attach the runs as evidence.
                for learning in learnings:
                    if learning.skill == run.skill and learning.kind == "correction" and not learning.runs:
                        learning.runs = [failed_run.pk, run.pk]
                continue
            why = failed_run.message or (failed_run.runner_output or "")[-400:] or failed_run.status
            learnings.append(
                Learning(
                    title=f"{run.skill}: from failure to pass — {excerpt(why, 60)}",
                    body=(
                        f"Skill run {failed_run.pk} of `{run.skill}` ended {failed_run.status}: {why}\n\n"
                        f"Skill run {run.pk} passed (verified={run.verified}): {run.message or 'no message'}"
                    ),
                    kind="correction",
                    evidence=[],
                    claim=f"{run.skill} {why}",
                    method="rules",
                    runs=[failed_run.pk, run.pk],
                    skill=run.skill,
                )
            )
            covered_skills.add(run.skill)
    return learnings


# -- LLM ------------------------------------------------------------------------------------


class MalformedAnswer(ValueError):
    """The model answered, but not with learnings we can use; carries its text and the ModelCall."""

    def __init__(self, message: str, *, text: str = "", call_id: int | None = None):
        super().__init__(message)
        self.text = text
        self.call_id = call_id


def llm_model_name(llm_model: str | None = None) -> str:
    return llm_model or settings.BRAIN_ANSWER_MODEL or settings.HYPERGUILD_THINKING_MODEL


def llm_prompt(session: AgentSession, entries: list[SessionEntry], runs: list[SkillRun]) -> list[dict[str, Any]]:
    lines = [f"Session {session.external_id} (project {session.project or 'unknown'})", "", "Entries:"]
    for entry in entries[-PROMPT_MAX_ENTRIES:]:
        lines.append(excerpt(_entry_line(entry), PROMPT_MESSAGE_CHARS))
    if runs:
        lines += ["", "Skill runs (in order):"]
        for run in runs:
            lines.append(excerpt(f"run {run.pk} {run.skill} {run.status} verified={run.verified}: {run.message}", 300))
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": "\n".join(lines)}]


def llm_learnings(
    client: LLMClient, model: str, session: AgentSession, entries: list[SessionEntry], runs: list[SkillRun]
) -> list[Learning]:
    try:
        data, result = client.chat_json(
            llm_prompt(session, entries, runs), model=model, schema=LLM_ANSWER_SCHEMA, purpose="retrospective"
        )
    except LLMBadResponse as exc:
        raise MalformedAnswer(str(exc), text=exc.text or "", call_id=getattr(exc, "call_id", None)) from exc
    known = {e.seq for e in entries}
    learnings = []
    for index, item in enumerate(data["learnings"]):
        unknown = sorted(set(item["evidence"]) - known)
        if unknown:
            problem = f"learnings[{index}] cites entries that do not exist: {unknown}"
            mark_model_call(result.call_id, "bad_output", problem)
            raise MalformedAnswer(problem, text=result.text, call_id=result.call_id)
        learnings.append(
            Learning(
                title=item["title"].strip(),
                body=item["body"].strip(),
                kind=item["kind"],
                evidence=sorted(set(item["evidence"])),
                claim=f"{item['title']} {item['body']}",
                method="llm",
            )
        )
    return learnings


# -- comparison with the brain ------------------------------------------------------------


def is_near_duplicate(learning: Learning, note_title: str, note_body: str) -> bool:
    words = set(tokenize(f"{learning.title if learning.method == 'llm' else ''} {learning.claim}"))
    if not words:
        return False
    note_words = set(tokenize(f"{note_title} {note_body}"))
    return len(words & note_words) / len(words) >= NEAR_DUPLICATE_SHARE


def similar_note(learning: Learning, *, exclude_session: str) -> tuple[Note, float] | tuple[None, None]:
    """The existing note that already says this learning, or None."""
    try:
        response = search(learning.claim[:2000], limit=SIMILAR_CANDIDATES, status="any")
    except SearchInputError:
        return None, None
    for hit in response.hits:
        note = Note.objects.filter(pk=hit.note_id).first()
        if (
            note is None
            or (note.provenance or {}).get("session_id") == exclude_session
            and note.source == "retrospective"
        ):
            continue
        if is_near_duplicate(learning, note.title, note.body):
            return note, hit.score
    return None, None


# -- the whole run --------------------------------------------------------------------------


def _session_runs(session_id: str) -> list[SkillRun]:
    return list(SkillRun.objects.in_session(session_id).finished().order_by("created_at", "id"))


def _result(**values: Any) -> RetrospectiveResult:
    """The retrospective's result model, every field filled (`build_result`'s neutral values for the rest)."""
    return RetrospectiveResult.model_validate(build_result("retrospective", **values))


def notes_author(session: AgentSession) -> tuple[User | None, str]:
    """Whom a retrospective's raw notes name (the session's owner: the words are theirs), and why none may be
    written ("" when they may): a person whose role cannot write raw notes gets none through this path either."""
    owner = session.started_by
    if owner is None:
        return None, ""  # the service's session (an import, an environment token): the service writes
    if not role_allows(owner, "brain:write"):
        return owner, (
            f"{owner.get_username()}'s role cannot write raw notes (brain:write: the member, reviewer or curator "
            "role), so no learning of this session was written to the brain"
        )
    return owner, ""


def run_retrospective(
    session_id: str, *, llm_model: str | None = None, requested_by: User | None = None
) -> RetrospectiveResult:
    """Look back on one session; write new learnings as raw notes. Safe to run again.

    `requested_by`: the person whose request caused it (None: the service identity). Raises
    SessionNotFound when nothing was ever logged under `session_id`, or it is another person's
    session (staff and the service reach every one), as `GET /sessions/<id>/entries` answers 404.
    """
    started = time.monotonic()
    session = session_for(session_id, requested_by)
    assert session is not None  # must_exist: SessionNotFound otherwise
    with model_call_context(requested_by=requested_by, session_id=session_id[:200], skill="retrospective"):
        return _look_back(session, llm_model, requested_by, started)


def _look_back(
    session: AgentSession, llm_model: str | None, requested_by: User | None, started: float
) -> RetrospectiveResult:
    session_id = session.external_id
    entries = list(session.entries.order_by("seq"))
    runs = _session_runs(session_id)
    author, withheld = notes_author(session)

    client = get_llm_client()
    method, model, notice = "rules", "", ""
    learnings: list[Learning]
    if client is not None:
        model = llm_model_name(llm_model)
        try:
            learnings = llm_learnings(client, model, session, entries, runs)
            method = "llm"
        except MalformedAnswer as exc:
            # The failed run is kept, with the model's own text, so it can be read and replayed.
            do_record_failed_retrospective(
                session,
                model=model,
                message=f"The model's answer was malformed ({exc}); nothing was written.",
                model_output=exc.text,
                model_calls=[exc.call_id] if exc.call_id is not None else [],
                requested_by=requested_by,
            )
            return _result(
                status=Verdict.ERROR,
                model_used=model,
                attempts=1,
                message=f"The model's answer was malformed ({exc}); nothing was written.",
                duration_ms=int((time.monotonic() - started) * 1000),
                method="llm",
                written=[],
                merge_suggestions=[],
            )
        except LLMError as exc:
            notice = f"The LLM could not answer ({exc}); used the rules instead. "
            learnings = rules_learnings(entries, runs)
            model = ""  # no model answered: the result, and the record, say "rules"
    else:
        learnings = rules_learnings(entries, runs)

    reported, written, merges = [], [], []
    for learning in learnings:
        key = learning.key(session_id)
        item: JSON = {
            "title": learning.title,
            "body": learning.body,
            "kind": learning.kind,
            "evidence": learning.evidence,
            "runs": learning.runs,
            "method": learning.method,
            "key": key,
        }
        existing = Note.objects.filter(provenance__retrospective_key=key).first()
        if existing is not None:
            item.update(outcome="exists", note_slug=existing.slug)
        elif withheld:
            item.update(outcome="withheld")
        else:
            similar, score = similar_note(learning, exclude_session=session_id)
            if similar is not None:
                merge = {"slug": similar.slug, "title": similar.title, "status": similar.status, "score": score}
                item.update(outcome="merge", merge_into=merge)
                merges.append({"learning": learning.title, **merge})
            else:
                provenance = {
                    "session_id": session_id,
                    "entries": learning.evidence,
                    "runs": learning.runs,
                    "method": learning.method,
                    "retrospective_key": key,
                }
                if session.project:
                    provenance["project"] = session.project.name  # the review queue filters and shows it
                if model and learning.method == "llm":
                    provenance["model"] = model
                note_text, redactions = redact_fields({"title": learning.title, "body": learning.body})
                if redactions:
                    provenance["redactions"] = redactions
                note = do_write_raw_note(
                    title=note_text["title"],
                    body=note_text["body"],
                    frontmatter={
                        "kind": learning.kind,
                        "tags": ["retrospective", learning.kind],
                        "session": session_id,
                    },
                    source="retrospective",
                    provenance=provenance,
                    session_id=session_id,
                    user=author,
                )
                item.update(outcome="written", note_slug=note.slug)
                written.append(note.slug)
        reported.append(item)

    # The notes its edits broke and left as they were: a "supersedes" draft each (sessions.note_drafts), among
    # `written`.
    drafts = [] if withheld else draft_successors(session, author=author)
    drafted = [item["note_slug"] for item in drafts if item["outcome"] == "written"]
    learned = len(written)
    written += drafted
    if written:
        reported_clean, retro_redactions = redact_fields({"learnings": reported})
        do_record_retrospective(
            session,
            method=method,
            model=model,
            learnings=reported_clean["learnings"],
            notes_written=written,
            message=notice.strip(),
            redactions=retro_redactions,
            requested_by=requested_by,
        )
    summary = (
        f"{len(learnings)} learning(s) by {method}: {learned} written to raw, {len(merges)} merge suggestion(s), "
        f"{sum(item.get('outcome') == 'exists' for item in reported)} already written."
    )
    if drafted:
        summary += f" {len(drafted)} successor draft(s) for notes this session's edits broke: {', '.join(drafted)}."
    if withheld and any(item.get("outcome") == "withheld" for item in reported):
        summary += f" {withheld}."
    return _result(
        status=Verdict.PASS,
        model_used=model or "rules",
        attempts=1 if method == "llm" else 0,
        message=notice + summary,
        duration_ms=int((time.monotonic() - started) * 1000),
        learnings=reported,
        count=len(reported),
        method=method,
        written=written,
        merge_suggestions=merges,
    )
