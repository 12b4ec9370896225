"""The search page."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django import forms
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from brain.inputs import QueryInput, form_field
from brain.models import NoteStatus
from brain.search import SearchInputError, search
from brain.views.pages import _wings_and_halls

if TYPE_CHECKING:
    pass


class SearchForm(forms.Form):
    q = forms.CharField(required=False, max_length=500)
    wing = form_field(QueryInput, "wing", required=False)
    hall = form_field(QueryInput, "hall", required=False)
    status = forms.ChoiceField(
        required=False, choices=[("wiki", "wiki"), ("raw", "raw"), ("any", "any (not archived)")]
    )
    include_raw = forms.BooleanField(required=False)


@login_required
def search_page(request: HttpRequest) -> HttpResponse:
    form = SearchForm(request.GET)
    response, error = None, None
    if form.is_valid() and form.cleaned_data["q"].strip():
        data = form.cleaned_data
        try:
            response = search(
                data["q"],
                limit=20,
                wing=data["wing"] or None,
                hall=data["hall"] or None,
                status=data["status"] or NoteStatus.WIKI,
                include_raw=data["include_raw"],
            )
        except SearchInputError as exc:
            error = str(exc)
    wings, halls = _wings_and_halls()
    return render(
        request,
        "brain/search.html",
        {
            "form": form,
            "response": response,
            "error": error,
            "wings": wings,
            "halls": halls,
        },
    )
