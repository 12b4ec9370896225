"""Truth (docs/truth.md): the "Needs a re-check" queue and its one-click decisions, and the projects page."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Count, Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse

from brain import actions
from brain.errors import BrainInputError
from brain.models import EXPORTED_STATUSES, Note, NoteStatus, Project
from brain.views.pages import REVIEW, _raw_note_or_leave, _undo_message
from brain.views.review import _return_path
from hyperguild.ui import paginate, role_action

if TYPE_CHECKING:
    from brain.types import SignedInRequest


# --- truth: the "Needs a re-check" queue and its one-click decisions (docs/truth.md) --------------------


RECHECK_PAGE = 20


@login_required
def recheck_queue(request: HttpRequest) -> HttpResponse:
    """Stale notes, oldest check first: for each anchor that no longer holds, what the note quotes beside
    what the code says now, and the decisions (still true, edit, superseded by…, archive)."""
    notes = Note.objects.needs_recheck().select_related("project").order_by("verified_at", "id")
    page, query = paginate(request, notes, per_page=RECHECK_PAGE)
    # Beside each note, the successor drafts waiting for review (one decision settles both).
    drafts: dict[str, list[Note]] = {}
    slugs = [note.slug for note in page.object_list]
    for draft in Note.objects.filter(status=NoteStatus.RAW, frontmatter__supersedes__in=slugs).order_by("id"):
        drafts.setdefault(draft.frontmatter.get("supersedes"), []).append(draft)
    for note in page.object_list:
        note.successor_drafts = drafts.get(note.slug, [])
    return render(request, "brain/recheck.html", {"page": page, "notes": page.object_list, "query": query})


def _stale_note(pk: int) -> Note:
    return get_object_or_404(Note, pk=pk)


@role_action(REVIEW)
def still_true(request: SignedInRequest, pk: int) -> HttpResponse:
    note = _stale_note(pk)
    try:
        confirmed = actions.do_confirm_note(note, user=request.user, expected_version=_posted_version(request))
    except BrainInputError as exc:
        messages.error(request, str(exc))
        return redirect("brain-recheck")
    _undo_message(
        request, f"“{confirmed.title}” is still true: re-anchored at {confirmed.verified_commit[:7]}.", confirmed
    )
    return redirect(_return_path(request, reverse("brain-recheck")))


@role_action(REVIEW)
def supersede_note(request: SignedInRequest, pk: int) -> HttpResponse:
    note = _stale_note(pk)
    by = (request.POST.get("by") or "").strip()
    successor = Note.objects.filter(slug=by).first() if by else None
    if successor is None:
        messages.error(request, f"No note with slug {by!r}: give the slug of the note that replaces “{note.title}”.")
        return redirect(_return_path(request, reverse("brain-recheck")))
    try:
        old = actions.do_supersede_note(note, successor, reason=request.POST.get("reason") or "", user=request.user)
    except BrainInputError as exc:
        messages.error(request, str(exc))
        return redirect(_return_path(request, reverse("brain-recheck")))
    _undo_message(request, f"“{old.title}” is superseded by “{successor.title}”.", old)
    return redirect(_return_path(request, reverse("brain-recheck")))


@role_action(REVIEW)
def promote_superseding(request: SignedInRequest, pk: int) -> HttpResponse:
    """On a raw note the duplicate finder paired with a wiki note: promote it in the wiki note's place."""
    note, leave = _raw_note_or_leave(request, pk)
    if leave:
        return leave
    old = Note.objects.filter(slug=(request.POST.get("old") or "").strip()).first()
    if old is None:
        messages.error(request, "No such wiki note to supersede.")
        return redirect("brain-note", pk=note.pk)
    reason = (request.POST.get("reason") or "").strip() or f"replaced by the newer note {note.slug}"
    try:
        promoted = actions.do_promote_superseding(note, old, reviewer=request.user, reason=reason)
    except BrainInputError as exc:
        messages.error(request, str(exc))
        return redirect("brain-note", pk=note.pk)
    _undo_message(request, f"Promoted “{promoted.title}”; it supersedes “{old.title}”.", promoted)
    return redirect("brain-note", pk=promoted.pk)


@role_action(REVIEW)
def archive_note(request: SignedInRequest, pk: int) -> HttpResponse:
    note = get_object_or_404(Note, pk=pk)
    try:
        archived = actions.do_archive_note(
            note,
            user=request.user,
            reason=(request.POST.get("reason") or "").strip(),
            expected_version=_posted_version(request),
        )
    except BrainInputError as exc:
        messages.error(request, str(exc))
        return redirect(_return_path(request, reverse("brain-recheck")))
    _undo_message(request, f"Archived “{archived.title}”.", archived)
    return redirect(_return_path(request, reverse("brain-recheck")))


def _posted_version(request: HttpRequest) -> int | None:
    value = request.POST.get("version", "")
    return int(value) if value.isdigit() else None


@login_required
def projects_page(request: HttpRequest) -> HttpResponse:
    """Every project: its repository and branch, the head its notes were checked at, and how many are
    proven, verified, stale and unverified (or why its repository cannot be read)."""
    # Live notes only, as the re-check queue and its badge count them (a superseded or archived note is no
    # longer anyone's to re-check: issue 47 saw "2 stale" beside a badge of 1).
    live = Q(notes__status__in=EXPORTED_STATUSES, notes__superseded_by__isnull=True)
    states = {
        state: Count("notes", filter=live & Q(notes__verification_state=state))
        for state in ("proven", "verified", "stale", "unverified")
    }
    projects = Project.objects.annotate(**states).order_by("name")
    return render(request, "brain/projects.html", {"projects": projects})
