"""What a tool call's model calls used and cost, as the tool result shows it (`usage`, `budget_warning`).

A tool that asks a model declares `reports_usage=True` (hyperguild.mcp.registry.Tool) and a result_model
that subclasses `UsageReport` (the two optional fields below), and the engine fills them from the ModelCalls recorded while the
handler ran (or a handler sets `usage` itself from calls made elsewhere, as a skill run's worker does).
A sum over calls of which one has no known tokens or cost is null with a reason, never a silent 0.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from pydantic import Field

from hyperguild.mcp.contracts import ToolResult
from ledger import budgets
from ledger.models import ModelCall
from ledger.pricing import CostSource


class Usage(ToolResult):
    """What a tool call's model calls used and cost, summed over `calls`."""

    input_tokens: int | None = Field(description="null: a call's usage is unknown")
    output_tokens: int | None = Field(description="null: a call's usage is unknown")
    cost_usd: float | None = Field(description="null: see cost_reason")
    cost_reason: str | None = Field(None, description="why cost_usd is null: usage unknown or price unknown")
    model: str = Field(description="the model(s) asked, comma-separated")
    calls: int = Field(ge=0, description="how many model calls were made")


class UsageReport(ToolResult):
    """The fields a `reports_usage` tool's result carries: its result_model subclasses this.

    The handler leaves them unset; the engine fills them after the call (`add_usage`), unless the
    handler set `usage` itself from calls made elsewhere (a skill run's worker)."""

    usage: Usage | None = Field(
        None, description="what the model calls this tool made used and cost (summed over `calls`)"
    )
    budget_warning: str | None = Field(None, description="a budget that applies to this caller is 80 % spent or more")


def summed_usage(call_ids: list[int]) -> Usage | None:
    """The summed usage of these ModelCalls; None when there are none."""
    calls = list(ModelCall.objects.filter(pk__in=call_ids).order_by("created_at", "id"))
    if not calls:
        return None
    unknown = [call for call in calls if call.cost_usd is None]
    cost_usd, cost_reason = None, None
    if not unknown:
        cost_usd = float(sum((call.cost_usd for call in calls if call.cost_usd is not None), Decimal(0)))
    elif all(call.cost_source == CostSource.PRICE_UNKNOWN for call in unknown):
        cost_reason = str(CostSource.PRICE_UNKNOWN)  # every call's tokens are known; a model is not priced
    else:
        cost_reason = str(CostSource.USAGE_UNKNOWN)
    return Usage(
        input_tokens=_total([call.input_tokens for call in calls]),
        output_tokens=_total([call.output_tokens for call in calls]),
        cost_usd=cost_usd,
        cost_reason=cost_reason,
        model=", ".join(dict.fromkeys(call.model for call in calls if call.model)),
        calls=len(calls),
    )


def usage_of(call_ids: list[int]) -> dict[str, Any] | None:
    """`summed_usage` as the structured result's `usage` (a dict), for tools that build dict results."""
    usage = summed_usage(call_ids)
    return None if usage is None else usage.model_dump(mode="json")


def _total(values: list[int | None]) -> int | None:
    known = [value for value in values if value is not None]
    return sum(known) if len(known) == len(values) else None


def budget_warning(person: Any) -> str | None:
    """The budgets that apply to `person` (and the service's) that are 80 % spent or more, in one line."""
    try:
        warnings = budgets.check(Decimal(0), person)
    except budgets.BudgetExceeded as exc:
        return exc.message  # spent already: the next call will be refused
    return "; ".join(warnings) or None


def add_usage(result: dict[str, Any], call_ids: list[int], person: Any) -> None:
    """Fill `usage` (unless the handler did) and `budget_warning` into a tool's structured result, in place.

    On the dumped result, not the model: the two keys go last on the wire (the model would put them first)."""
    if "usage" not in result:
        usage = usage_of(call_ids)
        if usage is not None:
            result["usage"] = usage
    warning = budget_warning(person)
    if warning:
        result["budget_warning"] = warning
