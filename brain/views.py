"""The reviewer's pages: the raw-note queue, one note, its actions, and search.

Every change goes through `brain.actions` (promote, merge, reject); these
views only validate a form, fetch the note and call one action. The queue
and the note page read; all writes need the reviewer role, POST and CSRF
(`hyperguild.ui.role_action`; staff may too).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from datetime import timedelta
from functools import wraps
from typing import TYPE_CHECKING, Any, TypedDict, Unpack, cast
from urllib.parse import urlencode

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Count, Q
from django.db.models.functions import Substr
from django.http import HttpRequest, HttpResponse, JsonResponse, QueryDict
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme

from brain import actions, similar
from brain.callbacks import provenance_entries
from brain.errors import BrainInputError, NoteConflict
from brain.indexing import notes_changed_in_bulk
from brain.inputs import NoteEditInput, QueryInput, WikiNoteInput, form_field
from brain.limits import MAX_SESSION_ID_LENGTH, MAX_TITLE_LENGTH
from brain.models import Note, NoteRevision, NoteStatus, Project
from brain.presenters import render_note_body
from brain.search import SearchInputError, search
from hyperguild.lib.diffs import html_diff
from hyperguild.ui import paginate, role_action, role_page, staff_action

if TYPE_CHECKING:
    from django.db.models import QuerySet

    from brain.types import SignedInRequest

HISTORY_LIMIT = 50
BACKLINKS_LIMIT = 100
GUIDELINES_SLUG = "review-guidelines"
GUIDELINES_TEXT = """What goes into the wiki, and what does not.

- **Promote** a note that a later session can act on: a decision and its reason, a correction, a surprise.
- **Merge** a note into the wiki note that already says most of it (the queue flags likely duplicates).
- **Reject** what is wrong, a one-off, or only true of one session; say why, so the writer learns.
- Keep titles short and specific; put each note in the wing (and hall) where someone would look for it.
"""
AGES = {"1d": timedelta(days=1), "7d": timedelta(days=7), "30d": timedelta(days=30)}

REVIEW = "brain.review_note"  # the reviewer role (hyperguild.roles)


# --- forms ------------------------------------------------------------------------------

# Queue orders: (label, order_by); the last key is always `id` so every order is total and
# "next" is well defined.
SORTS = {
    "newest": ("newest first", ("-created_at", "-id")),
    "oldest": ("oldest first", ("created_at", "id")),
    "title": ("title A→Z", ("title", "id")),
    "source": ("source, then newest", ("source", "-created_at", "-id")),
}
PAGE_SIZES = (25, 50, 100, 200)
EXCERPT_CHARS = 240


class QueueFilterForm(forms.Form):
    q = forms.CharField(required=False, max_length=200)
    source = forms.CharField(required=False, max_length=50)
    session = forms.CharField(required=False, max_length=MAX_SESSION_ID_LENGTH)
    kind = forms.CharField(required=False, max_length=100)
    project = forms.CharField(required=False, max_length=200)
    # A username: whose notes ("Mine" links to the signed-in person's own).
    author = forms.CharField(required=False, max_length=150)
    age = forms.ChoiceField(
        required=False,
        choices=[("", "any age"), ("1d", "last 24 hours"), ("7d", "last 7 days"), ("30d", "last 30 days"),
                 ("old", "older than 30 days")],
    )
    sort = forms.ChoiceField(required=False, choices=[(key, label) for key, (label, _) in SORTS.items()])
    per = forms.TypedChoiceField(required=False, coerce=int, empty_value=PAGE_SIZES[0],  # type: ignore[arg-type]  # Django takes any empty value; django-stubs says str
                                 choices=[(str(n), f"{n} a page") for n in PAGE_SIZES])


class VersionedForm(forms.Form):
    # The note's version when the form was opened; the action refuses to save over a newer one.
    version = forms.IntegerField(min_value=0, required=False)


class PromoteForm(VersionedForm):
    # The fields and their sizes are brain.inputs' models' (as for MCP and REST); wing, hall and slug rules are the
    # actions' (BrainInputError, via brain.slugs.validate_slug, as for MCP, REST and imports).
    wing = form_field(WikiNoteInput, "wing")
    hall = form_field(WikiNoteInput, "hall", required=False)
    title = form_field(WikiNoteInput, "title")
    slug = form_field(WikiNoteInput, "slug")
    body = form_field(WikiNoteInput, "body")
    confirm_duplicate = forms.BooleanField(required=False)


class RejectForm(forms.Form):
    reason = forms.CharField(max_length=2000, help_text="Say why, so the writer (or retrospective) learns.")


class EditForm(VersionedForm):
    title = form_field(NoteEditInput, "title")
    body = form_field(NoteEditInput, "body")
    # A reviewer's: a command that proves the note (brain.checks); empty removes it. Absent: left as it is.
    check = forms.CharField(max_length=500, required=False, strip=True)


class RefileForm(VersionedForm):
    wing = form_field(WikiNoteInput, "wing")
    hall = form_field(WikiNoteInput, "hall", required=False)
    slug = form_field(WikiNoteInput, "slug")


class DemoteForm(VersionedForm):
    reason = forms.CharField(max_length=2000, required=False)


class MergeForm(VersionedForm):
    into = form_field(NoteEditInput, "slug")
    body = form_field(NoteEditInput, "body")

    def clean_into(self) -> Note:
        slug = self.cleaned_data["into"].strip()
        target = Note.objects.filter(slug=slug).first()
        if target is None:
            raise forms.ValidationError(f"There is no note {slug!r} to merge into; pick one from the list.")
        problem = actions.merge_target_problem(target)
        if problem:
            raise forms.ValidationError(problem)
        return target


# The notes one bulk action may change: each goes through the single action, in one request (issue 46).
MAX_BULK_NOTES = 500


class BulkForm(forms.Form):
    action = forms.ChoiceField(choices=[("promote", "promote"), ("reject", "reject")])
    notes = forms.ModelMultipleChoiceField(queryset=Note.objects.raw_queue(), required=False, error_messages={
        "invalid_choice": "Note %(value)s is no longer in the queue; reload the page.",
    })
    # "Select all N matching this filter": the filter's query string and the count the reviewer saw.
    select_all = forms.BooleanField(required=False)
    expected_count = forms.IntegerField(required=False, min_value=0)
    wing = form_field(QueryInput, "wing", required=False)
    hall = form_field(QueryInput, "hall", required=False)
    reason = forms.CharField(max_length=2000, required=False)
    title_from_heading = forms.BooleanField(required=False)
    slug_from_title = forms.BooleanField(required=False)

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        assert data is not None  # Form.clean returns cleaned_data
        if len(data.get("notes") or ()) > MAX_BULK_NOTES:
            self.add_error("notes", f"Tick at most {MAX_BULK_NOTES} notes for one bulk action.")
        if not data.get("select_all") and not data.get("notes") and "notes" not in self.errors:
            self.add_error("notes", "Tick at least one note, or select all the notes matching the filter.")
        if data.get("action") == "promote" and not data.get("wing"):
            self.add_error("wing", "Promoting needs a wing.")
        if data.get("action") == "reject" and not (data.get("reason") or "").strip():
            self.add_error("reason", "Rejecting needs a reason.")
        return data


class SearchForm(forms.Form):
    q = forms.CharField(required=False, max_length=500)
    wing = form_field(QueryInput, "wing", required=False)
    hall = form_field(QueryInput, "hall", required=False)
    status = forms.ChoiceField(
        required=False, choices=[("wiki", "wiki"), ("raw", "raw"), ("any", "any (not archived)")]
    )
    include_raw = forms.BooleanField(required=False)


# --- helpers ----------------------------------------------------------------------------


def _queue_form(query: str | QueryDict) -> QueueFilterForm:
    return QueueFilterForm(query if isinstance(query, QueryDict) else QueryDict(query or ""))


def _sort_key(form: QueueFilterForm) -> tuple[str, ...]:
    sort = form.cleaned_data.get("sort") if form.is_valid() else ""
    return SORTS.get(sort or "newest", SORTS["newest"])[1]


# The queue filter's fields that narrow the notes when given, and how each does.
QUEUE_FILTERS: dict[str, Callable[[str], Q]] = {
    "q": lambda words: Q(title__icontains=words) | Q(body__icontains=words) | Q(slug__icontains=words),
    "source": lambda source: Q(source=source),
    "session": lambda session: Q(session_id=session),
    "author": lambda username: Q(created_by__username=username),
    "kind": lambda kind: Q(frontmatter__kind=kind) | Q(provenance__kind=kind),
    "project": lambda project: Q(frontmatter__project=project) | Q(provenance__project=project),
}


def _filtered_queue(form: QueueFilterForm) -> QuerySet[Note]:
    """The raw queue under the reviewer's filter, in the order they chose."""
    notes = Note.objects.raw_queue()
    if not form.is_valid():
        return notes
    data = form.cleaned_data
    for name, condition in QUEUE_FILTERS.items():
        if data[name]:
            notes = notes.filter(condition(data[name]))
    if data["age"] in AGES:
        notes = notes.filter(created_at__gte=timezone.now() - AGES[data["age"]])
    elif data["age"] == "old":
        notes = notes.filter(created_at__lt=timezone.now() - AGES["30d"])
    return notes.order_by(*_sort_key(form))


def _filter_query(request: HttpRequest) -> str:
    """The queue filter a note page was opened from (`?from=`), kept through its forms."""
    value = request.POST.get("from") if request.method == "POST" else request.GET.get("from")
    return (value or "")[:2000]


def _wings_and_halls() -> tuple[list[str], list[str]]:
    pairs = list(Note.objects.wiki().order_by().values_list("wing", "hall").distinct())
    wings = sorted({wing for wing, _ in pairs if wing})
    halls = sorted({hall for _, hall in pairs if hall})
    return wings, halls


def _after(note: Note, order: tuple[str, ...], *, reverse_order: bool = False) -> Q:
    """Rows after `note` in `order` (keyset: the first differing key decides)."""
    condition = Q()
    equal = Q()
    for key in order:
        name = key.lstrip("-")
        descending = key.startswith("-") != reverse_order
        value = getattr(note, name)
        step = Q(**{f"{name}__lt" if descending else f"{name}__gt": value})
        condition |= equal & step
        equal &= Q(**{name: value})
    return condition


def _neighbours(note: Note, filter_query: str = "") -> tuple[Note | None, Note | None]:
    """The raw notes just before and after this one in the queue as filtered and sorted by the reviewer."""
    form = _queue_form(filter_query)
    queue = _filtered_queue(form).exclude(pk=note.pk).only("id", "title")
    order = _sort_key(form)
    reverse = tuple(key[1:] if key.startswith("-") else f"-{key}" for key in order)
    previous = queue.filter(_after(note, order, reverse_order=True)).order_by(*reverse).first()
    following = queue.filter(_after(note, order)).order_by(*order).first()
    return previous, following


def _position(note: Note, filter_query: str = "") -> dict:
    """Where the note is in the queue the reviewer came from: {"at": 3, "of": 40} (two counts, keyset)."""
    form = _queue_form(filter_query)
    queue = _filtered_queue(form)
    before = queue.filter(_after(note, _sort_key(form), reverse_order=True)).exclude(pk=note.pk).count()
    return {"at": before + 1, "of": queue.count()}


def _guidelines() -> Note | None:
    """The team's reviewing guidelines: a wiki note like any other (edited, versioned and undone the same way)."""
    return Note.objects.filter(slug=GUIDELINES_SLUG).exclude(status=NoteStatus.ARCHIVED).first()


def _guidelines_context() -> dict:
    note = _guidelines()
    return {"guidelines": note, "guidelines_html": render_note_body(note.body) if note else ""}


def _note_url(pk: int, filter_query: str) -> str:
    url = reverse("brain-note", args=[pk])
    return f"{url}?{urlencode({'from': filter_query})}" if filter_query else url


def _queue_url(filter_query: str) -> str:
    return f"{reverse('brain-review')}?{filter_query}" if filter_query else reverse("brain-review")


def _after_action(note: Note, filter_query: str = "") -> HttpResponse:
    """The note has left the queue: go on to the next one in the same filter and order, or back to it."""
    _, following = _neighbours(note, filter_query)
    if following is None:
        following = _filtered_queue(_queue_form(filter_query)).exclude(pk=note.pk).first()
    if following is not None:
        return redirect(_note_url(following.pk, filter_query))
    return redirect(_queue_url(filter_query))


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


# What the history calls each recorded field (a reader's word, not the database column's).
FIELD_NAMES = {
    "slug": "slug", "title": "title", "body": "text", "frontmatter": "frontmatter", "status": "status",
    "wing": "wing", "hall": "hall", "source": "source", "session_id": "session", "reviewed_by_id": "reviewer",
    "reviewed_at": "review time", "review_note": "review note",
}


def _history(note: Note) -> list[dict]:
    revisions = list(note.revisions.select_related("user", "undone_by").order_by("-created_at", "-id")[:HISTORY_LIMIT])
    return [
        {
            "revision": rev,
            "fields": [FIELD_NAMES[name] for name in rev.changed_fields() if name in FIELD_NAMES],
            "diff": html_diff(rev.before.get("body", ""), rev.after.get("body", "")),
            "undoable": rev.undone_at is None and rev.action != NoteRevision.Action.UNDO,
        }
        for rev in revisions
    ]


def _wiki_duplicates(similar_notes: list[dict] | None) -> list[dict]:
    return [item for item in similar_notes or [] if item["duplicate"] and item["note"].status == NoteStatus.WIKI]


def _note_page(request: HttpRequest, note: Note, *, promote_form: forms.Form | None = None,
               reject_form: forms.Form | None = None, edit_form: forms.Form | None = None,
               refile_form: forms.Form | None = None, conflict: dict | None = None, status: int = 200,
               similar_found: list[similar.Similar] | None = None) -> HttpResponse:
    wings, halls = _wings_and_halls()
    filter_query = _filter_query(request)
    newer = older = None
    progress = None
    if note.status == NoteStatus.RAW:
        # Queue navigation only for notes in the queue, and in the queue the reviewer came from.
        newer, older = _neighbours(note, filter_query)
        progress = _position(note, filter_query)
    session_id = note.session_id or (note.provenance or {}).get("session_id") or ""
    # The stored ranking for this text (brain.similar); without one the panel loads after the page.
    found = similar.stored(note) if similar_found is None else similar_found
    similar_notes = similar.with_notes(found) if found is not None else None
    context = {
        "note": note,
        "rendered": render_note_body(note.body),
        "frontmatter_json": json.dumps(note.frontmatter, indent=2, ensure_ascii=False, default=str),
        "provenance_json": json.dumps(note.provenance, indent=2, ensure_ascii=False, default=str),
        "session_id": session_id,
        "entries": _provenance_entries(note),
        "similar": similar_notes,
        "duplicates": _wiki_duplicates(similar_notes) if note.status == NoteStatus.RAW else [],
        "wings": wings,
        "halls": halls,
        "wiki_notes": Note.objects.wiki().only("slug", "title").order_by("slug")[:500],
        "newer": newer,
        "older": older,
        "progress": progress,
        **(_guidelines_context() if note.status == NoteStatus.RAW else {}),
        "newer_url": _note_url(newer.pk, filter_query) if newer else "",
        "older_url": _note_url(older.pk, filter_query) if older else "",
        "filter_query": filter_query,
        "queue_url": _queue_url(filter_query),
        "history": _history(note),
        "backlinks": list(
            note.links_in.exclude(source__status=NoteStatus.ARCHIVED).select_related("source")
            .order_by("source__title")[:BACKLINKS_LIMIT]
        ),
        "conflict": conflict,
        "promote_form": promote_form or PromoteForm(initial={
            "title": note.title, "slug": note.slug, "body": note.body, "version": note.version,
            "wing": (note.frontmatter or {}).get("wing", ""), "hall": (note.frontmatter or {}).get("hall", ""),
        }),
        "reject_form": reject_form or RejectForm(),
        "edit_form": edit_form or EditForm(initial={"title": note.title, "body": note.body, "version": note.version}),
        "refile_form": refile_form or RefileForm(initial={
            "wing": note.wing, "hall": note.hall, "slug": note.slug, "version": note.version,
        }),
    }
    return render(request, "brain/note.html", context, status=status)


class NoteForms(TypedDict, total=False):
    """The forms the note page shows, each passed back bound when its action was refused."""

    promote_form: forms.Form
    reject_form: forms.Form
    edit_form: forms.Form
    refile_form: forms.Form


def _conflict(note: Note, yours: str) -> dict:
    """What a conflict page shows: the text now saved, the reviewer's text (kept), and their diff."""
    return {"current": note.body, "yours": yours, "version": note.version, "diff": html_diff(note.body, yours)}


def _raw_note_or_leave(request: HttpRequest, pk: int) -> tuple[Note, HttpResponse | None]:
    note = get_object_or_404(Note, pk=pk)
    if note.status != NoteStatus.RAW:
        messages.warning(request, f"“{note.title}” is already {note.status}; nothing was changed.")
        return note, redirect("brain-note", pk=note.pk)
    return note, None


def _note_form_action(form_class: type[forms.Form], name: str, *, raw_only: bool = False) -> Callable:
    """Decorate a view that acts on note `pk` with a posted form: it is called as `view(request, note, form)`.

    When the form is not valid the note page shows its errors (400) instead, with the form as `name`; a
    `raw_only` action on a note no longer raw goes back to the note and changes nothing.
    """

    def decorate(view: Callable[[HttpRequest, Note, forms.Form], HttpResponse]) -> Callable:
        @wraps(view)
        def wrapped(request: HttpRequest, pk: int) -> HttpResponse:
            note, leave = _raw_note_or_leave(request, pk) if raw_only else (get_object_or_404(Note, pk=pk), None)
            if leave:
                return leave
            form = form_class(request.POST)
            if not form.is_valid():
                as_named: dict[str, Any] = {name: form}  # `name` is one of _note_page's form keywords
                return _note_page(request, note, **as_named, status=400)
            return view(request, note, form)

        return wrapped

    return decorate


def undo_tag(group: uuid.UUID, *, redo: bool = False) -> str:
    """A message's extra tag that gives its banner an Undo (or, for an undo, a Redo) button (templates/base.html)."""
    return f"{'redo' if redo else 'undo'}-url:{reverse('brain-undo', args=[group])}"


def _undo_message(request: HttpRequest, text: str, note: Note) -> None:
    """A success message with an Undo button for the change just made (the note's latest revision).

    After an undo the button says Redo: it undoes the undo.
    """
    revision = note.revisions.order_by("-id").first()
    if revision is None:
        messages.success(request, text)
        return
    redo = False
    if revision.action == NoteRevision.Action.UNDO:
        # An undo offers Redo; a redo (an undo of an undo) offers Undo again.
        assert revision.undoes is not None  # do_undo_revision records the group every undo undid
        undone = NoteRevision.objects.filter(group=revision.undoes).values_list("action", flat=True).first()
        redo = undone != NoteRevision.Action.UNDO
    messages.success(request, text, extra_tags=undo_tag(revision.group, redo=redo))


# --- pages ------------------------------------------------------------------------------


def _queue_context(request: SignedInRequest, form: QueueFilterForm) -> dict:
    per = form.cleaned_data.get("per") if form.is_valid() else None
    notes = _filtered_queue(form).select_related("created_by").only(
        "id", "slug", "title", "source", "session_id", "frontmatter", "provenance", "created_at", "status",
        "content_hash", "created_by__username",
    ).annotate(excerpt=Substr("body", 1, EXCERPT_CHARS))
    page, querystring = paginate(request, notes, per_page=per or PAGE_SIZES[0])
    page.object_list = list(page.object_list)
    badges = similar.duplicate_badges(page.object_list)
    for note in page.object_list:
        note.likely_duplicates = badges.get(note.pk, [])
    by_source = list(Note.objects.raw_queue().order_by().values("source").annotate(n=Count("id")).order_by("-n"))
    kinds = sorted(
        {kind for kind in Note.objects.raw_queue().order_by().values_list("frontmatter__kind", flat=True).distinct()
         if isinstance(kind, str) and kind}
    )
    queue = Note.objects.raw_queue().order_by()
    projects = sorted(
        {value for pair in queue.values_list("frontmatter__project", "provenance__project").distinct()
         for value in pair if isinstance(value, str) and value}
    )  # fmt: skip
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
    return render(request, "brain/snippets/similar.html", {
        "note": note, "similar": similar_notes, "filter_query": _filter_query(request),
        "duplicates": _wiki_duplicates(similar_notes) if note.status == NoteStatus.RAW else [],
    })


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
            note, reviewer=request.user, wing=data["wing"], hall=data["hall"] or "",
            title=data["title"], slug=data["slug"], body=data["body"], expected_version=data["version"],
        )
    except BrainInputError as exc:
        return _refused(request, note, exc, body=data["body"], promote_form=form)
    _undo_message(request, f"Promoted “{promoted.title}” to {promoted.path or promoted.wing}.", promoted)
    return _after_action(note, _filter_query(request))


def _refused(request: HttpRequest, note: Note, exc: BrainInputError, *, body: str | None = None, **form: Unpack[NoteForms]) -> HttpResponse:
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
            note, title=data["title"], body=body, frontmatter=frontmatter, user=request.user,
            expected_version=data["version"],
        )  # fmt: skip
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
            note, user=request.user, wing=data["wing"], hall=data["hall"] or "", slug=data["slug"],
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
            note, user=request.user, reason=form.cleaned_data.get("reason") or "",
            expected_version=form.cleaned_data.get("version"),
        )  # fmt: skip
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
    return _back_to_the_queue(request, pk, actions.do_reopen_note, "Reopened “{title}”: it is back in the review queue.")


def _return_path(request: HttpRequest, fallback: str) -> str:
    """Where an undo goes back to: the page its button was on (same site only), else `fallback`."""
    wanted = request.POST.get("next", "")
    if wanted and url_has_allowed_host_and_scheme(wanted, allowed_hosts={request.get_host()},
                                                  require_https=request.is_secure()):
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


def _merge_context(request: HttpRequest, note: Note, target: Note | None, body: str, into_value: str, form: forms.Form,
                   version: int | str | None = None) -> dict:
    return {
        "filter_query": _filter_query(request),
        "note": note, "form": form, "target": target, "body": body, "into_value": into_value,
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
    return render(request, "brain/merge.html", _merge_context(request, note, target, body, request.GET.get("into", ""), form),
                  status=200 if target or not request.GET.get("into") else 400)


@role_action(REVIEW, json=True)
def merge_render(request: HttpRequest, pk: int) -> JsonResponse:
    """The live preview: the edited combined text rendered (sanitised) and diffed against the target now."""
    get_object_or_404(Note, pk=pk)
    body = request.POST.get("body", "")[: settings.BRAIN_MAX_NOTE_BYTES]
    target = Note.objects.wiki().filter(slug=request.POST.get("into", "")).first()
    return JsonResponse({
        "html": render_note_body(body),
        "diff": str(html_diff(target.body, body)) if target else "",
        "target_version": target.version if target else None,
    })


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
                actions.do_merge_note(note, into=target, reviewer=request.user, body=body,
                                      expected_version=form.cleaned_data["version"])
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
    context = _merge_context(request, note, target, body, request.POST.get("into", ""), form,
                             version=version if version is not None else request.POST.get("version", ""))
    context["conflict"] = conflict
    return render(request, "brain/merge.html", context, status=status)


def _first_heading(body: str) -> str:
    for line in body.splitlines():
        text = line.strip()
        if text.startswith("#"):
            return text.lstrip("#").strip()[:MAX_TITLE_LENGTH]
    return ""


@role_action(REVIEW)
def bulk_review(request: SignedInRequest) -> HttpResponse:
    form = BulkForm(request.POST)
    filter_query = request.POST.get("next_query", "")[:2000]
    ticked = {value for value in request.POST.getlist("notes") if value.isdigit()}
    queue_form = _queue_form(filter_query)
    if form.is_valid() and form.cleaned_data["select_all"]:
        matching = _filtered_queue(queue_form)
        count = matching.count()
        if count > MAX_BULK_NOTES:
            form.add_error("select_all", (
                f"The filter matches {count} notes; one bulk action takes at most {MAX_BULK_NOTES}. Nothing was "
                "changed: narrow the filter (a wing, a hall, a search) and act on each part."
            ))
        elif form.cleaned_data["expected_count"] != count:
            form.add_error("select_all", (
                f"The filter now matches {count} notes, not {form.cleaned_data['expected_count']}: nothing was "
                "changed. Check the list and confirm again."
            ))
    if not form.is_valid():
        # The same queue again, with the reviewer's ticks and typed values kept and the errors on top.
        request.GET = QueryDict(filter_query)
        context = _queue_context(request, queue_form)
        context.update(bulk_errors=form.errors, ticked=ticked, bulk=request.POST)
        return render(request, "brain/review_queue.html", context, status=400)
    data = form.cleaned_data
    notes = list(_filtered_queue(queue_form)) if data["select_all"] else list(data["notes"])
    done, failed = 0, []
    group = uuid.uuid4()  # one revision group: the success message's Undo takes back the whole bulk action
    # No bulk action exists on purpose: each note goes through the same single action as the note page;
    # their background work (similar-notes ranking, embeddings) is queued together, not once per note.
    with notes_changed_in_bulk():
        for note in notes:
            try:
                if data["action"] == "promote":
                    title = (_first_heading(note.body) if data["title_from_heading"] else "") or note.title
                    actions.do_promote_note(
                        note, reviewer=request.user, wing=data["wing"], hall=data["hall"] or "", title=title,
                        slug_from_title=data["slug_from_title"], group=group,
                    )
                else:
                    actions.do_reject_note(note, reviewer=request.user, reason=data["reason"].strip(), group=group)
            except BrainInputError as exc:
                failed.append(f"{note.slug}: {exc}")
            else:
                done += 1
    verb = "Promoted" if data["action"] == "promote" else "Rejected"
    # Say where they went: the wiki folder (wing/hall) they are now in.
    place = "/".join(part for part in (data["wing"], data["hall"]) if part)
    where = f" into the wiki under {place}" if data["action"] == "promote" else ""
    messages.success(request, f"{verb} {done} note{'s' if done != 1 else ''}{where}.",
                     extra_tags=undo_tag(group) if done else "")
    for failure in failed:
        messages.error(request, failure)
    return redirect(_queue_url(filter_query))


@staff_action
def write_guidelines(request: SignedInRequest) -> HttpResponse:
    """Start the reviewing guidelines (a wiki note) from a default text, or open them when they exist."""
    note = _guidelines()
    if note is None:
        note = actions.do_ingest_note(
            title="Reviewing guidelines", body=GUIDELINES_TEXT, wing="guides", slug=GUIDELINES_SLUG,
            source="review-ui", user=request.user,
        )  # fmt: skip
        messages.success(request, "Wrote the reviewing guidelines from a starting text: edit them to suit the team.")
    return redirect(f"{reverse('brain-note', args=[note.pk])}#edit-panel")


@login_required
def search_page(request: HttpRequest) -> HttpResponse:
    form = SearchForm(request.GET)
    response, error = None, None
    if form.is_valid() and form.cleaned_data["q"].strip():
        data = form.cleaned_data
        try:
            response = search(
                data["q"], limit=20, wing=data["wing"] or None, hall=data["hall"] or None,
                status=data["status"] or NoteStatus.WIKI, include_raw=data["include_raw"],
            )
        except SearchInputError as exc:
            error = str(exc)
    wings, halls = _wings_and_halls()
    return render(request, "brain/search.html", {
        "form": form, "response": response, "error": error, "wings": wings, "halls": halls,
    })


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
    _undo_message(request, f"“{confirmed.title}” is still true: re-anchored at {confirmed.verified_commit[:7]}.", confirmed)
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
            note, user=request.user, reason=(request.POST.get("reason") or "").strip(),
            expected_version=_posted_version(request),
        )  # fmt: skip
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
    states = {state: Count("notes", filter=Q(notes__verification_state=state))
              for state in ("proven", "verified", "stale", "unverified")}  # fmt: skip
    projects = Project.objects.annotate(**states).order_by("name")
    return render(request, "brain/projects.html", {"projects": projects})
