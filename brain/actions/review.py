"""Review decisions on a note (docs/review.md): edit, promote, reject, archive, merge, refile, demote, reopen,
undo, still true, supersede; a decision on a note settles the successor drafts that name it."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from django.db import transaction
from django.utils import timezone

from brain import checks as note_checks
from brain import truth
from brain.actions.locking import _check_version, _locked, _who
from brain.actions.notes import (
    _after_write,
    _check_wiki_slug,
    _clean_body,
    _clean_frontmatter,
    _clean_place,
    _clean_slug,
    _clean_title,
    _redact_note_fields,
    _redact_slug,
    _save_maybe_reslugged,
    _save_with_revision,
)
from brain.actions.truth import _project_head, _queue_check_if_new, _store_checks, _store_verdict
from brain.errors import BrainInputError
from brain.indexing import notes_changed_in_bulk
from brain.models import (
    AnchorState,
    Note,
    NoteRevision,
    NoteStatus,
)
from brain.slugs import slugify_title

if TYPE_CHECKING:
    from django.contrib.auth.models import User
    from django.db.models import QuerySet


def do_edit_note(
    note: Note,
    *,
    title: str | None = None,
    body: str | None = None,
    frontmatter: Any = None,
    user: User | None = None,
    expected_version: int | None = None,
) -> Note:
    """Change a note's title, body and/or frontmatter (None leaves a field as it is).

    With `expected_version` (what the editing form saw) a note that changed
    meanwhile raises `NoteConflict` and nothing is written.
    """
    new_title = _clean_title(title) if title is not None else None
    new_body = _clean_body(body) if body is not None else None
    new_frontmatter = _clean_frontmatter(frontmatter) if frontmatter is not None else None
    redacted = _redact_note_fields(title=new_title, body=new_body, frontmatter=new_frontmatter)
    new_title, new_body, new_frontmatter = redacted.title, redacted.body, redacted.frontmatter
    with transaction.atomic():
        note = _locked(note, expected_version=expected_version)
        note_checks.refuse_unless_allowed(user, note.frontmatter, new_frontmatter)
        before, version_before = note.snapshot(), note.version
        if new_title is not None:
            note.title = new_title
        if new_body is not None:
            note.body = new_body
        if new_frontmatter is not None:
            note.frontmatter = new_frontmatter
        new_hash = note.compute_hash()
        if new_hash == note.content_hash:
            return note
        note.content_hash = new_hash
        note.redactions = [*note.redactions, *redacted.flags]
        note.provenance = {
            **note.provenance,
            "last_edited_by": _who(user) or "service",
            "last_edited_at": timezone.now().isoformat(),
        }
        _save_with_revision(
            note, before=before, version_before=version_before, action=NoteRevision.Action.EDIT, user=user
        )
        _after_write(note)
        _queue_check_if_new(note, before.get("frontmatter"))
        if note.status == NoteStatus.WIKI:
            _settle_drafts(note, reviewer=user, reason=f"settled: {note.slug} was edited")
        return note


def do_promote_note(
    note: Note,
    *,
    reviewer: User | None,
    wing: str,
    hall: str = "",
    title: str | None = None,
    slug: str | None = None,
    body: str | None = None,
    expected_version: int | None = None,
    group: uuid.UUID | None = None,
    slug_from_title: bool = False,
) -> Note:
    """raw → wiki under wing/hall; records the reviewer and when.

    `group` puts the revision in an existing group (a bulk action: one undo for all its notes).
    `slug_from_title` (instead of `slug`) re-slugs the note from its title, numbered (`-2`, `-3`…) when
    another note has that slug; an explicit `slug` that is taken is refused, never renumbered.
    """
    if slug_from_title and slug is not None:
        raise BrainInputError("give a slug or ask for one from the title, not both.")
    group = group or uuid.uuid4()  # a successor's promotion and the supersession it settles: one undo
    wing, hall = _clean_place(wing, hall, wing_required=True)
    new_title = _clean_title(title) if title is not None else None
    new_body = _clean_body(body) if body is not None else None
    redacted = _redact_note_fields(title=new_title, body=new_body)
    new_title, new_body = redacted.title, redacted.body
    new_slug, slug_flags = _redact_slug(_clean_slug(slug))
    with transaction.atomic():
        note = _locked(note, allowed=(NoteStatus.RAW,), verb="promoted", expected_version=expected_version)
        before, version_before = note.snapshot(), note.version
        if new_title is not None:
            note.title = new_title
        if slug_from_title:
            new_slug = slugify_title(note.title)
        _check_wiki_slug(new_slug or note.slug, hall)
        if new_body is not None:
            note.body = new_body
        note.promote(reviewer=reviewer, wing=wing, hall=hall)
        note.content_hash = note.compute_hash()
        note.redactions = [*note.redactions, *redacted.flags, *slug_flags]

        def save() -> None:
            _save_with_revision(
                note,
                before=before,
                version_before=version_before,
                action=NoteRevision.Action.PROMOTE,
                user=reviewer,
                group=group,
                summary=f"promoted to {note.path}",
            )

        # Bulk promotes race each other for the slug of one title: the unique index decides, not a SELECT.
        _save_maybe_reslugged(note, new_slug, save, renumber=slug_from_title)
        _after_write(note)
        _supersede_what_it_names(note, reviewer=reviewer, group=group)
        return note


def do_reject_note(
    note: Note, *, reviewer: User | None, reason: str, group: uuid.UUID | None = None, settle: bool = True
) -> Note:
    """raw → rejected, with the reason (required) recorded as the review note (`group`: see do_promote_note).

    A rejected successor draft (frontmatter `supersedes:`) settles the re-check of the note it would have
    replaced: that note is still true (do_confirm_note), unless `settle` is False."""
    if not isinstance(reason, str) or not reason.strip():
        raise BrainInputError("a reason is required to reject a note: say why it should not enter the wiki.")
    with transaction.atomic():
        note = _locked(note, allowed=(NoteStatus.RAW,), verb="rejected")
        before, version_before = note.snapshot(), note.version
        note.reject(reviewer=reviewer, reason=reason.strip())
        _save_with_revision(
            note,
            before=before,
            version_before=version_before,
            action=NoteRevision.Action.REJECT,
            user=reviewer,
            group=group,
            summary=reason.strip(),
        )
        _after_write(note, links_changed=False)
        if settle:
            _confirm_what_it_names(note, reviewer=reviewer)
        return note


def do_archive_note(
    note: Note, *, user: User | None = None, reason: str = "", expected_version: int | None = None
) -> Note:
    """Take a note out of search and out of the brain folder; it is never deleted.

    With `expected_version` a note that changed meanwhile raises `NoteConflict` (see do_edit_note).
    """
    with transaction.atomic():
        note = _locked(note)
        if note.status == NoteStatus.ARCHIVED:
            return note
        _check_version(note, expected_version)
        before, version_before = note.snapshot(), note.version
        note.archive(reason=reason)
        note.provenance = {**note.provenance, "archived_by": _who(user) or "service"}
        _save_with_revision(
            note,
            before=before,
            version_before=version_before,
            action=NoteRevision.Action.ARCHIVE,
            user=user,
            summary=reason,
        )
        _after_write(note, links_changed=False)
        _settle_drafts(note, reviewer=user, reason=f"settled: {note.slug} was archived")
        return note


def merge_target_problem(into: Note) -> str:
    """Why `into` cannot take a merge ("" when it can): only a wiki note can, or the merged text leaves the wiki."""
    if into.status == NoteStatus.WIKI:
        return ""
    what_next = (
        "Reopen it first if it should come back, or pick a wiki note."
        if into.status in (NoteStatus.REJECTED, NoteStatus.ARCHIVED)
        else "Pick a wiki note."
    )
    return (
        f"“{into.title}” ({into.slug}) is {into.status}: a note can only be merged into a wiki note, or its text "
        f"would leave both the queue and the wiki. {what_next}"
    )


def _check_merge_target(into: Note) -> None:
    problem = merge_target_problem(into)
    if problem:
        raise BrainInputError(problem)


@notes_changed_in_bulk()  # both notes' background work in one task
def do_merge_note(
    note: Note,
    *,
    into: Note,
    reviewer: User | None,
    body: str,
    expected_version: int | None = None,
) -> Note:
    """Merge a raw note into an existing note: `into` gets `body`, the raw note is archived.

    `expected_version` is the target's version the merge preview was made
    from: when the target changed since, `NoteConflict` is raised and
    nothing is written (the other merge's text would otherwise be lost).
    The target records the raw note under provenance `merged_from`; both
    changes share one revision group, so one undo restores both notes.
    """
    redacted = _redact_note_fields(body=_clean_body(body))
    assert redacted.body is not None  # given, so returned
    body = redacted.body
    with transaction.atomic():
        # Lock in id order: two merges touching the same pair never wait on each other in a cycle.
        first, second = sorted([note.pk, into.pk])
        locked = {n.pk: n for n in Note.objects.select_for_update().filter(pk__in=[first, second]).order_by("pk")}
        note, into = locked[note.pk], locked[into.pk]
        if note.pk == into.pk:
            raise BrainInputError("a note cannot be merged into itself.")
        if note.status != NoteStatus.RAW:
            raise BrainInputError(f"note {note.slug} is {note.status}; only raw notes can be merged.")
        _check_merge_target(into)
        _check_version(into, expected_version)
        group = uuid.uuid4()
        before, version_before = into.snapshot(), into.version
        into.body = body
        into.content_hash = into.compute_hash()
        into.redactions = [*into.redactions, *redacted.flags]
        into.reviewed_by, into.reviewed_at = reviewer, timezone.now()
        merged_from = [
            *(into.provenance.get("merged_from") or []),
            {"slug": note.slug, "id": note.pk, "title": note.title},
        ]
        into.provenance = {**into.provenance, "merged_from": merged_from}
        _save_with_revision(
            into,
            before=before,
            version_before=version_before,
            action=NoteRevision.Action.MERGE,
            user=reviewer,
            group=group,
            summary=f"merged {note.slug} into it",
        )
        _after_write(into)
        before, version_before = note.snapshot(), note.version
        note.archive(reason=f"merged into {into.slug}")
        note.reviewed_by, note.reviewed_at = reviewer, timezone.now()
        _save_with_revision(
            note,
            before=before,
            version_before=version_before,
            action=NoteRevision.Action.MERGED,
            user=reviewer,
            group=group,
            summary=f"merged into {into.slug}",
        )
        _after_write(note, links_changed=False)
        return into


def do_refile_note(
    note: Note,
    *,
    user: User | None,
    wing: str,
    hall: str = "",
    slug: str | None = None,
    expected_version: int | None = None,
) -> Note:
    """Move a wiki note to another wing/hall and/or slug (its file moves with it)."""
    wing, hall = _clean_place(wing, hall, wing_required=True)
    new_slug, slug_flags = _redact_slug(_clean_slug(slug))
    with transaction.atomic():
        note = _locked(note, allowed=(NoteStatus.WIKI,), verb="re-filed", expected_version=expected_version)
        _check_wiki_slug(new_slug or note.slug, hall)
        before, version_before = note.snapshot(), note.version
        note.wing, note.hall = wing, hall
        note.path = note.canonical_path()
        if new_slug in (None, note.slug) and note.snapshot() == before:
            return note
        note.redactions = [*note.redactions, *slug_flags]

        def save() -> None:
            _save_with_revision(
                note,
                before=before,
                version_before=version_before,
                action=NoteRevision.Action.REFILE,
                user=user,
                summary=f"re-filed to {note.path}",
            )

        _save_maybe_reslugged(note, new_slug, save, renumber=False)
        _after_write(note)
        return note


def _back_to_raw(
    note: Note,
    *,
    user: User | None,
    reason: str,
    expected_version: int | None,
    allowed: tuple[str, ...],
    verb: str,
    action: str,
    summary: str,
) -> Note:
    """The note back in the review queue (raw, out of any wing, raw/ on disk); one revision, undoable."""
    with transaction.atomic():
        note = _locked(note, allowed=allowed, verb=verb, expected_version=expected_version)
        before, version_before = note.snapshot(), note.version
        note.status = NoteStatus.RAW
        note.wing = note.hall = ""
        note.path = note.canonical_path()
        if action == NoteRevision.Action.REOPEN:
            note.reviewed_by, note.reviewed_at = None, None  # a demoted wiki note keeps who reviewed it
        note.review_note = reason.strip() if isinstance(reason, str) else ""
        _save_with_revision(
            note,
            before=before,
            version_before=version_before,
            action=action,
            user=user,
            summary=note.review_note or summary.format(status=before["status"]),
        )
        _after_write(note)
        return note


def do_demote_note(note: Note, *, user: User | None, reason: str = "", expected_version: int | None = None) -> Note:
    """wiki → raw: the note goes back to the review queue (out of wiki search, back to raw/ on disk)."""
    return _back_to_raw(
        note,
        user=user,
        reason=reason,
        expected_version=expected_version,
        allowed=(NoteStatus.WIKI,),
        verb="demoted",
        action=NoteRevision.Action.DEMOTE,
        summary="demoted to raw",
    )


def do_reopen_note(note: Note, *, user: User | None, reason: str = "", expected_version: int | None = None) -> Note:
    """rejected or archived → raw: the note is back in the review queue (an undoable revision like any other)."""
    return _back_to_raw(
        note,
        user=user,
        reason=reason,
        expected_version=expected_version,
        allowed=(NoteStatus.REJECTED, NoteStatus.ARCHIVED),
        verb="reopened",
        action=NoteRevision.Action.REOPEN,
        summary="reopened from {status}",
    )


@notes_changed_in_bulk()  # a bulk action's undo: every note's background work in one task per batch
def do_undo_revision(group: uuid.UUID | str, *, user: User | None) -> list[Note]:
    """Undo one reviewer action (every revision of its group): each note gets back its fields from before.

    Refused, with nothing written, when a note changed again after that
    action (undo the later change first), when the action was already
    undone, or when the old slug now belongs to another note. The undo is a
    revision too, so it shows in the history and can itself be undone.
    """
    try:
        group = uuid.UUID(str(group))
    except ValueError:
        raise BrainInputError("no such change to undo.")
    with transaction.atomic():
        revisions = list(NoteRevision.objects.select_for_update().filter(group=group).order_by("id"))
        if not revisions:
            raise BrainInputError("no such change to undo.")
        if any(rev.undone_at for rev in revisions):
            raise BrainInputError("this change was already undone.")
        notes = {
            n.pk: n
            for n in Note.objects.select_for_update().filter(pk__in=[r.note_id for r in revisions]).order_by("pk")
        }
        for rev in revisions:
            note = notes[rev.note_id]
            # Only the fields the revision recorded: one written before a field existed still undoes.
            fields_now = {name: value for name, value in note.snapshot().items() if name in rev.after}
            if note.version != rev.version_after or fields_now != rev.after:
                raise BrainInputError(
                    f"“{note.title}” changed after this {rev.get_action_display()} (now version {note.version}); "
                    "undo the later changes first, from its history."
                )
        undo_group, now, restored = uuid.uuid4(), timezone.now(), list[Note]()
        # The note that changed slug last gives its slug back first.
        for rev in reversed(revisions):
            note = notes[rev.note_id]
            old_slug = rev.before.get("slug", note.slug)
            if old_slug != note.slug and Note.objects.filter(slug=old_slug).exclude(pk=note.pk).exists():
                raise BrainInputError(f"slug {old_slug!r} now belongs to another note; re-file that one first.")
            before, version_before = note.snapshot(), note.version
            note.restore(rev.before)
            undo = _save_with_revision(
                note,
                before=before,
                version_before=version_before,
                action=NoteRevision.Action.UNDO,
                user=user,
                group=undo_group,
                summary=f"undid {rev.get_action_display()}",
            )
            undo.undoes = group
            undo.save(update_fields=["undoes"])
            _after_write(note)
            restored.append(note)
        NoteRevision.objects.filter(group=group).update(
            undone_at=now, undone_by=user if getattr(user, "pk", None) else None
        )
        return restored


def do_confirm_note(note: Note, *, user: User | None, expected_version: int | None = None) -> Note:
    """ "Still true": re-check at the project's head, waive what no longer holds there, verified at that commit.

    One revision (the waivers are part of it), so one undo makes the note stale again.
    """
    with transaction.atomic():
        note = _locked(note, allowed=EXPORTED_STATES, verb="confirmed", expected_version=expected_version)
        repo, commit, reason = _project_head(note.project)
        if repo is None:
            raise BrainInputError(f"“{note.title}” cannot be re-anchored: {reason}.")
        anchors = list(note.anchors.all())
        # Confirmed at this commit: what changed under its anchors before it is settled (counted from here on).
        _store_checks(
            truth.Verifier(repo, commit, project=note.project.name if note.project else "", confirmed=True), anchors
        )
        before, version_before = note.snapshot(), note.version
        waived = dict(note.waived_anchors or {})
        for anchor in anchors:
            if anchor.state in (AnchorState.CHANGED, AnchorState.GONE):
                waived[anchor.key] = {"commit": commit, "by": _who(user) or "service", "at": timezone.now().isoformat()}
        failed = note_checks.failed_run(note)
        if failed is not None:  # its check failed there: waived for that commit, like an anchor
            waived[note_checks.waiver_key(failed)] = {
                "commit": failed.commit,
                "by": _who(user) or "service",
                "at": timezone.now().isoformat(),
            }
        note.waived_anchors = waived
        _save_with_revision(
            note,
            before=before,
            version_before=version_before,
            action=NoteRevision.Action.STILL_TRUE,
            user=user,
            summary=f"still true at {commit[:7]}",
        )
        _store_verdict(note, truth.verdict(note, anchors, commit))
        _settle_drafts(note, reviewer=user, reason=f"settled: {note.slug} is still true at {commit[:7]}")
        return note


EXPORTED_STATES = (NoteStatus.RAW, NoteStatus.WIKI)


def do_supersede_note(
    old: Note, new: Note, *, reason: str, user: User | None = None, group: uuid.UUID | None = None
) -> Note:
    """`old` is superseded by `new`: out of default search, brain_context and SessionStart, still readable.

    One revision on the old note (who, when, why; undo restores it). The link goes both ways
    (`old.superseded_by`, `new.supersedes`). Refused, with nothing written, for a note superseding
    itself, a successor that is not live or is itself superseded, or an old note already superseded.
    """
    if not isinstance(reason, str) or not reason.strip():
        raise BrainInputError("a reason is required to supersede a note: say what changed.")
    reason = (_redact_note_fields(body=reason.strip()).body or "")[:2000]  # a body given comes back
    with transaction.atomic():
        first, second = sorted([old.pk, new.pk])
        locked = {n.pk: n for n in Note.objects.select_for_update().filter(pk__in=[first, second]).order_by("pk")}
        if old.pk == new.pk:
            raise BrainInputError("a note cannot supersede itself.")
        old, new = locked[old.pk], locked[new.pk]
        if old.superseded_by is not None:
            raise BrainInputError(f"{old.slug} is already superseded by {old.superseded_by.slug}; undo that first.")
        if new.status not in EXPORTED_STATES or new.superseded_by_id is not None:
            raise BrainInputError(
                f"{new.slug} cannot be the successor: it is {'superseded' if new.superseded_by_id else new.status}."
            )
        if old.status not in EXPORTED_STATES:
            raise BrainInputError(f"note {old.slug} is {old.status}; only raw or wiki notes can be superseded.")
        before, version_before = old.snapshot(), old.version
        old.superseded_by, old.superseded_at = new, timezone.now()
        old.superseded_by_person = user if getattr(user, "pk", None) else None
        old.superseded_reason = reason
        _save_with_revision(
            old,
            before=before,
            version_before=version_before,
            action=NoteRevision.Action.SUPERSEDE,
            user=user,
            group=group,
            summary=f"superseded by {new.slug}: {reason}",
        )
        _after_write(old, links_changed=False)
        _settle_drafts(
            old, reviewer=user, reason=f"settled: {old.slug} is superseded by {new.slug}", keep=new, group=group
        )
        return old


def do_promote_superseding(note: Note, old: Note, *, reviewer: User | None, reason: str) -> Note:
    """A raw note the duplicate finder paired with wiki note `old` enters the wiki in its place: promoted
    to `old`'s wing and hall, and `old` superseded by it. One revision group: one undo restores both."""
    if old.status != NoteStatus.WIKI:
        raise BrainInputError(f"{old.slug} is {old.status}; a raw note can only supersede a wiki note.")
    group = uuid.uuid4()
    with transaction.atomic():
        promoted = do_promote_note(note, reviewer=reviewer, wing=old.wing, hall=old.hall, group=group)
        old.refresh_from_db()
        if old.superseded_by_id != promoted.pk:  # a draft that names it was promoted in its place already
            do_supersede_note(old, promoted, reason=reason, user=reviewer, group=group)
        return promoted


# -- successor drafts: one decision settles a draft and the re-check of the note it names (docs/truth.md) ------

SUPERSEDES_KEY = "supersedes"


def successor_drafts(old: Note) -> QuerySet[Note]:
    """Raw notes waiting for review that say they replace `old` (frontmatter `supersedes: <slug>`): the
    retrospective's drafts after a session changed the code `old` cites, or a session's own successor."""
    return Note.objects.filter(status=NoteStatus.RAW, **{f"frontmatter__{SUPERSEDES_KEY}": old.slug}).order_by("id")


def _named_old(draft: Note) -> Note | None:
    slug = (draft.frontmatter or {}).get(SUPERSEDES_KEY)
    if not isinstance(slug, str) or not slug or slug == draft.slug:
        return None
    return Note.objects.filter(slug=slug, status=NoteStatus.WIKI, superseded_by__isnull=True).first()


def _settle_drafts(
    old: Note, *, reviewer: User | None, reason: str, keep: Note | None = None, group: uuid.UUID | None = None
) -> None:
    """The note's re-check was decided (still true, edited, superseded, archived): its drafts are rejected."""
    drafts = successor_drafts(old)
    if keep is not None:
        drafts = drafts.exclude(pk=keep.pk)
    for draft in drafts:
        do_reject_note(draft, reviewer=reviewer, reason=reason, group=group, settle=False)


def _supersede_what_it_names(promoted: Note, *, reviewer: User | None, group: uuid.UUID) -> None:
    """A promoted draft takes the place of the wiki note it names (its re-check, and its other drafts, settled)."""
    old = _named_old(promoted)
    if old is not None:
        do_supersede_note(
            old, promoted, reason=f"replaced by {promoted.slug}, promoted from review", user=reviewer, group=group
        )


def _confirm_what_it_names(rejected: Note, *, reviewer: User | None) -> None:
    """A rejected draft leaves the note it named as it is: when that note waits for a re-check, it is still true."""
    old = _named_old(rejected)
    if old is not None and Note.objects.needs_recheck().filter(pk=old.pk).exists():
        do_confirm_note(old, user=reviewer)
