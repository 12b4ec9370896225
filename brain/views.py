"""The reviewer's pages: the raw-note queue, one note, its actions, and search.

Every change goes through `brain.actions` (promote, merge, reject); these
views only validate a form, fetch the note and call one action. The queue
and the note page read; all writes need staff, POST and CSRF
(`hyperguild.ui.staff_action`).
"""

from __future__ import annotations

import json
from datetime import timedelta

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Count, Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone

from brain import actions
from brain.hooks import provenance_entries
from brain.models import Note, NoteStatus
from brain.search import SearchInputError, search
from brain.slugs import MAX_SLUG_LENGTH
from hyperguild.lib.markdown import render_markdown
from hyperguild.ui import paginate, staff_action, staff_page

SIMILAR_NOTES = 6
SIMILAR_QUERY_CHARS = 1000
AGES = {"1d": timedelta(days=1), "7d": timedelta(days=7), "30d": timedelta(days=30)}


# --- forms ------------------------------------------------------------------------------


class QueueFilterForm(forms.Form):
    q = forms.CharField(required=False, max_length=200)
    source = forms.CharField(required=False, max_length=50)
    session = forms.CharField(required=False, max_length=200)
    kind = forms.CharField(required=False, max_length=100)
    age = forms.ChoiceField(
        required=False,
        choices=[("", "any age"), ("1d", "last 24 hours"), ("7d", "last 7 days"), ("30d", "last 30 days"),
                 ("old", "older than 30 days")],
    )


class PromoteForm(forms.Form):
    # Wing, hall and slug rules live in brain.actions (BrainInputError, via brain.slugs.validate_slug,
    # as for MCP, REST and imports); the form only bounds sizes.
    wing = forms.CharField(max_length=100)
    hall = forms.CharField(max_length=100, required=False)
    title = forms.CharField(max_length=300)
    slug = forms.CharField(max_length=MAX_SLUG_LENGTH)
    body = forms.CharField(widget=forms.Textarea, strip=False)


class RejectForm(forms.Form):
    reason = forms.CharField(max_length=2000, help_text="Say why, so the writer (or retrospective) learns.")


class MergeForm(forms.Form):
    into = forms.CharField(max_length=MAX_SLUG_LENGTH)
    body = forms.CharField(widget=forms.Textarea, strip=False)

    def clean_into(self) -> Note:
        slug = self.cleaned_data["into"].strip()
        target = Note.objects.filter(slug=slug).exclude(status=NoteStatus.ARCHIVED).first()
        if target is None:
            raise forms.ValidationError(f"There is no note {slug!r} to merge into; pick one from the list.")
        return target


class BulkForm(forms.Form):
    action = forms.ChoiceField(choices=[("promote", "promote"), ("reject", "reject")])
    notes = forms.ModelMultipleChoiceField(queryset=Note.objects.raw_queue(), error_messages={
        "required": "Tick at least one note.",
        "invalid_choice": "Note %(value)s is no longer in the queue; reload the page.",
    })
    wing = forms.CharField(max_length=100, required=False)
    hall = forms.CharField(max_length=100, required=False)
    reason = forms.CharField(max_length=2000, required=False)

    def clean(self):
        data = super().clean()
        if data.get("action") == "promote" and not data.get("wing"):
            self.add_error("wing", "Promoting needs a wing.")
        if data.get("action") == "reject" and not (data.get("reason") or "").strip():
            self.add_error("reason", "Rejecting needs a reason.")
        return data


class SearchForm(forms.Form):
    q = forms.CharField(required=False, max_length=500)
    wing = forms.CharField(required=False, max_length=100)
    hall = forms.CharField(required=False, max_length=100)
    status = forms.ChoiceField(
        required=False, choices=[("wiki", "wiki"), ("raw", "raw"), ("any", "any (not archived)")]
    )


# --- helpers ----------------------------------------------------------------------------


def _filtered_queue(form: QueueFilterForm):
    notes = Note.objects.raw_queue()
    if not form.is_valid():
        return notes
    data = form.cleaned_data
    if data["q"]:
        words = data["q"]
        notes = notes.filter(Q(title__icontains=words) | Q(body__icontains=words) | Q(slug__icontains=words))
    if data["source"]:
        notes = notes.filter(source=data["source"])
    if data["session"]:
        notes = notes.filter(session_id=data["session"])
    if data["kind"]:
        notes = notes.filter(Q(frontmatter__kind=data["kind"]) | Q(provenance__kind=data["kind"]))
    if data["age"] in AGES:
        notes = notes.filter(created_at__gte=timezone.now() - AGES[data["age"]])
    elif data["age"] == "old":
        notes = notes.filter(created_at__lt=timezone.now() - AGES["30d"])
    return notes


def _wings_and_halls() -> tuple[list[str], list[str]]:
    pairs = list(Note.objects.wiki().order_by().values_list("wing", "hall").distinct())
    wings = sorted({wing for wing, _ in pairs if wing})
    halls = sorted({hall for _, hall in pairs if hall})
    return wings, halls


def _neighbours(note: Note) -> tuple[Note | None, Note | None]:
    """The raw notes just above (newer) and below (older) this one in the queue."""
    queue = Note.objects.raw_queue().exclude(pk=note.pk).only("id", "title")
    newer = queue.filter(Q(created_at__gt=note.created_at) | Q(created_at=note.created_at, id__gt=note.id))
    older = queue.filter(Q(created_at__lt=note.created_at) | Q(created_at=note.created_at, id__lt=note.id))
    return newer.order_by("created_at", "id").first(), older.first()


def _after_action(note: Note) -> HttpResponse:
    """The note has left the queue: go on to the next one down, or back to the queue."""
    _, older = _neighbours(note)
    if older is None:
        older = Note.objects.raw_queue().exclude(pk=note.pk).first()
    if older is not None:
        return redirect("brain-note", pk=older.pk)
    return redirect("brain-review")


def _similar(note: Note) -> list:
    query = f"{note.title}\n{note.body[:SIMILAR_QUERY_CHARS]}"
    try:
        response = search(query, limit=SIMILAR_NOTES + 1, status="any")
    except SearchInputError:
        return []
    return [hit for hit in response.hits if hit.note_id != note.pk][:SIMILAR_NOTES]


def _provenance_entries(note: Note) -> list:
    """The session entries a note says it came from (provenance `entries`: seq numbers or {seq: …})."""
    session_id = note.session_id or (note.provenance or {}).get("session_id") or ""
    raw = (note.provenance or {}).get("entries") or []
    seqs = []
    for item in raw if isinstance(raw, list) else []:
        value = item.get("seq") if isinstance(item, dict) else item
        if isinstance(value, int) or (isinstance(value, str) and value.isdigit()):
            seqs.append(int(value))
    if not session_id or not seqs:
        return []
    return provenance_entries(session_id, seqs[:200])


def combined_body(target: Note, note: Note) -> str:
    """What a merge proposes: the existing note, then the raw note's text under its title."""
    return f"{target.body.rstrip()}\n\n## {note.title}\n\n{note.body.strip()}\n"


def _note_page(request: HttpRequest, note: Note, *, promote_form=None, reject_form=None, status: int = 200):
    wings, halls = _wings_and_halls()
    newer, older = _neighbours(note)
    session_id = note.session_id or (note.provenance or {}).get("session_id") or ""
    context = {
        "note": note,
        "rendered": render_markdown(note.body),
        "frontmatter_json": json.dumps(note.frontmatter, indent=2, ensure_ascii=False, default=str),
        "provenance_json": json.dumps(note.provenance, indent=2, ensure_ascii=False, default=str),
        "session_id": session_id,
        "entries": _provenance_entries(note),
        "similar": _similar(note),
        "wings": wings,
        "halls": halls,
        "wiki_notes": Note.objects.wiki().only("slug", "title").order_by("slug")[:500],
        "newer": newer,
        "older": older,
        "promote_form": promote_form or PromoteForm(initial={
            "title": note.title, "slug": note.slug, "body": note.body,
            "wing": (note.frontmatter or {}).get("wing", ""), "hall": (note.frontmatter or {}).get("hall", ""),
        }),
        "reject_form": reject_form or RejectForm(),
    }
    return render(request, "brain/note.html", context, status=status)


def _raw_note_or_leave(request: HttpRequest, pk: int) -> tuple[Note, HttpResponse | None]:
    note = get_object_or_404(Note, pk=pk)
    if note.status != NoteStatus.RAW:
        messages.warning(request, f"“{note.title}” is already {note.status}; nothing was changed.")
        return note, redirect("brain-note", pk=note.pk)
    return note, None


# --- pages ------------------------------------------------------------------------------


@login_required
def review_queue(request: HttpRequest) -> HttpResponse:
    form = QueueFilterForm(request.GET)
    notes = _filtered_queue(form).only(
        "id", "slug", "title", "source", "session_id", "frontmatter", "provenance", "created_at", "status"
    )
    page, querystring = paginate(request, notes)
    by_source = list(Note.objects.raw_queue().order_by().values("source").annotate(n=Count("id")).order_by("-n"))
    kinds = sorted(
        {kind for kind in Note.objects.raw_queue().order_by().values_list("frontmatter__kind", flat=True).distinct()
         if isinstance(kind, str) and kind}
    )
    wings, halls = _wings_and_halls()
    context = {
        "form": form,
        "page_obj": page,
        "querystring": querystring,
        "raw_total": sum(row["n"] for row in by_source),
        "by_source": by_source,
        "kinds": kinds,
        "wings": wings,
        "halls": halls,
        "bulk_errors": None,
    }
    return render(request, "brain/review_queue.html", context)


@login_required
def note_detail(request: HttpRequest, pk: int) -> HttpResponse:
    return _note_page(request, get_object_or_404(Note, pk=pk))


@staff_action
def promote_note(request: HttpRequest, pk: int) -> HttpResponse:
    note, leave = _raw_note_or_leave(request, pk)
    if leave:
        return leave
    form = PromoteForm(request.POST)
    if not form.is_valid():
        return _note_page(request, note, promote_form=form, status=400)
    data = form.cleaned_data
    try:
        promoted = actions.do_promote_note(
            note, reviewer=request.user, wing=data["wing"], hall=data["hall"] or "",
            title=data["title"], slug=data["slug"], body=data["body"],
        )
    except actions.BrainInputError as exc:
        form.add_error(None, str(exc))
        return _note_page(request, note, promote_form=form, status=400)
    messages.success(request, f"Promoted “{promoted.title}” to {promoted.path or promoted.wing}.")
    return _after_action(note)


@staff_action
def reject_note(request: HttpRequest, pk: int) -> HttpResponse:
    note, leave = _raw_note_or_leave(request, pk)
    if leave:
        return leave
    form = RejectForm(request.POST)
    if not form.is_valid():
        return _note_page(request, note, reject_form=form, status=400)
    try:
        actions.do_reject_note(note, reviewer=request.user, reason=form.cleaned_data["reason"])
    except actions.BrainInputError as exc:
        form.add_error(None, str(exc))
        return _note_page(request, note, reject_form=form, status=400)
    messages.success(request, f"Rejected “{note.title}”.")
    return _after_action(note)


@staff_page
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
    return render(request, "brain/merge.html", {
        "note": note, "form": form, "target": target, "body": body, "into_value": request.GET.get("into", ""),
        "rendered": render_markdown(body) if body else "",
        "wiki_notes": Note.objects.wiki().only("slug", "title").order_by("slug")[:500],
    }, status=200 if target or not request.GET.get("into") else 400)


@staff_action
def merge_note(request: HttpRequest, pk: int) -> HttpResponse:
    note, leave = _raw_note_or_leave(request, pk)
    if leave:
        return leave
    form = MergeForm(request.POST)
    error = None
    if form.is_valid():
        target = form.cleaned_data["into"]
        if target.pk == note.pk:
            error = "A note cannot be merged into itself."
        else:
            try:
                actions.do_merge_note(note, into=target, reviewer=request.user, body=form.cleaned_data["body"])
            except actions.BrainInputError as exc:
                error = str(exc)
            else:
                messages.success(request, f"Merged “{note.title}” into “{target.title}”.")
                return _after_action(note)
    if error:
        form.add_error(None, error)
    body = request.POST.get("body", "")
    return render(request, "brain/merge.html", {
        "note": note, "form": form, "target": form.cleaned_data.get("into") if hasattr(form, "cleaned_data") else None,
        "body": body, "rendered": render_markdown(body), "into_value": request.POST.get("into", ""),
        "wiki_notes": Note.objects.wiki().only("slug", "title").order_by("slug")[:500],
    }, status=400)


@staff_action
def bulk_review(request: HttpRequest) -> HttpResponse:
    form = BulkForm(request.POST)
    if not form.is_valid():
        for field, errors in form.errors.items():
            for error in errors:
                messages.error(request, f"{field}: {error}" if field != "__all__" else error)
        return redirect(f"{reverse('brain-review')}?{request.POST.get('next_query', '')}")
    data = form.cleaned_data
    done, failed = 0, []
    # No bulk action exists on purpose: each note goes through the same single action as the note page.
    for note in data["notes"]:
        try:
            if data["action"] == "promote":
                actions.do_promote_note(note, reviewer=request.user, wing=data["wing"], hall=data["hall"] or "")
            else:
                actions.do_reject_note(note, reviewer=request.user, reason=data["reason"].strip())
        except actions.BrainInputError as exc:
            failed.append(f"{note.slug}: {exc}")
        else:
            done += 1
    verb = "Promoted" if data["action"] == "promote" else "Rejected"
    messages.success(request, f"{verb} {done} note{'s' if done != 1 else ''}.")
    for failure in failed:
        messages.error(request, failure)
    return redirect(f"{reverse('brain-review')}?{request.POST.get('next_query', '')}")


@login_required
def search_page(request: HttpRequest) -> HttpResponse:
    form = SearchForm(request.GET)
    response, error = None, None
    if form.is_valid() and form.cleaned_data["q"].strip():
        data = form.cleaned_data
        try:
            response = search(
                data["q"], limit=20, wing=data["wing"] or None, hall=data["hall"] or None,
                status=data["status"] or NoteStatus.WIKI,
            )
        except SearchInputError as exc:
            error = str(exc)
    wings, halls = _wings_and_halls()
    return render(request, "brain/search.html", {
        "form": form, "response": response, "error": error, "wings": wings, "halls": halls,
    })
