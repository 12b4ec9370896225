"""What a model call cost: the price table (HYPERGUILD_MODEL_PRICES_FILE) for responses that carry no cost.

The file is YAML, one entry per model name as the gateway knows it, in USD per million tokens:

    gpt-4o-mini: {input: 0.15, output: 0.60}
    claude-sonnet-4: {input: 3, output: 15}
    "qwen2.5:7b": {input: 0, output: 0}      # a local model: listed, so known to be free

A model that is not listed is "price unknown" and a call whose token counts are unknown is "usage
unknown": the record keeps cost_usd empty and says which, never a silent 0. The file is read again
when it changes, so prices can be updated without a restart.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import yaml
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

MILLION = Decimal(1_000_000)
USD_PLACES = Decimal("0.000001")


class CostSource:
    """How a record's cost_usd was found (ledger.models.ModelCall.cost_source)."""

    REPORTED = "reported"  # the response said what it cost (the claude CLI's total_cost_usd)
    PRICE_TABLE = "price table"
    PRICE_UNKNOWN = "price unknown"  # tokens known, the model is not in the table
    USAGE_UNKNOWN = "usage unknown"  # the response did not say how many tokens


@dataclass(frozen=True)
class Price:
    input_per_million: Decimal
    output_per_million: Decimal

    def cost(self, input_tokens: int, output_tokens: int) -> Decimal:
        total = input_tokens * self.input_per_million + output_tokens * self.output_per_million
        return (total / MILLION).quantize(USD_PLACES)


_cache: dict[str, tuple[float, dict[str, Price]]] = {}
_lock = threading.Lock()


def _parse(path: Path) -> dict[str, Price]:
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ImproperlyConfigured(f"HYPERGUILD_MODEL_PRICES_FILE {path}: {exc}") from None
    if not isinstance(data, dict):
        raise ImproperlyConfigured(f"HYPERGUILD_MODEL_PRICES_FILE {path}: expected a mapping of model name → prices")
    prices = {}
    for model, entry in data.items():
        if not isinstance(entry, dict) or not {"input", "output"} <= set(entry):
            raise ImproperlyConfigured(
                f"HYPERGUILD_MODEL_PRICES_FILE {path}: {model!r} needs input and output (USD per million tokens)"
            )
        try:
            price = Price(Decimal(str(entry["input"])), Decimal(str(entry["output"])))
        except ArithmeticError:
            raise ImproperlyConfigured(
                f"HYPERGUILD_MODEL_PRICES_FILE {path}: {model!r} prices must be numbers"
            ) from None
        if price.input_per_million < 0 or price.output_per_million < 0:
            raise ImproperlyConfigured(f"HYPERGUILD_MODEL_PRICES_FILE {path}: {model!r} has a negative price")
        prices[str(model)] = price
    return prices


def price_table() -> Mapping[str, Price]:
    """The table as the file says now (empty without a file); the cached table itself, hence read-only."""
    name = settings.HYPERGUILD_MODEL_PRICES_FILE
    if not name:
        return {}
    path = Path(name)
    try:
        mtime = path.stat().st_mtime
    except OSError as exc:
        raise ImproperlyConfigured(f"HYPERGUILD_MODEL_PRICES_FILE {path}: {exc.strerror}") from None
    with _lock:
        cached = _cache.get(name)
        if cached is None or cached[0] != mtime:
            cached = _cache[name] = (mtime, _parse(path))
        return cached[1]


def price_for(model: str) -> Price | None:
    return price_table().get(model)


def cost_of(
    model: str, input_tokens: int | None, output_tokens: int | None, reported: Decimal | float | None = None
) -> tuple[Decimal | None, str]:
    """(cost in USD or None, how it was found)."""
    if reported is not None:
        return Decimal(str(reported)).quantize(USD_PLACES), CostSource.REPORTED
    if input_tokens is None and output_tokens is None:
        return None, CostSource.USAGE_UNKNOWN
    price = price_for(model)
    if price is None:
        return None, CostSource.PRICE_UNKNOWN
    return price.cost(input_tokens or 0, output_tokens or 0), CostSource.PRICE_TABLE


def estimate(model: str, input_chars: int, max_output_tokens: int) -> Decimal | None:
    """A call's cost before it is made: the prompt at ~4 characters a token, the whole output limit.

    None when the model has no price: a budget then reserves HYPERGUILD_BUDGET_UNPRICED_CALL_USD.
    """
    price = price_for(model)
    if price is None:
        return None
    return price.cost(input_chars // 4 + 1, max_output_tokens)
