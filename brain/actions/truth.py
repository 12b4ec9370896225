"""The truth feature's storage (docs/truth.md): a note's anchors and verdict, projects synced and re-checked
at their head, a note's `check:` queued and run."""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone
from django_q.tasks import async_task

from brain import anchors as anchor_rules
from brain import checks as note_checks
from brain import projects as project_rules
from brain import truth
from brain.actions.locking import _locked
from brain.callbacks import session_project
from brain.models import (
    Anchor,
    AnchorState,
    Note,
    NoteCheckRun,
    NoteStatus,
    Project,
    VerificationState,
)
from brain.repository import Repository, RepositoryUnreadable
from hyperguild.lib.typed import JSON

if TYPE_CHECKING:
    from collections.abc import Sequence

    from django.db.models import Model


# -- projects, anchors and their truth (brain.truth computes, these store; docs/truth.md) -------------------


def _note_project(note: Note) -> Project | None:
    """Its frontmatter `project:`, else its session's project, else the project its provenance names."""
    named = (note.frontmatter or {}).get("project")
    if isinstance(named, str) and named.strip():
        found = Project.objects.filter(name=named.strip()).first() or Project.objects.for_cwd(named.strip())
        if found is not None:
            return found
    project_id = session_project(note.session_id)
    if project_id is not None:
        return Project.objects.filter(pk=project_id).first()
    named = (note.provenance or {}).get("project")
    if isinstance(named, str) and named:
        return Project.objects.filter(name=named).first()
    return None


def _refresh_anchors(note: Note) -> None:
    """Anchors again from the note's text (kept where unchanged, with their last check), then its verdict."""
    if note.project_id is None:
        project = _note_project(note)
        if project is not None:
            Note.objects.filter(pk=note.pk).update(project=project)
            note.project = project
    _check_note(note, _anchor_rows(note), only_unchecked=True)


def _anchor_rows(note: Note) -> list[Anchor]:
    """The note's anchor rows in line with its text: new ones made (unchecked), dropped ones deleted."""
    return _anchor_rows_of([note], {note.pk: list(note.anchors.all())})[note.pk]


def _anchor_rows_of(notes: list[Note], existing_rows: dict[int, list[Anchor]]) -> dict[int, list[Anchor]]:
    """`_anchor_rows` for many notes at once: one delete and one insert for all of them."""
    gone, new, rows = [], [], {}
    for note in notes:
        wanted = {anchor.key: anchor for anchor in anchor_rules.extract(note.body, note.frontmatter)}
        existing = {anchor.key: anchor for anchor in existing_rows.get(note.pk, [])}
        gone += [anchor.pk for key, anchor in existing.items() if key not in wanted]
        made = [
            Anchor(
                note=note,
                key=key,
                kind=found.kind,
                value=found.value,
                hint=found.hint,
                explicit=found.explicit,
                path=found.hint or (found.value if found.kind == "path" else ""),
            )
            for key, found in wanted.items()
            if key not in existing
        ]
        new += made
        rows[note.pk] = [anchor for key, anchor in existing.items() if key in wanted] + made
    if gone:
        Anchor.objects.filter(pk__in=gone).delete()
    Anchor.objects.bulk_create(new, batch_size=1000)
    return rows


def _project_head(project: Project | None) -> tuple[Repository | None, str, str]:
    """(repository, the commit notes are checked at, "") or (None, "", why they cannot be)."""
    if project is None:
        return None, "", truth.no_repository_reason(None)
    if project.sync_error:
        return None, "", truth.no_repository_reason(project, project.sync_error)
    if not project.last_synced_commit:
        return None, "", truth.no_repository_reason(project)
    try:
        return project_rules.repository(project), project.last_synced_commit, ""
    except RepositoryUnreadable as exc:
        return None, "", truth.no_repository_reason(project, str(exc))


def _check_note(note: Note, anchors: list[Anchor], *, only_unchecked: bool) -> None:
    """Check `anchors` (all, or those never checked at the project's head) and store the note's verdict."""
    repo, commit, reason = _project_head(note.project)
    if repo is None:
        _store_verdict(note, truth.unverified(reason))
        return
    due = [a for a in anchors if not only_unchecked or a.state == AnchorState.UNCHECKED or a.commit != commit]
    try:
        verifier = truth.Verifier(repo, commit, project=note.project.name if note.project else "")
        _store_checks(verifier, due)
        _store_explained(verifier.explain(note, anchors))
    except RepositoryUnreadable as exc:
        _store_verdict(note, truth.unverified(truth.no_repository_reason(note.project, str(exc))))
        return
    _store_verdict(note, truth.verdict(note, anchors, commit))


def _store_checks(verifier: truth.Verifier, anchors: list[Anchor]) -> None:
    now = timezone.now()
    for anchor in anchors:
        check = verifier.check(anchor)
        anchor.state, anchor.commit, anchor.checked_at = check.state, verifier.commit, now
        anchor.evidence = check.evidence
        if check.state in (AnchorState.HOLDS, AnchorState.MOVED):
            anchor.location, anchor.path = check.location, check.path
        else:
            anchor.path = check.path or anchor.path  # the location where it last held stays, for the evidence
    _update_rows(
        Anchor,
        anchors,
        {
            "state": "text",
            "commit": "text",
            "checked_at": "timestamptz",
            "evidence": "jsonb",
            "location": "text",
            "path": "text",
        },
    )


def _store_explained(anchors: list[Anchor]) -> None:
    """Store what `Verifier.explain` found under the anchors of a stale note that still hold."""
    _update_rows(Anchor, anchors, {"evidence": "jsonb"})


UPDATE_BATCH = 1000


def _update_rows(model: type[Model], rows: Sequence[Model], columns: dict[str, str]) -> None:
    """Write `columns` of many rows in one UPDATE … FROM (VALUES …) per UPDATE_BATCH rows.

    Django's bulk_update builds a CASE per column with a branch per row: with thousands of anchors it
    took most of the time of a re-verification with thousands of anchors (figures in bench/RESULTS.md).
    """
    if not rows:
        return
    table = connection.ops.quote_name(model._meta.db_table)
    names = list(columns)
    sets = ", ".join(f"{connection.ops.quote_name(name)} = v.{connection.ops.quote_name(name)}" for name in names)
    placeholder = "(%s, " + ", ".join(f"%s::{kind}" for kind in columns.values()) + ")"
    aliases = ", ".join(["id", *[connection.ops.quote_name(name) for name in names]])
    with connection.cursor() as cursor:
        for start in range(0, len(rows), UPDATE_BATCH):
            batch = rows[start : start + UPDATE_BATCH]
            params: list[Any] = []  # the rows' pk and column values, as the driver takes them
            for row in batch:
                params.append(row.pk)
                for name, kind in columns.items():
                    value = getattr(row, name)
                    params.append(json.dumps(value) if kind == "jsonb" else value)
            values = ", ".join([placeholder] * len(batch))
            cursor.execute(
                f"UPDATE {table} AS t SET {sets} FROM (VALUES {values}) AS v({aliases}) WHERE t.id = v.id",  # noqa: S608
                params,
            )


def _store_verdict(note: Note, verdict: truth.NoteVerdict | None = None) -> None:
    """Store the note's verification (derived data: no revision, no version bump)."""
    if verdict is None:  # the anchors are as they were: the verdict again, e.g. after an undo of "still true"
        if note.verification_state == VerificationState.UNVERIFIED:
            return
        verdict = truth.verdict(note, list(note.anchors.all()), note.verified_commit)
    verdict = note_checks.with_check(note, verdict)
    if (note.verification_state, note.verified_commit, note.verification_evidence) == (
        verdict.state,
        verdict.commit,
        verdict.evidence,
    ):
        return  # nothing new: the row stays as it is (an undo restores a note exactly)
    note.verification_state, note.verified_commit = verdict.state, verdict.commit
    note.verification_evidence, note.verified_at = verdict.evidence, timezone.now()
    Note.objects.filter(pk=note.pk).update(
        verification_state=verdict.state,
        verified_commit=verdict.commit,
        verification_evidence=verdict.evidence,
        verified_at=note.verified_at,
    )


def do_verify_note(note: Note) -> Note:
    """Re-check every anchor of one note now, at its project's recorded head, then run its `check:` there
    unless it ran at that head already (brain_verify waits for it: at most SUPERVISOR_TEST_TIMEOUT)."""
    with transaction.atomic():
        note = _locked(note)
        _check_note(note, list(note.anchors.all()), only_unchecked=False)
    if note_checks.check_command(note) and note.project is not None and note.project.last_synced_commit:
        do_run_note_check(note, note.project.last_synced_commit)
        note.refresh_from_db()
    return note


class NoteCheckJson(TypedDict):
    """One run of a note's `check:` as a sync's outcome and the django-q2 result of `run_note_check` list it."""

    slug: str
    passed: bool
    seconds: float
    commit: str


class RecheckOutcomeJson(TypedDict):
    """A `RecheckOutcome` as JSON (the django-q2 result of a project sync)."""

    project: str
    old: str
    new: str
    changed_files: int
    notes_rechecked: int
    anchors_rechecked: int
    stale: list[str]
    error: str
    checks: list[NoteCheckJson]
    already_synced_at: str | None
    stale_now: list[str]


@dataclass
class RecheckOutcome:
    """What one sync of a project did (kept as the django-q2 result and printed by project_sync)."""

    project: str
    old: str = ""
    new: str = ""
    changed_files: int = 0
    notes_rechecked: int = 0
    anchors_rechecked: int = 0
    stale: list[str] = field(default_factory=list)  # slugs of the re-checked notes that are stale now
    error: str = ""
    checks_due: list[int] = field(default_factory=list)  # re-checked wiki notes that carry a `check:`
    checks: list[NoteCheckJson] = field(default_factory=list)  # what their checks did
    # The head was already synced (another sync, e.g. the schedule, got there first): nothing was re-checked, and
    # `stale_now` lists the project's notes that wait for a re-check, so the caller sees the state it found.
    already_synced_at: datetime | None = None
    stale_now: list[str] = field(default_factory=list)

    def as_dict(self) -> RecheckOutcomeJson:
        return {
            "project": self.project,
            "old": self.old,
            "new": self.new,
            "changed_files": self.changed_files,
            "notes_rechecked": self.notes_rechecked,
            "anchors_rechecked": self.anchors_rechecked,
            "stale": list(self.stale or []),
            "error": self.error,
            "checks": list(self.checks),
            "already_synced_at": self.already_synced_at.isoformat() if self.already_synced_at else None,
            "stale_now": list(self.stale_now),
        }


def do_sync_project(project: Project) -> RecheckOutcome:
    """Fetch the project's repository (a mirror) and re-verify the notes its new branch head may change.

    Incremental: only anchors whose file changed between the last synced head and the new one are
    re-checked (`git diff --name-only old..new`); the first sync checks every anchor. Nothing is
    retired: a note whose anchors no longer hold becomes stale, and a person decides.
    """
    try:
        project_rules.fetch(project)
        head = project_rules.repository(project).head(project.branch)
    except RepositoryUnreadable as exc:
        Project.objects.filter(pk=project.pk).update(sync_error=str(exc), synced_at=timezone.now())
        project.sync_error = str(exc)
        reason = truth.no_repository_reason(project, str(exc))
        verdict = truth.unverified(reason)
        Note.objects.filter(project=project).update(
            verification_state=verdict.state, verified_commit="", verification_evidence=verdict.evidence
        )
        return RecheckOutcome(project=project.name, error=str(exc), stale=[])
    outcome = do_recheck_project(project, head)
    # Checks run after the anchors are stored, outside their transaction: a check may take a test run's time.
    for note in Note.objects.filter(pk__in=outcome.checks_due).select_related("project"):
        run = do_run_note_check(note, head)
        if run is not None:
            outcome.checks.append(
                {"slug": note.slug, "passed": run.passed, "seconds": round(run.seconds, 3), "commit": run.commit}
            )
            if not run.passed and note.slug not in outcome.stale:
                outcome.stale = sorted([*outcome.stale, note.slug])
    return outcome


def do_recheck_project(project: Project, head: str) -> RecheckOutcome:
    """Re-verify the project's notes at commit `head` (see do_sync_project), and record it as synced."""
    with transaction.atomic():
        project = Project.objects.select_for_update().get(pk=project.pk)
        old = "" if project.sync_error else project.last_synced_commit
        outcome = RecheckOutcome(project=project.name, old=old, new=head, stale=[])
        if old and old == head:
            # Nothing moved since the last sync: say what that sync left instead of an empty "stale: none".
            outcome.already_synced_at = project.synced_at
            outcome.stale_now = sorted(
                Note.objects.needs_recheck().filter(project=project).values_list("slug", flat=True)
            )
            return outcome
        repo = project_rules.repository(project)
        verifier = truth.Verifier(repo, head, old=old or None, project=project.name)
        if not old:
            # A first sync (or the first since the repository read again): every note's anchors, from its
            # text, all checked.
            notes = list(Note.objects.filter(project=project))
            existing: dict[int, list[Anchor]] = {}
            for anchor in Anchor.objects.filter(note__project=project):
                existing.setdefault(anchor.note_id, []).append(anchor)
            by_note = _anchor_rows_of(notes, existing)
            due = [anchor for rows in by_note.values() for anchor in rows]
        else:
            changed = repo.changed_files(old, head) if old != head else []
            outcome.changed_files = len(changed)
            due = list(Anchor.objects.filter(note__project=project).filter(Q(path__in=changed) | Q(hint__in=changed)))
            note_ids = {anchor.note_id for anchor in due}
            notes = list(Note.objects.filter(pk__in=note_ids))
            by_note = {}
            checked = {anchor.pk: anchor for anchor in due}
            for anchor in Anchor.objects.filter(note_id__in=note_ids):
                by_note.setdefault(anchor.note_id, []).append(checked.get(anchor.pk, anchor))
        _store_checks(verifier, due)
        outcome.anchors_rechecked = len(due)
        rechecked = [note for note in notes if by_note.get(note.pk)] if old else notes
        outcome.notes_rechecked = len({anchor.note_id for anchor in due})
        now = timezone.now()
        explained: list[Anchor] = []
        for note in rechecked:
            explained += verifier.explain(note, by_note.get(note.pk, []))
            verdict = note_checks.with_check(note, truth.verdict(note, by_note.get(note.pk, []), head))
            if note_checks.check_command(note) and note.status == NoteStatus.WIKI:
                outcome.checks_due.append(note.pk)
            note.verification_state, note.verified_commit = verdict.state, verdict.commit
            note.verification_evidence, note.verified_at = verdict.evidence, now
            if verdict.state == VerificationState.STALE:
                outcome.stale.append(note.slug)
        _store_explained(explained)
        _update_rows(
            Note,
            rechecked,
            {
                "verification_state": "text",
                "verified_commit": "text",
                "verification_evidence": "jsonb",
                "verified_at": "timestamptz",
            },
        )
        # Notes none of whose files changed still hold at the new head.
        Note.objects.filter(project=project, verification_state=VerificationState.VERIFIED).exclude(
            pk__in=[note.pk for note in rechecked]
        ).update(verified_commit=head)
        Project.objects.filter(pk=project.pk).update(last_synced_commit=head, synced_at=timezone.now(), sync_error="")
        project.last_synced_commit, project.sync_error = head, ""
        outcome.stale.sort()
        return outcome


# -- notes that carry a check (brain.checks; docs/truth.md) ---------------------------------------------------


def _queue_check_if_new(note: Note, frontmatter_before: JSON | None) -> None:
    """A wiki note given a check (or a new one) has it run at its project's head by a worker, after the commit."""
    command = note_checks.check_command(note)
    if not command or note.status != NoteStatus.WIKI or note.project_id is None:
        return
    if isinstance(frontmatter_before, dict) and frontmatter_before.get(note_checks.FRONTMATTER_KEY) == command:
        return
    note_id = note.pk

    def queue() -> None:
        async_task("brain.tasks.run_note_check", note_id, task_name=f"note-check-{note_id}")

    transaction.on_commit(queue)


def do_run_note_check(note: Note, commit: str) -> NoteCheckRun | None:
    """Run the wiki note's `check:` at `commit` of its project (once per commit and command), store the run and
    the note's verdict (proven, or stale with the output). None when it has no check, no readable repository,
    or no runner is registered (the supervisor app is not installed)."""
    command = note_checks.check_command(note)
    runner = note_checks.check_runner()
    if not command or note.status != NoteStatus.WIKI or note.project is None or runner is None:
        return None
    run = NoteCheckRun.objects.filter(note=note, commit=commit, command=command).first()
    if run is None:
        try:
            repo = project_rules.repository(note.project)
            with tempfile.TemporaryDirectory(prefix="hyperguild-check-") as folder:
                note_checks.export_tree(repo, commit, Path(folder))
                result = runner(Path(folder), command)
        except RepositoryUnreadable:
            return None
        run, _ = NoteCheckRun.objects.get_or_create(
            note=note,
            commit=commit,
            command=command,
            defaults={
                "passed": result.passed,
                "exit_code": result.exit_code,
                "outcome": result.outcome,
                "output": result.output,
                "seconds": result.seconds,
            },
        )
    with transaction.atomic():
        note = _locked(note)
        head = note.project.last_synced_commit if note.project is not None else ""
        _store_verdict(note, truth.verdict(note, list(note.anchors.all()), head or commit))
    return run
