"""Browser pages for sessions and training-data curation.

Sessions: a list and one timeline per session (entries, skill runs, notes
written from it). Training: candidates by kind and status, one example with
its conversation (SFT) or its pair side by side (DPO) and the verification
evidence, and the curation actions, which all go through `sessions.actions`.
"""

from __future__ import annotations

import json
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Count, Max, Min, Q
from django.db.models.functions import Coalesce
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest, QueryDict
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django_q.tasks import async_task

from brain.models import Note
from hyperguild.lib.diffs import diff_block, html_diff
from hyperguild.lib.typed import JSON, AuthenticatedHttpRequest
from hyperguild.ui import paginate, role_action, role_page
from ledger.costs import spend_of
from ledger.models import ModelCall
from sessions import actions
from sessions.actions import may_read_session
from sessions.activity import SERVICE, MergedActivity, action_choices, people
from sessions.models import AgentSession, SessionEntry, TrainingExample, TrainingExampleQuerySet
from sessions.trl_export import export_examples as export_training_examples
from supervisor.models import SkillRun

TIMELINE_LIMIT = 1000  # entries shown on a session page; longer sessions show the first ones and say so
MESSAGE_FIELDS_BY_KIND: dict[str, tuple[str, ...]] = {
    TrainingExample.Kind.SFT: ("prompt", "completion"),
    TrainingExample.Kind.DPO: ("prompt", "chosen", "rejected"),
}

CURATE = "agent_sessions.curate_trainingexample"  # the curator role (people.roles)


# --- sessions -----------------------------------------------------------------------------


@login_required
def session_list(request: AuthenticatedHttpRequest) -> HttpResponse:
    sessions = (
        AgentSession.objects.select_related("started_by")
        # When the session happened, not when its entries arrived: a spool delivered late keeps its own times.
        .annotate(
            n_entries=Count("entries"),
            started=Min(Coalesce("entries__occurred_at", "entries__created_at")),
            last_at=Max(Coalesce("entries__occurred_at", "entries__created_at")),
        )
        .order_by("-updated_at", "-id")
    )
    if not request.user.is_staff:
        # A session is its owner's (sessions.actions.may_read_session): staff see every session, others their own.
        sessions = sessions.filter(started_by=request.user)
    query = request.GET.get("q", "").strip()[:200]
    if query:
        sessions = sessions.filter(Q(external_id__icontains=query) | Q(project__name__icontains=query))
    mine = request.GET.get("mine") == "1"
    if mine:
        sessions = sessions.filter(started_by=request.user)
    page, querystring = paginate(request, sessions)
    return render(
        request, "sessions/session_list.html", {"page_obj": page, "querystring": querystring, "q": query, "mine": mine}
    )


@login_required
def session_detail(request: AuthenticatedHttpRequest, external_id: str) -> HttpResponse:
    session = get_object_or_404(AgentSession, external_id=external_id)
    if not may_read_session(session, request.user):
        raise Http404("No such session of yours.")  # another person's session is answered as if it did not exist
    entries = list(SessionEntry.objects.filter(session=session).order_by("seq")[: TIMELINE_LIMIT + 1])
    truncated = len(entries) > TIMELINE_LIMIT
    entries = entries[:TIMELINE_LIMIT]
    runs = list(SkillRun.objects.in_session(external_id).order_by("created_at"))
    notes = list(
        Note.objects.filter(session_id=external_id)
        .only("id", "slug", "title", "status", "wing", "hall", "created_at")
        .order_by("created_at")
    )
    # One timeline, in time order: what the session logged, what the supervisor ran, what the brain kept.
    timeline: list[tuple[datetime, str, object]] = [(e.occurred_at or e.created_at, "entry", e) for e in entries]
    timeline += [(run.created_at, "run", run) for run in runs]
    timeline += [(note.created_at, "note", note) for note in notes]
    timeline.sort(key=lambda item: (item[0] or timezone.now(), item[1]))
    return render(
        request,
        "sessions/session_detail.html",
        {
            "session": session,
            "timeline": timeline,
            "truncated": truncated,
            "n_entries": len(entries),
            "runs": runs,
            "notes": notes,
            "cost": spend_of(ModelCall.objects.filter(session_id=external_id)),
        },
    )


# --- training data ------------------------------------------------------------------------


class TrainingFilterForm(forms.Form):
    kind = forms.ChoiceField(required=False, choices=[("", "any kind"), *TrainingExample.Kind.choices])
    status = forms.ChoiceField(required=False, choices=[("", "any status"), *TrainingExample.Status.choices])
    skill = forms.CharField(required=False, max_length=100)
    flagged = forms.ChoiceField(
        required=False, choices=[("", "flagged or not"), ("1", "flagged"), ("0", "not flagged")]
    )


class RejectExampleForm(forms.Form):
    reason = forms.CharField(required=False, max_length=2000)


def _filtered_examples(form: TrainingFilterForm) -> TrainingExampleQuerySet:
    examples = TrainingExample.objects.all()
    if form.is_valid():
        data = form.cleaned_data
        examples = examples.filter(**{name: data[name] for name in ("kind", "status", "skill") if data[name]})
        if data["flagged"]:
            examples = examples.filter(flagged=data["flagged"] == "1")
    return examples.select_related("reviewer").order_by("-created_at", "-id")


@login_required
def training_list(request: HttpRequest) -> HttpResponse:
    params = request.GET.copy()
    if "status" not in params:
        params["status"] = TrainingExample.Status.CANDIDATE  # the work waiting is what a curator wants first
    form = TrainingFilterForm(params)
    page, querystring = paginate(request, _filtered_examples(form))
    counts = {
        (row["kind"], row["status"]): row["n"]
        for row in TrainingExample.objects.order_by().values("kind", "status").annotate(n=Count("id"))
    }
    count_table = [
        {
            "kind": kind,
            "label": label,
            "cells": [
                {"status": status, "n": counts.get((kind, status), 0)} for status in TrainingExample.Status.values
            ],
        }
        for kind, label in TrainingExample.Kind.choices
    ]
    return render(
        request,
        "sessions/training_list.html",
        {
            "form": form,
            "page_obj": page,
            "querystring": querystring,
            "count_table": count_table,
            "statuses": TrainingExample.Status.values,
            "approved_sft": counts.get(("sft", "approved"), 0),
            "approved_dpo": counts.get(("dpo", "approved"), 0),
        },
    )


def _candidates_around(example: TrainingExample) -> tuple[TrainingExample | None, TrainingExample | None]:
    """The candidates of the same kind just newer (`k`) and just older (`j`, and where approve/reject go)."""
    candidates = TrainingExample.objects.candidates().filter(kind=example.kind).exclude(pk=example.pk).only("id")
    newer = (
        candidates.filter(Q(created_at__gt=example.created_at) | Q(created_at=example.created_at, id__gt=example.id))
        .order_by("created_at", "id")
        .first()
    )
    older = (
        candidates.filter(Q(created_at__lt=example.created_at) | Q(created_at=example.created_at, id__lt=example.id))
        .order_by("-created_at", "-id")
        .first()
    )
    return newer, older


def _conversation_text(conversation: list[Any]) -> str:
    return "\n\n".join(
        f"[{message.get('role')}]\n{message.get('content')}"
        for message in conversation or []
        if isinstance(message, dict)
    )


def _example_page(
    request: HttpRequest, example: TrainingExample, *, errors: list[str] | None = None, status: int = 200
) -> HttpResponse:
    provenance = example.provenance or {}
    run_ids = [run for run in provenance.get("runs") or [] if isinstance(run, int)]
    runs = list(SkillRun.objects.filter(pk__in=run_ids[:50]).order_by("created_at")) if run_ids else []
    previous_example, next_example = _candidates_around(example)
    verification = provenance.get("verification")
    sides = verification if isinstance(verification, dict) and {"chosen", "rejected"} <= set(verification) else {}
    pair_diff = ""
    teaches_a_change = any(
        diff_block(_conversation_text(getattr(example, name))) is not None
        for name in ("completion", "chosen", "rejected")
    )
    if example.kind == TrainingExample.Kind.DPO and not teaches_a_change:
        # One diff on the page: a change's own (coloured, per side) when the answers carry one, else this.
        pair_diff = html_diff(_conversation_text(example.rejected), _conversation_text(example.chosen))
    return render(
        request,
        "sessions/training_detail.html",
        {
            "example": example,
            "verification": verification,
            "chosen_evidence": sides.get("chosen"),
            "rejected_evidence": sides.get("rejected"),
            "verification_json": json.dumps(provenance.get("verification"), indent=2, ensure_ascii=False, default=str),
            "provenance_json": json.dumps(provenance, indent=2, ensure_ascii=False, default=str),
            "provenance_rows": provenance_rows(provenance),
            "teaches_a_change": teaches_a_change,
            # A short prompt is shown; a long one (files before the change) folds, so the answers stay in view.
            "prompt_open": len(_conversation_text(example.prompt)) <= PROMPT_SHOWN_CHARS,
            "runs": runs,
            "session_id": provenance.get("session_id") or "",
            "next_example": next_example,
            "previous_example": previous_example,
            "pair_diff": pair_diff,
            "editable_fields": [(name, getattr(example, name)) for name in MESSAGE_FIELDS_BY_KIND[example.kind]],
            "errors": errors or [],
        },
        status=status,
    )


@login_required
def training_detail(request: HttpRequest, pk: int) -> HttpResponse:
    return _example_page(request, get_object_or_404(TrainingExample, pk=pk))


def provenance_rows(provenance: JSON) -> list[dict[str, Any]]:
    """Provenance as a table a reader can scan: one row a key, text as text (newlines kept), a mapping as
    its own rows, anything deeper as indented JSON."""

    def cell(value: Any) -> dict[str, str]:
        if value is None or isinstance(value, (str, int, float, bool)):
            return {"text": "—" if value in (None, "") else str(value)}
        if isinstance(value, list) and all(isinstance(item, (str, int, float)) for item in value):
            return {"text": ", ".join(str(item) for item in value) or "—"}
        return {"json": json.dumps(value, indent=2, ensure_ascii=False, default=str)}

    rows: list[dict[str, Any]] = []
    for key, value in (provenance or {}).items():
        if isinstance(value, dict) and value:
            rows.append({"key": key, "rows": [{"key": sub, **cell(inner)} for sub, inner in value.items()]})
        else:
            rows.append({"key": key, **cell(value)})
    return rows


REPLAY_TASK = "sessions.tasks.replay_example"
PROMPT_SHOWN_CHARS = 600


@role_action(CURATE)
def replay_example_now(request: HttpRequest, pk: int) -> HttpResponse:
    """Queue `trainer_verify` for this one example (the worker replays it; the page shows the result)."""
    example = get_object_or_404(TrainingExample, pk=pk)

    # Queued on behalf of the curator who asked (the replay names them).
    async_task(
        REPLAY_TASK,
        example.pk,
        requested_by_id=request.user.pk,
        task_name=f"replay-example-{example.pk}",
        group="training-replay",
    )
    messages.success(
        request,
        f"Queued a replay of example #{example.pk}: the worker replays it on its recorded "
        "pre-state, and this page shows the result (reload in a minute).",
    )
    return redirect("sessions-training-detail", pk=example.pk)


def _after_curation(example: TrainingExample) -> HttpResponse:
    """Go on in the same order as `j`: the next older candidate of the same kind, or back to the list."""
    _, following = _candidates_around(example)
    if following is not None:
        return redirect("sessions-training-detail", pk=following.pk)
    return redirect(f"{reverse('sessions-training')}?kind={example.kind}")


@role_action(CURATE)
def approve_example(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    example = get_object_or_404(TrainingExample, pk=pk)
    try:
        example = actions.do_approve_example(
            example, reviewer=request.user, confirm_flagged=request.POST.get("confirm_flagged") == "1"
        )
    except actions.FlaggedExample as exc:
        return _example_page(request, example, errors=[str(exc)], status=400)
    messages.success(request, f"Approved {example.kind.upper()} example #{example.pk}.", extra_tags=_undo_tag(example))
    return _after_curation(example)


@role_action(CURATE)
def reject_example(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    example = get_object_or_404(TrainingExample, pk=pk)
    form = RejectExampleForm(request.POST)
    if not form.is_valid():
        return _example_page(request, example, errors=[str(e) for e in form.errors.get("reason", [])], status=400)
    example = actions.do_reject_example(example, reviewer=request.user, reason=form.cleaned_data["reason"].strip())
    messages.success(request, f"Rejected {example.kind.upper()} example #{example.pk}.", extra_tags=_undo_tag(example))
    return _after_curation(example)


@role_action(CURATE)
def swap_example(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    example = get_object_or_404(TrainingExample, pk=pk)
    if request.POST.get("confirm") != "1":
        return _example_page(
            request,
            example,
            status=400,
            errors=[
                "Nothing was swapped: confirm that the rejected answer is the better one (the swap asks before it acts)."
            ],
        )
    try:
        example = actions.do_swap_dpo(example, reviewer=request.user)
    except actions.InvalidExampleEdit as exc:
        return _example_page(request, example, errors=[str(exc)], status=400)
    messages.success(request, f"Swapped chosen and rejected of #{example.pk}.", extra_tags=_undo_tag(example))
    return redirect("sessions-training-detail", pk=example.pk)


def _undo_tag(example: TrainingExample) -> str:
    """The banner's Undo button for the decision just recorded (the last entry of the example's history)."""
    step = len(example.edits or []) - 1
    return f"undo-url:{reverse('sessions-training-undo', args=[example.pk, step])}"


@role_action(CURATE)
def undo_example(request: AuthenticatedHttpRequest, pk: int, step: int) -> HttpResponse:
    """Undo an approve, reject or swap; back to the example, to see it as it was."""
    example = get_object_or_404(TrainingExample, pk=pk)
    try:
        example = actions.do_undo_example_decision(example, reviewer=request.user, step=step)
    except actions.InvalidExampleEdit as exc:
        messages.error(request, str(exc))
    else:
        messages.success(
            request,
            f"Undid the {example.edits[-1]['undone']} of {example.kind.upper()} example "
            f"#{example.pk}: it is {example.status} again.",
        )
    return redirect("sessions-training-detail", pk=example.pk)


def messages_from_post(post: QueryDict, field: str) -> list[dict[str, Any]] | None:
    """`<field>-<i>-role` / `<field>-<i>-content` pairs → a message list; None when the form had none."""
    result = []
    index = 0
    while f"{field}-{index}-role" in post:
        # Browsers send CRLF in textareas; training text keeps the plain newlines it was written with.
        content = post.get(f"{field}-{index}-content", "").replace("\r\n", "\n")
        result.append({"role": post[f"{field}-{index}-role"], "content": content})
        index += 1
    return result if index else None


@role_action(CURATE)
def edit_example(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    example = get_object_or_404(TrainingExample, pk=pk)
    fields: dict[str, Any] = {}
    for name in MESSAGE_FIELDS_BY_KIND[example.kind]:
        value = messages_from_post(request.POST, name)
        if value is not None:
            fields[name] = value
    if "review_note" in request.POST:
        fields["review_note"] = request.POST["review_note"][:2000]
    try:
        example = actions.do_edit_example(example, reviewer=request.user, **fields)
    except actions.InvalidExampleEdit as exc:
        return _example_page(request, example, errors=[str(exc)], status=400)
    messages.success(request, f"Saved your edits to #{example.pk}.")
    return redirect("sessions-training-detail", pk=example.pk)


@role_page(CURATE)
def export_examples(request: HttpRequest, kind: str) -> HttpResponse:
    """The approved examples of one kind as JSONL in the shapes TRL reads (the `trainer_export` logic)."""
    if kind not in TrainingExample.Kind.values:
        return HttpResponseBadRequest("kind must be sft or dpo")
    with tempfile.TemporaryDirectory(prefix="hyperguild-export-") as folder:
        summary = export_training_examples(Path(folder) / f"{kind}.jsonl", kind=kind)
        data = Path(summary["path"]).read_bytes()
    response = HttpResponse(data, content_type="application/jsonl; charset=utf-8")
    stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
    response["Content-Disposition"] = f'attachment; filename="hyperguild-{kind}-approved-{stamp}.jsonl"'
    # Records that do not fit TRL's shape are left out, as trainer_export does; say how many.
    response["X-Hyperguild-Written"] = str(summary["written"])
    response["X-Hyperguild-Left-Out"] = ",".join(str(problem["id"]) for problem in summary["invalid"])
    return response


class ActivityFilterForm(forms.Form):
    person = forms.CharField(required=False, max_length=150)
    action = forms.ChoiceField(required=False, choices=action_choices)


@login_required
def activity(request: HttpRequest) -> HttpResponse:
    """Who did what: reviewer actions on notes and curation decisions on examples, newest first, filterable."""
    form = ActivityFilterForm(request.GET)
    data = form.cleaned_data if form.is_valid() else {}
    merged = MergedActivity(person=data.get("person") or "", action=data.get("action") or "")
    page, querystring = paginate(request, merged, per_page=50)
    return render(
        request,
        "sessions/activity.html",
        {
            "form": form,
            "page_obj": page,
            "querystring": querystring,
            "people": people(),
            "service": SERVICE,
        },
    )
