"""One decision over many notes of the queue (ticked, or everything the filter matches), within a ceiling."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from django import forms
from django.contrib import messages
from django.http import HttpResponse, QueryDict
from django.shortcuts import redirect, render

from brain import actions
from brain.errors import BrainInputError
from brain.indexing import notes_changed_in_bulk
from brain.inputs import QueryInput, form_field
from brain.limits import MAX_TITLE_LENGTH
from brain.models import Note
from brain.views.pages import REVIEW, _filtered_queue, _queue_form, _queue_url, undo_tag
from brain.views.review import _queue_context
from hyperguild.ui import role_action

if TYPE_CHECKING:
    from brain.types import SignedInRequest


# The notes one bulk action may change: each goes through the single action, in one request (issue 46).
MAX_BULK_NOTES = 500


class BulkForm(forms.Form):
    action = forms.ChoiceField(choices=[("promote", "promote"), ("reject", "reject")])
    notes = forms.ModelMultipleChoiceField(
        queryset=Note.objects.raw_queue(),
        required=False,
        error_messages={
            "invalid_choice": "Note %(value)s is no longer in the queue; reload the page.",
        },
    )
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
            form.add_error(
                "select_all",
                (
                    f"The filter matches {count} notes; one bulk action takes at most {MAX_BULK_NOTES}. Nothing was "
                    "changed: narrow the filter (a wing, a hall, a search) and act on each part."
                ),
            )
        elif form.cleaned_data["expected_count"] != count:
            form.add_error(
                "select_all",
                (
                    f"The filter now matches {count} notes, not {form.cleaned_data['expected_count']}: nothing was "
                    "changed. Check the list and confirm again."
                ),
            )
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
                        note,
                        reviewer=request.user,
                        wing=data["wing"],
                        hall=data["hall"] or "",
                        title=title,
                        slug_from_title=data["slug_from_title"],
                        group=group,
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
    messages.success(
        request, f"{verb} {done} note{'s' if done != 1 else ''}{where}.", extra_tags=undo_tag(group) if done else ""
    )
    for failure in failed:
        messages.error(request, failure)
    return redirect(_queue_url(filter_query))
