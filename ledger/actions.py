"""Writes on the ledger: a model call's record and the verdict on its answer."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

from ledger import budgets
from ledger.models import ModelCall
from ledger.pricing import cost_of, estimate


def do_record_model_call(*, reported_cost_usd: float | None = None, **values: Any) -> ModelCall:
    """Store one model call, priced (hyperguild.lib.model_calls.record_model_call redacts and caps first).

    Its cost is what the server reported, else the price table's (ledger.pricing.cost_of), else empty with
    the reason in `cost_source`.

    Not atomic of its own: inside a caller's transaction the record shares its fate, outside it is
    committed at once (autocommit), which is how the clients call it.
    """
    values["cost_usd"], values["cost_source"] = cost_of(
        values["model"], values.get("input_tokens"), values.get("output_tokens"), reported_cost_usd
    )
    return ModelCall.objects.create(**values)


def do_mark_model_call(call_id: int, *, outcome: str, error: str) -> None:
    """Record a caller's verdict on an answer the model gave (bad output, degenerate, failed a check)."""
    ModelCall.objects.filter(pk=call_id).update(outcome=outcome, error=error)


def reserve_chat_budget(*, model: str, prompt_chars: int, max_tokens: int, what: str) -> AbstractContextManager[object]:
    """The budget gate the core's chat client asks before a call (hyperguild.lib.model_calls.reserve_budget)."""
    return budgets.reserve(estimate(model, prompt_chars, max_tokens), what=what)
