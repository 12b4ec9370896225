"""What a tool call's model calls used and cost, as the tool result shows it (`usage`, `budget_warning`).

A tool that asks a model declares `reports_usage=True` (hyperguild.mcp.registry.Tool): its outputSchema
gains the two optional fields below, and the engine fills them from the ModelCalls recorded while the
handler ran (or a handler sets `usage` itself from calls made elsewhere, as a skill run's worker does).
A sum over calls of which one has no known tokens or cost is null with a reason, never a silent 0.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from hyperguild.lib.pricing import CostSource

USAGE_SCHEMA: dict = {
    "type": "object",
    "additionalProperties": False,
    "description": "what the model calls this tool made used and cost (summed over `calls`)",
    "properties": {
        "input_tokens": {"type": ["integer", "null"], "description": "null: a call's usage is unknown"},
        "output_tokens": {"type": ["integer", "null"], "description": "null: a call's usage is unknown"},
        "cost_usd": {"type": ["number", "null"], "description": "null: see cost_reason"},
        "cost_reason": {"type": "string", "description": "why cost_usd is null: usage unknown or price unknown"},
        "model": {"type": "string", "description": "the model(s) asked, comma-separated"},
        "calls": {"type": "integer", "minimum": 0, "description": "how many model calls were made"},
    },
    "required": ["input_tokens", "output_tokens", "cost_usd", "model", "calls"],
}

USAGE_PROPERTIES: dict = {
    "usage": USAGE_SCHEMA,
    "budget_warning": {"type": "string", "description": "a budget that applies to this caller is 80 % spent or more"},
}


def usage_of(call_ids: list[int]) -> dict[str, Any] | None:
    """The summed usage of these ModelCalls; None when there are none."""
    from hyperguild.models import ModelCall

    calls = list(ModelCall.objects.filter(pk__in=call_ids).order_by("created_at", "id"))
    if not calls:
        return None
    usage: dict[str, Any] = {
        "input_tokens": _total([call.input_tokens for call in calls]),
        "output_tokens": _total([call.output_tokens for call in calls]),
        "cost_usd": None,
        "model": ", ".join(dict.fromkeys(call.model for call in calls if call.model)),
        "calls": len(calls),
    }
    unknown = [call for call in calls if call.cost_usd is None]
    if not unknown:
        usage["cost_usd"] = float(sum((call.cost_usd for call in calls), Decimal(0)))
    elif all(call.cost_source == CostSource.PRICE_UNKNOWN for call in unknown):
        usage["cost_reason"] = CostSource.PRICE_UNKNOWN  # every call's tokens are known; a model is not priced
    else:
        usage["cost_reason"] = CostSource.USAGE_UNKNOWN
    return usage


def _total(values: list[int | None]) -> int | None:
    return None if any(value is None for value in values) else sum(values)  # type: ignore[arg-type]


def budget_warning(person) -> str | None:
    """The budgets that apply to `person` (and the service's) that are 80 % spent or more, in one line."""
    from hyperguild import budgets

    try:
        warnings = budgets.check(Decimal(0), person)
    except budgets.BudgetExceeded as exc:
        return exc.message  # spent already: the next call will be refused
    return "; ".join(warnings) or None


def add_usage(result: dict, call_ids: list[int], person) -> dict:
    """Fill `usage` (unless the handler did) and `budget_warning` into a tool's structured result."""
    if "usage" not in result:
        usage = usage_of(call_ids)
        if usage is not None:
            result["usage"] = usage
    warning = budget_warning(person)
    if warning:
        result["budget_warning"] = warning
    return result
