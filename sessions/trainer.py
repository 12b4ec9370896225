"""Trainer: one pass over a session's verified work, turned into curated training candidates.

    run_trainer(session_id=None) -> TrainerResult (the `trainer` skill's result model)

It extracts SFT/DPO candidates from skill runs and routed retries
(`sessions.extraction`, secrets redacted by `sessions.redaction`) and
summarises what it stored; it is safe to run again (nothing is stored
twice). Approved examples leave through `sessions.trl_export`.
"""

from __future__ import annotations

import time
from typing import Any, cast

from django.contrib.auth.models import User

from sessions.actions import do_name_extractor
from sessions.extraction import extract_from_routing, extract_from_runs, finished_runs
from sessions.models import TrainingExample
from supervisor.skills import TrainerResult, Verdict, build_result, typed_result

# How much of each side of an example the tool's answer shows.
PREVIEW_CHARS = 500


def _summary(example: TrainingExample, created: bool) -> dict[str, Any]:
    def text(messages: list[dict[str, Any]]) -> str:
        return "\n\n".join(m["content"] for m in messages)[:PREVIEW_CHARS]

    runs = example.provenance.get("runs") or []
    return {
        "id": example.pk,
        "kind": example.kind,
        "prompt": text([m for m in example.prompt if m["role"] != "system"] or example.prompt),
        "chosen": text(example.completion if example.kind == "sft" else example.chosen),
        "rejected": text(example.rejected) if example.kind == "dpo" else None,
        "source_run_id": runs[-1] if runs else None,
        "status": example.status,
        "flagged": example.flagged,
        "flags": example.flags,
        "created": created,
    }


def run_trainer(
    session_id: str | None = None, *, llm_model: str | None = None, requested_by: User | None = None
) -> TrainerResult:
    """Extract candidates from `session_id` (or every session). Safe to run again: nothing is stored twice.

    `llm_model` is accepted for symmetry with the other skills; extraction needs no model. `requested_by`:
    the person whose call extracted them (None: the service, e.g. the hourly sweep), named in each new
    candidate's provenance.
    """
    started = time.monotonic()
    runs = finished_runs(session_id)
    stored = extract_from_runs(runs) + extract_from_routing(session_id)
    new = [example for example, created in stored if created]
    if requested_by is not None:
        new = do_name_extractor(new, requested_by)
    flagged = [example for example in new if example.flagged]
    examples = [_summary(example, created) for example, created in stored]
    message = (
        f"{len(new)} new candidate(s) ({sum(e.kind == 'sft' for e in new)} SFT, {sum(e.kind == 'dpo' for e in new)} DPO), "
        f"{len(stored) - len(new)} already extracted, {len(flagged)} flagged for redacted secrets; "
        f"from {len(runs)} skill run(s)."
    )
    values = build_result(
        "trainer",
        status=Verdict.PASS,
        model_used="",
        message=message,
        duration_ms=int((time.monotonic() - started) * 1000),
        examples=examples,
        count=len(examples),
        created=len(new),
    )
    return cast(TrainerResult, typed_result("trainer", values))
