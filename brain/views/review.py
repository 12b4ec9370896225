"""The raw-note queue, one note, and the reviewer's decisions on it: promote, reject, edit, refile, demote,
reopen, merge, undo; the reviewing guidelines."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Unpack, cast

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Count
from django.db.models.functions import Substr
from django.http import HttpRequest, HttpResponse, JsonResponse, QueryDict
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme

from brain import actions, similar
from brain.errors import BrainInputError, NoteConflict
from brain.models import Note, NoteRevision, NoteStatus
from brain.presenters import render_note_body
from brain.views.forms import (
    EXCERPT_CHARS,
    PAGE_SIZES,
    SORTS,
    DemoteForm,
    EditForm,
    MergeForm,
    PromoteForm,
    QueueFilterForm,
    RefileForm,
    RejectForm,
)
from brain.views.pages import (
    GUIDELINES_SLUG,
    GUIDELINES_TEXT,
    REVIEW,
    NoteForms,
    _after_action,
    _conflict,
    _filter_query,
    _filtered_queue,
    _guidelines,
    _guidelines_context,
    _note_form_action,
    _note_page,
    _note_url,
    _raw_note_or_leave,
    _undo_message,
    _wiki_duplicates,
    _wings_and_halls,
    combined_body,
)
from hyperguild.lib.diffs import html_diff
from hyperguild.ui import paginate, role_action, role_page, staff_action

if TYPE_CHECKING:
    from brain.types import SignedInRequest


# --- pages ------------------------------------------------------------------------------


def _queue_context(request: SignedInRequest, form: QueueFilterForm) -> dict[str, object]:
    per = form.cleaned_data.get("per") if form.is_valid() else None
    notes = (
        _filtered_queue(form)
        .select_related("created_by")
        .only(
            "id",
            "slug",
            "title",
            "source",
            "session_id",
            "frontmatter",
            "provenance",
            "created_at",
            "status",
            "content_hash",
            "created_by__username",
        )
        .annotate(excerpt=Substr("body", 1, EXCERPT_CHARS))
    )
    page, querystring = paginate(request, notes, per_page=per or PAGE_SIZES[0])
    page.object_list = list(page.object_list)
    badges = similar.duplicate_badges(page.object_list)
    for note in page.object_list:
        note.likely_duplicates = badges.get(note.pk, [])
    by_source = list(Note.objects.raw_queue().order_by().values("source").annotate(n=Count("id")).order_by("-n"))
    kinds = sorted(
        {
            kind
            for kind in Note.objects.raw_queue().order_by().values_list("frontmatter__kind", flat=True).distinct()
            if isinstance(kind, str) and kind
        }
    )
    queue = Note.objects.raw_queue().order_by()
    projects = sorted(
        {
            value
            for pair in queue.values_list("frontmatter__project", "provenance__project").distinct()
            for value in pair
            if isinstance(value, str) and value
        }
    )
    wings, halls = _wings_and_halls()
    filter_params = cast(QueryDict, form.data).copy()  # _queue_form binds a QueryDict
    filter_params.pop("page", None)
    filter_query = filter_params.urlencode()
    return {
        "form": form,
        "page_obj": page,
        "querystring": querystring,
        "filter_query": filter_query,
        "raw_total": sum(row["n"] for row in by_source),
        "mine_total": Note.objects.raw_queue().filter(created_by=request.user).count(),
        "by_source": by_source,
        "kinds": kinds,
        "projects": projects,
        **_guidelines_context(),
        "wings": wings,
        "halls": halls,
        "sorts": [(key, label) for key, (label, _) in SORTS.items()],
        "page_sizes": PAGE_SIZES,
        "bulk_errors": None,
        "ticked": set(),
        "bulk": {},
    }


@login_required
def review_queue(request: SignedInRequest) -> HttpResponse:
    return render(request, "brain/review_queue.html", _queue_context(request, QueueFilterForm(request.GET)))


@login_required
def note_detail(request: HttpRequest, pk: int) -> HttpResponse:
    return _note_page(request, get_object_or_404(Note, pk=pk))


@login_required
def similar_panel(request: HttpRequest, pk: int) -> HttpResponse:
    """The similar-notes panel alone: ranked now when the note has no ranking for its text (or `?again=1`)."""
    note = get_object_or_404(Note, pk=pk)
    found = None if request.GET.get("again") else similar.stored(note)
    if found is None:
        found = similar.refresh(note)
    similar_notes = similar.with_notes(found)
    return render(
        request,
        "brain/snippets/similar.html",
        {
            "note": note,
            "similar": similar_notes,
            "filter_query": _filter_query(request),
            "duplicates": _wiki_duplicates(similar_notes) if note.status == NoteStatus.RAW else [],
        },
    )


@role_action(REVIEW)
@_note_form_action(PromoteForm, "promote_form", raw_only=True)
def promote_note(request: SignedInRequest, note: Note, form: PromoteForm) -> HttpResponse:
    data = form.cleaned_data
    if not data["confirm_duplicate"]:
        # A decision: the stored ranking only while no wiki note changed since it was made.
        found = similar.current(note)
        if similar.wiki_duplicates(found):
            # The warning above the form names the note(s) and offers the merge; the error only says what to do.
            form.add_error("confirm_duplicate", "Not promoted: merge it into that note, or tick “promote anyway”.")
            return _note_page(request, note, promote_form=form, status=400, similar_found=found)
    try:
        promoted = actions.do_promote_note(
            note,
            reviewer=request.user,
            wing=data["wing"],
            hall=data["hall"] or "",
            title=data["title"],
            slug=data["slug"],
            body=data["body"],
            expected_version=data["version"],
        )
    except BrainInputError as exc:
        return _refused(request, note, exc, body=data["body"], promote_form=form)
    _undo_message(request, f"Promoted “{promoted.title}” to {promoted.path or promoted.wing}.", promoted)
    return _after_action(note, _filter_query(request))


def _refused(
    request: HttpRequest, note: Note, exc: BrainInputError, *, body: str | None = None, **form: Unpack[NoteForms]
) -> HttpResponse:
    """The note page again with the action's refusal on `form` (one `<name>_form=` argument).

    A conflict answers 409; where the form carried a body, the page shows the note as it is now beside it.
    """
    ((_, bound),) = form.items()
    assert isinstance(bound, forms.Form)  # every NoteForms value is one
    bound.add_error(None, str(exc))
    if isinstance(exc, NoteConflict) and body is not None:
        return _note_page(request, exc.current, **form, conflict=_conflict(exc.current, body), status=409)
    return _note_page(request, note, **form, status=exc.http_status)


@role_action(REVIEW)
@_note_form_action(RejectForm, "reject_form", raw_only=True)
def reject_note(request: SignedInRequest, note: Note, form: RejectForm) -> HttpResponse:
    try:
        rejected = actions.do_reject_note(note, reviewer=request.user, reason=form.cleaned_data["reason"])
    except BrainInputError as exc:
        return _refused(request, note, exc, reject_form=form)
    _undo_message(request, f"Rejected “{note.title}”.", rejected)
    return _after_action(note, _filter_query(request))


@role_action(REVIEW)
@_note_form_action(EditForm, "edit_form")
def edit_note(request: SignedInRequest, note: Note, form: EditForm) -> HttpResponse:
    data = form.cleaned_data
    body = data["body"]
    frontmatter = None
    if "check" in request.POST and data["check"] != (note.frontmatter or {}).get("check", ""):
        frontmatter = {key: value for key, value in (note.frontmatter or {}).items() if key != "check"}
        if data["check"]:
            frontmatter["check"] = data["check"]
    try:
        edited = actions.do_edit_note(
            note,
            title=data["title"],
            body=body,
            frontmatter=frontmatter,
            user=request.user,
            expected_version=data["version"],
        )
    except BrainInputError as exc:
        return _refused(request, note, exc, body=body, edit_form=form)
    if edited.version == note.version:
        messages.info(request, "Nothing changed.")
    else:
        _undo_message(request, f"Saved “{edited.title}”.", edited)
    return redirect(_note_url(edited.pk, _filter_query(request)))


@role_action(REVIEW)
@_note_form_action(RefileForm, "refile_form")
def refile_note(request: SignedInRequest, note: Note, form: RefileForm) -> HttpResponse:
    data = form.cleaned_data
    try:
        refiled = actions.do_refile_note(
            note,
            user=request.user,
            wing=data["wing"],
            hall=data["hall"] or "",
            slug=data["slug"],
            expected_version=data["version"],
        )
    except BrainInputError as exc:
        return _refused(request, note, exc, refile_form=form)
    _undo_message(request, f"Re-filed “{refiled.title}” to {refiled.path}.", refiled)
    return redirect("brain-note", pk=refiled.pk)


def _back_to_the_queue(request: SignedInRequest, pk: int, action: Callable[..., Note], done: str) -> HttpResponse:
    """Demote or reopen: an optional reason and the version seen (DemoteForm), the action, back to the note."""
    note = get_object_or_404(Note, pk=pk)
    form = DemoteForm(request.POST)
    form.is_valid()
    try:
        changed = action(
            note,
            user=request.user,
            reason=form.cleaned_data.get("reason") or "",
            expected_version=form.cleaned_data.get("version"),
        )
    except BrainInputError as exc:
        messages.error(request, str(exc))
        return redirect("brain-note", pk=note.pk)
    _undo_message(request, done.format(title=changed.title), changed)
    return redirect("brain-note", pk=changed.pk)


@role_action(REVIEW)
def demote_note(request: SignedInRequest, pk: int) -> HttpResponse:
    return _back_to_the_queue(request, pk, actions.do_demote_note, "Demoted “{title}” back to the review queue.")


@role_action(REVIEW)
def reopen_note(request: SignedInRequest, pk: int) -> HttpResponse:
    return _back_to_the_queue(
        request, pk, actions.do_reopen_note, "Reopened “{title}”: it is back in the review queue."
    )


def _return_path(request: HttpRequest, fallback: str) -> str:
    """Where an undo goes back to: the page its button was on (same site only), else `fallback`."""
    wanted = request.POST.get("next", "")
    if wanted and url_has_allowed_host_and_scheme(
        wanted, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return wanted
    return fallback


@role_action(REVIEW)
def undo_change(request: SignedInRequest, group: str) -> HttpResponse:
    """Undo one action (or redo, when that action was an undo).

    One note: back to that note, so the reviewer sees what came back. Several (a bulk action): back to
    the page the button was on, the filtered queue, where they all return.
    """
    revisions = list(NoteRevision.objects.filter(group=group).order_by("id"))
    if not revisions:
        messages.error(request, "There is no such change to undo.")
        return redirect("brain-review")
    revision = revisions[0]
    single = len({rev.note_id for rev in revisions}) == 1
    fallback = reverse("brain-note", args=[revision.note_id]) if single else reverse("brain-review")
    try:
        restored = actions.do_undo_revision(group, user=request.user)
    except BrainInputError as exc:
        messages.error(request, f"Nothing was undone: {exc}")
        return redirect(_return_path(request, fallback) if not single else fallback)
    names = ", ".join(f"“{note.title}”" for note in restored[:5])
    if len(restored) > 5:
        names += f" and {len(restored) - 5} more"
    if revision.action == NoteRevision.Action.UNDO:
        text = f"Redid the change to {names}."
    else:
        text = f"Undid the {revision.get_action_display()} of {names}."
    _undo_message(request, text, restored[0])
    return redirect(fallback if single else _return_path(request, fallback))


def _merge_context(
    request: HttpRequest,
    note: Note,
    target: Note | None,
    body: str,
    into_value: str,
    form: forms.Form,
    version: int | str | None = None,
) -> dict[str, object]:
    return {
        "filter_query": _filter_query(request),
        "note": note,
        "form": form,
        "target": target,
        "body": body,
        "into_value": into_value,
        "version": version if version is not None else (target.version if target else ""),
        "rendered": render_note_body(body) if body else "",
        "diff": html_diff(target.body, body) if target and body else "",
        "wiki_notes": Note.objects.wiki().only("slug", "title").order_by("slug")[:500],
    }


@role_page(REVIEW)
def merge_preview(request: HttpRequest, pk: int) -> HttpResponse:
    """GET: the combined text of the target and this note, to edit before saving. Writes nothing."""
    note = get_object_or_404(Note, pk=pk)
    form = MergeForm(request.GET or None)
    target = None
    body = ""
    if request.GET.get("into"):
        form = MergeForm({"into": request.GET["into"], "body": "-"})
        if form.is_valid():
            target = form.cleaned_data["into"]
            body = combined_body(target, note)
    return render(
        request,
        "brain/merge.html",
        _merge_context(request, note, target, body, request.GET.get("into", ""), form),
        status=200 if target or not request.GET.get("into") else 400,
    )


@role_action(REVIEW, json=True)
def merge_render(request: HttpRequest, pk: int) -> JsonResponse:
    """The live preview: the edited combined text rendered (sanitised) and diffed against the target now."""
    get_object_or_404(Note, pk=pk)
    body = request.POST.get("body", "")[: settings.BRAIN_MAX_NOTE_BYTES]
    target = Note.objects.wiki().filter(slug=request.POST.get("into", "")).first()
    return JsonResponse(
        {
            "html": render_note_body(body),
            "diff": str(html_diff(target.body, body)) if target else "",
            "target_version": target.version if target else None,
        }
    )


@role_action(REVIEW)
def merge_note(request: SignedInRequest, pk: int) -> HttpResponse:
    note, leave = _raw_note_or_leave(request, pk)
    if leave:
        return leave
    form = MergeForm(request.POST)
    error, status, version = None, 400, None
    body = actions.normalise_text(request.POST.get("body", ""))
    target = None
    conflict = None
    if form.is_valid():
        target = form.cleaned_data["into"]
        if target.pk == note.pk:
            error = "A note cannot be merged into itself."
        else:
            try:
                actions.do_merge_note(
                    note, into=target, reviewer=request.user, body=body, expected_version=form.cleaned_data["version"]
                )
            except NoteConflict as exc:
                error, status, target = str(exc), 409, exc.current
                # Saving again is now a deliberate choice over the text shown; nothing is lost meanwhile.
                conflict, version = _conflict(exc.current, body), exc.current.version
            except BrainInputError as exc:
                error = str(exc)
            else:
                target.refresh_from_db()
                _undo_message(request, f"Merged “{note.title}” into “{target.title}”.", target)
                return _after_action(note, _filter_query(request))
    if error:
        form.add_error(None, error)
    context = _merge_context(
        request,
        note,
        target,
        body,
        request.POST.get("into", ""),
        form,
        version=version if version is not None else request.POST.get("version", ""),
    )
    context["conflict"] = conflict
    return render(request, "brain/merge.html", context, status=status)


@staff_action
def write_guidelines(request: SignedInRequest) -> HttpResponse:
    """Start the reviewing guidelines (a wiki note) from a default text, or open them when they exist."""
    note = _guidelines()
    if note is None:
        note = actions.do_ingest_note(
            title="Reviewing guidelines",
            body=GUIDELINES_TEXT,
            wing="guides",
            slug=GUIDELINES_SLUG,
            source="review-ui",
            user=request.user,
        )
        messages.success(request, "Wrote the reviewing guidelines from a starting text: edit them to suit the team.")
    return redirect(f"{reverse('brain-note', args=[note.pk])}#edit-panel")
