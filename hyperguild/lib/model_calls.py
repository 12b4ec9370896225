"""Recording every model call, from the one client of each protocol: the seam between the clients and the ledger.

    with model_call_context(skill="review", session_id=sid, project=root, requested_by=user):
        client.chat(messages, model="fast", purpose="review")    # the client records the call

    calls = recorded_calls()          # ids of the calls recorded in this block, in order

The clients (hyperguild.lib.llm, hyperguild.lib.reranker, the supervisor's claude runner) call
`record_model_call` once per call, success or failure; who made it, for which skill, session and
project comes from the innermost `model_call_context` (the core names no product concept: these
are plain strings the apps pass in). Outside any context a call is still recorded, with the
purpose its client was given.

The core's clients call this module; the ledger app stores the records (ledger.models.ModelCall), prices
them (ledger.pricing) and holds budgets (ledger.budgets), and hands its actions down through `set_recorder`
at start-up (`LedgerConfig.ready()`), so the core imports no app (issue 49).
"""

from __future__ import annotations

import contextvars
import json
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from hyperguild.lib.redaction import redact_fields, redact_json_text

# What a record keeps of the request and of the raw response, in characters (ledger.models.BODY_CAP).
BODY_CAP = 100_000
TRUNCATION_MARK = "\n…[cut: {dropped} more characters]"


@dataclass(frozen=True)
class CallContext:
    requested_by: Any = None
    service: str = ""
    session_id: str = ""
    project: str = ""
    skill: str = ""
    # Ids of the ModelCalls recorded inside this context (nested contexts included).
    recorded: list[int] = field(default_factory=list, compare=False)
    # The `recorded` lists of the enclosing contexts, which see this context's calls too.
    outer: tuple[list[int], ...] = field(default=(), compare=False, repr=False)


_current: contextvars.ContextVar[CallContext | None] = contextvars.ContextVar("model_call_context", default=None)


class StoredCall(Protocol):
    """What the store returns: a record with its id (ledger.models.ModelCall)."""

    @property
    def pk(self) -> Any: ...


class StoreCall(Protocol):
    def __call__(self, **values: Any) -> StoredCall: ...


class MarkCall(Protocol):
    def __call__(self, call_id: int, *, outcome: str, error: str) -> None: ...


class ReserveBudget(Protocol):
    """Hold what a call about to be made may cost until its record is written (ledger.budgets.reserve)."""

    def __call__(
        self, *, model: str, prompt_chars: int, max_tokens: int, what: str
    ) -> AbstractContextManager[object]: ...


# The ledger's actions that write a call (`ledger.actions.do_record_model_call`, `do_mark_model_call`) and its
# budget gate, handed down at start-up by `LedgerConfig.ready()`: the ledger sits above the core (issue 49).
_store: StoreCall | None = None
_mark: MarkCall | None = None
_reserve: ReserveBudget | None = None


def set_recorder(store: StoreCall, mark: MarkCall, reserve: ReserveBudget) -> None:
    """Name the actions that store a model call and mark one, and the budget gate (once, by `LedgerConfig.ready()`)."""
    global _store, _mark, _reserve
    _store, _mark, _reserve = store, mark, reserve


def _recorder() -> tuple[StoreCall, MarkCall, ReserveBudget]:
    if _store is None or _mark is None or _reserve is None:
        raise RuntimeError(
            "no model-call recorder: LedgerConfig.ready() sets it (the ledger app), so set Django up first"
        )
    return _store, _mark, _reserve


def reserve_budget(*, model: str, prompt_chars: int, max_tokens: int, what: str) -> AbstractContextManager[object]:
    """Hold a call's estimated cost against the budgets until its record is written; refuses over budget."""
    _, _, reserve = _recorder()
    return reserve(model=model, prompt_chars=prompt_chars, max_tokens=max_tokens, what=what)


@contextmanager
def model_call_context(**values: Any) -> Iterator[CallContext]:
    """Name who, which skill, session and project the model calls made inside the block are for.

    A nested context inherits what it does not set; its calls show in its own `recorded` and in every
    enclosing context's, an outer context's calls never in an inner one's.
    """
    enclosing = _current.get()
    if enclosing is None:
        context = CallContext(**values)
    else:
        context = replace(enclosing, **values, recorded=[], outer=(enclosing.recorded, *enclosing.outer))
    token = _current.set(context)
    try:
        yield context
    finally:
        _current.reset(token)


def current_context() -> CallContext:
    return _current.get() or CallContext()


def recorded_calls() -> list[int]:
    """Ids of the ModelCalls recorded inside the current context so far (empty outside any)."""
    context = _current.get()
    return list(context.recorded) if context is not None else []


def _cap(value: Any, cap: int) -> Any:
    if isinstance(value, str):
        if len(value) <= cap:
            return value
        return value[:cap] + TRUNCATION_MARK.format(dropped=len(value) - cap)
    if value is None:
        return None
    text = json.dumps(value, default=str)
    if len(text) <= cap:
        return value
    # Too large to keep whole: keep the opening of its JSON as text, so what was sent stays readable.
    return {"truncated_json": _cap(text, cap)}


def record_model_call(
    *,
    provider: str,
    endpoint: str,
    model: str,
    outcome: str,
    purpose: str = "",
    request: Any = None,
    response: str = "",
    error: str = "",
    status_code: int | None = None,
    finish_reason: str = "",
    latency_ms: int = 0,
    max_tokens: int | None = None,
    input_tokens: int | None = None,
    output_tokens: int | None = None,
    reported_cost_usd: float | None = None,
) -> StoredCall:
    """Redact, cap and store one call; returns its record. Who/skill/session/project: the current context.

    The ledger prices it (from `reported_cost_usd`, else its price table)."""
    store, _, _ = _recorder()
    context = current_context()
    # The raw response is JSON text: its escapes (`\"`, `\u200b`) are decoded before the patterns look.
    cleaned, redactions = redact_fields({"request": request})
    cleaned["response"], found = redact_json_text(response or "")
    redactions += [{"field": "response", "pattern": name, "count": count} for name, count in sorted(found.items())]
    cleaned_error, error_flags = redact_fields({"error": error or ""})
    cleaned.update(cleaned_error)
    redactions += error_flags
    call = store(
        # A User only: the service identity and anonymous callers are named by `service`.
        requested_by=context.requested_by if getattr(context.requested_by, "pk", None) else None,
        service=context.service,
        session_id=context.session_id,
        project=context.project,
        skill=context.skill,
        purpose=purpose,
        provider=provider,
        endpoint=endpoint[:500],
        model=model[:200],
        max_tokens=max_tokens,
        request=_cap(cleaned["request"], BODY_CAP),
        response=_cap(cleaned["response"], BODY_CAP),
        outcome=outcome,
        error=_cap(cleaned["error"], BODY_CAP),
        status_code=status_code,
        finish_reason=(finish_reason or "")[:40],
        latency_ms=max(0, int(latency_ms)),
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        reported_cost_usd=reported_cost_usd,
        redactions=redactions,
    )
    for recorded in (context.recorded, *context.outer):
        recorded.append(call.pk)
    return call


def mark_model_call(call_id: int | None, outcome: str, error: str) -> None:
    """A caller judged a recorded answer (bad JSON, failed check, degenerate): say so on the record."""
    if call_id is None:
        return
    _, mark, _ = _recorder()
    cleaned, _ = redact_fields({"error": error})
    mark(call_id, outcome=outcome, error=cleaned["error"][:10_000])
