"""What the reviewer's pages share: the queue's filter and order, a note's page (history, backlinks, similar
notes, provenance), a decision's form handling and its undo message."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Sequence
from functools import wraps
from typing import TYPE_CHECKING, Any, TypedDict, TypeVar
from urllib.parse import urlencode

from django import forms
from django.contrib import messages
from django.db.models import Q
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone

from brain import similar
from brain.callbacks import provenance_entries
from brain.models import Note, NoteRevision, NoteStatus
from brain.presenters import render_note_body
from brain.views.forms import AGES, SORTS, EditForm, PromoteForm, QueueFilterForm, RefileForm, RejectForm
from hyperguild.lib.diffs import html_diff

if TYPE_CHECKING:
    from django.db.models import QuerySet
    from django.utils.safestring import SafeString

    from brain.types import SignedInRequest  # `_note_form_action`'s views are behind sign-in (role_action)


HISTORY_LIMIT = 50
BACKLINKS_LIMIT = 100
GUIDELINES_SLUG = "review-guidelines"
GUIDELINES_TEXT = """What goes into the wiki, and what does not.

- **Promote** a note that a later session can act on: a decision and its reason, a correction, a surprise.
- **Merge** a note into the wiki note that already says most of it (the queue flags likely duplicates).
- **Reject** what is wrong, a one-off, or only true of one session; say why, so the writer learns.
- Keep titles short and specific; put each note in the wing (and hall) where someone would look for it.
"""

REVIEW = "brain.review_note"  # the reviewer role (people.roles)

PostedForm = TypeVar("PostedForm", bound=forms.Form)


class QueuePosition(TypedDict):
    at: int  # the note's place in the queue, from 1
    of: int


class HistoryEntry(TypedDict):
    revision: NoteRevision
    fields: list[str]  # the changed fields, in a reader's words (FIELD_NAMES)
    diff: SafeString
    undoable: bool


class Conflict(TypedDict):
    """What a conflict page shows: the text now saved, the reviewer's text (kept), and their diff."""

    current: str
    yours: str
    version: int
    diff: SafeString


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


def _position(note: Note, filter_query: str = "") -> QueuePosition:
    """Where the note is in the queue the reviewer came from: {"at": 3, "of": 40} (two counts, keyset)."""
    form = _queue_form(filter_query)
    queue = _filtered_queue(form)
    before = queue.filter(_after(note, _sort_key(form), reverse_order=True)).exclude(pk=note.pk).count()
    return {"at": before + 1, "of": queue.count()}


def _guidelines() -> Note | None:
    """The team's reviewing guidelines: a wiki note like any other (edited, versioned and undone the same way)."""
    return Note.objects.filter(slug=GUIDELINES_SLUG).exclude(status=NoteStatus.ARCHIVED).first()


def _guidelines_context() -> dict[str, object]:
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


def _provenance_entries(note: Note) -> Sequence[object]:
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
    "slug": "slug",
    "title": "title",
    "body": "text",
    "frontmatter": "frontmatter",
    "status": "status",
    "wing": "wing",
    "hall": "hall",
    "source": "source",
    "session_id": "session",
    "reviewed_by_id": "reviewer",
    "reviewed_at": "review time",
    "review_note": "review note",
}


def _history(note: Note) -> list[HistoryEntry]:
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


def _wiki_duplicates(similar_notes: list[similar.SimilarNote] | None) -> list[similar.SimilarNote]:
    return [item for item in similar_notes or [] if item["duplicate"] and item["note"].status == NoteStatus.WIKI]


def _note_page(
    request: HttpRequest,
    note: Note,
    *,
    promote_form: forms.Form | None = None,
    reject_form: forms.Form | None = None,
    edit_form: forms.Form | None = None,
    refile_form: forms.Form | None = None,
    conflict: Conflict | None = None,
    status: int = 200,
    similar_found: list[similar.Similar] | None = None,
) -> HttpResponse:
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
            note.links_in.exclude(source__status=NoteStatus.ARCHIVED)
            .select_related("source")
            .order_by("source__title")[:BACKLINKS_LIMIT]
        ),
        "conflict": conflict,
        "promote_form": promote_form
        or PromoteForm(
            initial={
                "title": note.title,
                "slug": note.slug,
                "body": note.body,
                "version": note.version,
                "wing": (note.frontmatter or {}).get("wing", ""),
                "hall": (note.frontmatter or {}).get("hall", ""),
            }
        ),
        "reject_form": reject_form or RejectForm(),
        "edit_form": edit_form or EditForm(initial={"title": note.title, "body": note.body, "version": note.version}),
        "refile_form": refile_form
        or RefileForm(
            initial={
                "wing": note.wing,
                "hall": note.hall,
                "slug": note.slug,
                "version": note.version,
            }
        ),
    }
    return render(request, "brain/note.html", context, status=status)


class NoteForms(TypedDict, total=False):
    """The forms the note page shows, each passed back bound when its action was refused."""

    promote_form: forms.Form
    reject_form: forms.Form
    edit_form: forms.Form
    refile_form: forms.Form


def _conflict(note: Note, yours: str) -> Conflict:
    """What a conflict page shows: the text now saved, the reviewer's text (kept), and their diff."""
    return {"current": note.body, "yours": yours, "version": note.version, "diff": html_diff(note.body, yours)}


def _raw_note_or_leave(request: HttpRequest, pk: int) -> tuple[Note, HttpResponse | None]:
    note = get_object_or_404(Note, pk=pk)
    if note.status != NoteStatus.RAW:
        messages.warning(request, f"“{note.title}” is already {note.status}; nothing was changed.")
        return note, redirect("brain-note", pk=note.pk)
    return note, None


def _note_form_action(
    form_class: type[PostedForm], name: str, *, raw_only: bool = False
) -> Callable[
    [Callable[[SignedInRequest, Note, PostedForm], HttpResponse]], Callable[[SignedInRequest, int], HttpResponse]
]:
    """Decorate a view that acts on note `pk` with a posted form: it is called as `view(request, note, form)`.

    When the form is not valid the note page shows its errors (400) instead, with the form as `name`; a
    `raw_only` action on a note no longer raw goes back to the note and changes nothing.
    """

    def decorate(
        view: Callable[[SignedInRequest, Note, PostedForm], HttpResponse],
    ) -> Callable[[SignedInRequest, int], HttpResponse]:
        @wraps(view)
        def wrapped(request: SignedInRequest, pk: int) -> HttpResponse:
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
