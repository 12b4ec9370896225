"""The routed twins of the sessions skills on /mcp/routing: the same logic, run with the router's model.

`sessions/tools.py` declares the tools; this is what the routed
`retrospective` does. A routed call passes when `judge(outcome)` finds
nothing wrong; otherwise the router fails open onto the thinking model
(`supervisor.routing`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from django.contrib.auth.models import User

from hyperguild.errors import DomainError
from hyperguild.lib.model_calls import model_call_context
from hyperguild.lib.typed import JSON
from ledger.models import ModelCall
from sessions.actions import session_for
from sessions.errors import SessionNotFound
from sessions.retrospective import run_retrospective
from supervisor.models import RoutingEntry
from supervisor.routing import Attempt, route
from supervisor.routing_service import routed_result, routing_client
from supervisor.skills import RetrospectiveInput, RetrospectiveResult, SkillResult, Verdict


def routed_retrospective_result(params: RetrospectiveInput, requested_by: User | None = None) -> RetrospectiveResult:
    """A retrospective of `params.session_id` written by the routed model (`requested_by`: who asked, a User)."""
    result = routed_session_skill(
        "retrospective",
        params.session_id,
        params.model,
        # The routing entry keeps the attempt's outcome as it is stored: JSON.
        lambda session_id, model: run_retrospective(session_id, llm_model=model, requested_by=requested_by).model_dump(
            mode="json", exclude_unset=True
        ),
        retrospective_judge,
        "learnings",
        requested_by=requested_by,
    )
    assert isinstance(result, RetrospectiveResult)
    return result


def routed_session_skill(
    skill: str,
    session_id: str,
    override: str | None,
    run_with_model: Callable[[str, str], JSON],
    judge: Callable[[JSON], str | None],
    list_key: str,
    *,
    requested_by: User | None = None,
) -> SkillResult:
    """Route a sessions-app skill on `session_id` (`override`: the model the caller asked for, else the router's):
    `run_with_model(session_id, model)` does the work with the given model, `judge(outcome)` returns None if it
    passed or why it did not."""
    started = time.monotonic()
    session_for(session_id, requested_by)  # another person's session: as if it did not exist, before any routing
    routing_client()

    def attempt(model: str) -> Attempt:
        began = time.monotonic()
        # The model calls made inside are collected, so the entry keeps what was sent and what the model wrote.
        with model_call_context() as recorded:
            try:
                outcome = run_with_model(session_id, model)
            except SessionNotFound:
                raise  # the caller's mistake, not the model's: out of route() before anything is logged
            except DomainError as exc:  # a refusal from the code the model's answer went through
                return Attempt(
                    RoutingEntry.Status.ERROR,
                    error=exc.message,
                    latency_ms=_ms(began),
                    **_model_exchange(recorded.recorded)[0],
                )
            except Exception as exc:  # the sessions logic broke: this attempt errs, the call still ends cleanly
                return Attempt(
                    RoutingEntry.Status.ERROR,
                    error=f"{exc.__class__.__name__}: {exc}",
                    latency_ms=_ms(began),
                    **_model_exchange(recorded.recorded)[0],
                )
        exchange, outage = _model_exchange(recorded.recorded)
        problem = judge(outcome)
        status = RoutingEntry.Status.FAIL if problem else RoutingEntry.Status.PASS
        if problem and outage:
            # The gateway never answered (the rules stood in): not the model's failure.
            status = RoutingEntry.Status.OUTAGE
        return Attempt(status, data=outcome, error=problem or "", latency_ms=_ms(began), **exchange)

    # SessionNotFound leaves route() before anything is logged and reaches the caller as a tool error.
    routed = route(skill, attempt, override=override, session_id=session_id, requested_by=requested_by)
    values = {
        key: value
        for key, value in routed.data.items()
        if key not in {"status", "model_used", "attempts", "duration_ms", "phase", "skill"}
    }
    values["count"] = len(values.get(list_key) or [])
    return routed_result(skill, routed, started, **values)


def _model_exchange(call_ids: list[int]) -> tuple[dict[str, Any], bool]:
    """(request sent, the model's own text and the call ids, for the Attempt; whether the last call was an outage)."""
    calls = list(ModelCall.objects.filter(pk__in=call_ids).order_by("created_at", "id"))
    if not calls:
        return {}, False
    last = calls[-1]
    request = (last.request or {}).get("messages", last.request) if isinstance(last.request, dict) else last.request
    exchange = {
        "model_calls": [call.pk for call in calls],
        "request": request,
        "response": _model_text(last.response)[: RoutingEntry.BODY_CAP],
    }
    return exchange, last.outcome == ModelCall.Outcome.OUTAGE


def _model_text(body: str) -> str:
    """The message content of an OpenAI chat-completions body; the body itself when it is not one."""
    try:
        content = json.loads(body)["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError):
        return body
    return content if isinstance(content, str) else body


def _ms(began: float) -> int:
    return int((time.monotonic() - began) * 1000)


def retrospective_judge(outcome: dict[str, Any]) -> str | None:
    if outcome.get("status") != Verdict.PASS:
        return outcome.get("message") or f"the retrospective ended {outcome.get('status')}"
    if outcome.get("method") != "llm":
        # The sessions logic falls back to rules when the model fails: for routing, that model failed.
        return "the model did not answer; the rules answered instead. " + str(outcome.get("message", ""))[:500]
    return None
