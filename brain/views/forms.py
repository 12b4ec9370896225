"""The review pages' forms: the queue's filter, and one form per decision on a note."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

from django import forms

from brain import actions
from brain.inputs import NoteEditInput, WikiNoteInput, form_field
from brain.limits import MAX_SESSION_ID_LENGTH
from brain.models import Note

if TYPE_CHECKING:
    pass


AGES = {"1d": timedelta(days=1), "7d": timedelta(days=7), "30d": timedelta(days=30)}


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
        choices=[
            ("", "any age"),
            ("1d", "last 24 hours"),
            ("7d", "last 7 days"),
            ("30d", "last 30 days"),
            ("old", "older than 30 days"),
        ],
    )
    sort = forms.ChoiceField(required=False, choices=[(key, label) for key, (label, _) in SORTS.items()])
    per = forms.TypedChoiceField(
        required=False,
        coerce=int,
        empty_value=PAGE_SIZES[0],  # type: ignore[arg-type]  # Django takes any empty value; django-stubs says str
        choices=[(str(n), f"{n} a page") for n in PAGE_SIZES],
    )


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
