"""Mode 2: answer a skill with the fast or the thinking model, chosen by its observed pass rate.

How a model is chosen (`decide`):

1. A caller's explicit `model` wins (reason "override").
1a. When HYPERGUILD_FAST_MODEL = HYPERGUILD_THINKING_MODEL, that one model
   answers every call (reason "single model"), with no fail-open retry.
1b. A promoted pathway (see `supervisor.models.Pathway`) for the call's
   narrow fingerprint (skill + first two path segments + signal class)
   decides next: its recommended model, reason "pathway".
2. Otherwise the skill's pass rate is read (`pass_rate`): the share of
   passing entries among the last `HYPERGUILD_ROUTE_WINDOW` attempts the
   router chose itself (first attempts, overrides excluded; see
   `RoutingEntryQuerySet.router_choices`). Measuring the router's first choice
   rather than the call's final outcome matters: the thinking model rescues a
   failing fast model (fail-open), so final outcomes would stay high while the
   fast model fails, and the router would never move off it.
3. Fewer than `HYPERGUILD_ROUTE_MIN_SAMPLES` runs: fast with probability 0.5
   ("min samples"), so a new skill is neither trusted nor starved.
   rate ≥ FLOOR: fast ("floor"). rate < CEIL: thinking ("ceil"). In between
   ("sample band"): fast with probability (rate − CEIL) / (FLOOR − CEIL).

The rate is cached per skill for `HYPERGUILD_PASS_RATE_TTL_SECONDS` in the
default (process-local) cache: routing reads it on every call, and a minute
of staleness costs little next to a query per call.

How a call is run (`route`): the chosen model gets one attempt. Pass or fail
is decided by checks, not by the model (the caller's `attempt` function
validates the answer and runs the skill's checks). A failed attempt on any
model other than the thinking model is retried once on the thinking model
("fail-open retry"). Every attempt is a RoutingEntry; exactly one per call is
final. A call with a pathway key is counted on its pathway (replays,
successes, promotion, retirement) and its entries point at it. If the last
attempt failed too, `RoutingFailed` names both models and why, and carries
the last attempt's answer (`data`) when there was one.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol, TypedDict

from django.conf import settings
from django.core.cache import cache

from hyperguild.lib.llm import (
    ChatResult,
    LLMBadResponse,
    LLMClient,
    LLMError,
    LLMRejected,
    LLMTruncated,
    LLMUnavailable,
)
from hyperguild.lib.model_calls import mark_model_call
from hyperguild.lib.typed import JSON, JsonSchema
from ledger.models import ModelCall
from supervisor.actions import do_log_routing_entry, do_record_pathway_outcome
from supervisor.errors import RoutingFailed
from supervisor.models import Pathway, RoutingEntry, RoutingFigures

if TYPE_CHECKING:
    from django.contrib.auth.models import User

CACHE_KEY = "routing:pass-rate:{skill}"
# A new skill (fewer than MIN_SAMPLES runs) goes to the fast model this often.
MIN_SAMPLES_FAST_PROBABILITY = 0.5


class RandomSource(Protocol):
    def random(self) -> float: ...


@dataclass(frozen=True)
class PathwayKey:
    """The narrow fingerprint of a task: skill + first two path segments of its file + kind of signal."""

    skill: str
    area: str
    signal: str

    @property
    def key(self) -> str:
        return f"{self.skill}|{self.area}|{self.signal}"

    @classmethod
    def of(cls, skill: str, path: str, signal: str) -> PathwayKey:
        return cls(skill, pathway_area(path), signal)


def pathway_area(path: str) -> str:
    """The first two segments of a relative path: "src/api/views.py" → "src/api", "app.py" → "app.py"."""
    segments = [part for part in path.replace("\\", "/").split("/") if part and part != "."]
    return "/".join(segments[:2]) or "."


@dataclass(frozen=True)
class PassRate:
    rate: float | None  # None: no runs yet
    samples: int


@dataclass(frozen=True)
class Decision:
    model: str
    reason: RoutingEntry.Reason
    pass_rate: float | None
    samples: int
    fast_probability: float | None  # None for override / floor / ceil


@dataclass
class Attempt:
    """What one model call came to. `status` is decided by checks, never by the model."""

    status: RoutingEntry.Status
    data: Any = None
    error: str = ""
    latency_ms: int = 0
    usage: dict[str, int] | None = None
    request: Any = None
    response: str = ""
    model_calls: list[int] = field(default_factory=list)  # ids of the ModelCalls this attempt made
    rejected: bool = False  # the gateway refused the model (unknown model, bad key): a set-up problem

    @property
    def passed(self) -> bool:
        return self.status == RoutingEntry.Status.PASS

    @property
    def outage(self) -> bool:
        return self.status == RoutingEntry.Status.OUTAGE


@dataclass
class Routed:
    """A routed call that ended in a pass."""

    data: Any
    entry: RoutingEntry
    entries: list[RoutingEntry] = field(default_factory=list)

    @property
    def model(self) -> str:
        return self.entry.model

    @property
    def attempts(self) -> int:
        return len(self.entries)


# --- the pass rate -------------------------------------------------------------


def compute_pass_rate(skill: str) -> PassRate:
    window = settings.HYPERGUILD_ROUTE_WINDOW
    statuses = list(
        RoutingEntry.objects.for_skill(skill)
        .router_choices()
        .order_by("-created_at", "-id")
        .values_list("status", flat=True)[:window]
    )
    if not statuses:
        return PassRate(None, 0)
    passes = sum(1 for status in statuses if status == RoutingEntry.Status.PASS)
    return PassRate(passes / len(statuses), len(statuses))


def pass_rate(skill: str) -> PassRate:
    """The skill's pass rate, from the cache when it is younger than the TTL."""
    ttl = settings.HYPERGUILD_PASS_RATE_TTL_SECONDS
    if ttl <= 0:
        return compute_pass_rate(skill)
    key = CACHE_KEY.format(skill=skill)
    cached = cache.get(key)
    if cached is not None:
        return PassRate(*cached)
    fresh = compute_pass_rate(skill)
    cache.set(key, (fresh.rate, fresh.samples), ttl)
    return fresh


# --- the decision --------------------------------------------------------------


def fast_probability(rate: float) -> float:
    """Chance of the fast model in the sample band: 0 at CEIL, rising linearly to 1 at FLOOR."""
    floor, ceil = settings.HYPERGUILD_ROUTE_LOCAL_FLOOR, settings.HYPERGUILD_ROUTE_LOCAL_CEIL
    if floor <= ceil:  # degenerate band (system checks allow FLOOR == CEIL): a step
        return 1.0 if rate >= floor else 0.0
    return min(1.0, max(0.0, (rate - ceil) / (floor - ceil)))


def decide(
    skill: str, *, override: str | None = None, rng: RandomSource | None = None, pathway: PathwayKey | None = None
) -> Decision:
    fast, thinking = settings.HYPERGUILD_FAST_MODEL, settings.HYPERGUILD_THINKING_MODEL
    measured = pass_rate(skill)
    if override:
        return Decision(override, RoutingEntry.Reason.OVERRIDE, measured.rate, measured.samples, None)
    if fast == thinking:
        # One model serves both roles (a single local model): there is nothing to choose, and no fail-open retry.
        return Decision(fast, RoutingEntry.Reason.SINGLE_MODEL, measured.rate, measured.samples, None)
    if pathway is not None:
        # Read fresh on every call (one indexed lookup): a retirement must stop the next call, not the next TTL.
        promoted = Pathway.objects.deciding().filter(key=pathway.key).values_list("recommended_model", flat=True)
        model = promoted.first()
        if model:
            return Decision(model, RoutingEntry.Reason.PATHWAY, measured.rate, measured.samples, None)
    rng = rng or random
    if measured.rate is None or measured.samples < settings.HYPERGUILD_ROUTE_MIN_SAMPLES:
        probability = MIN_SAMPLES_FAST_PROBABILITY
        model = fast if rng.random() < probability else thinking
        return Decision(model, RoutingEntry.Reason.MIN_SAMPLES, measured.rate, measured.samples, probability)
    if measured.rate >= settings.HYPERGUILD_ROUTE_LOCAL_FLOOR:
        return Decision(fast, RoutingEntry.Reason.FLOOR, measured.rate, measured.samples, None)
    if measured.rate < settings.HYPERGUILD_ROUTE_LOCAL_CEIL:
        return Decision(thinking, RoutingEntry.Reason.CEIL, measured.rate, measured.samples, None)
    probability = fast_probability(measured.rate)
    model = fast if rng.random() < probability else thinking
    return Decision(model, RoutingEntry.Reason.SAMPLE_BAND, measured.rate, measured.samples, probability)


# --- running a routed call -----------------------------------------------------


def route(
    skill: str,
    attempt: Callable[[str], Attempt],
    *,
    override: str | None = None,
    session_id: str = "",
    rng: RandomSource | None = None,
    cancelled: Callable[[], bool] | None = None,
    pathway: PathwayKey | None = None,
    requested_by: User | None = None,
) -> Routed:
    """Decide, attempt, fail open once onto the thinking model, log every attempt.

    `attempt(model)` makes the call and judges it; it must not raise for a
    model failure (return an Attempt with status fail/error instead).
    `cancelled()` true after the first attempt skips the retry (the first
    attempt is then final). Raises RoutingFailed (a SupervisorError) when the last
    attempt did not pass.
    """
    thinking = settings.HYPERGUILD_THINKING_MODEL
    decision = decide(skill, override=override, rng=rng, pathway=pathway)
    first = attempt(decision.model)
    stopped = bool(cancelled and cancelled())
    retry = not first.passed and decision.model != thinking and not stopped
    log_entry = partial(do_log_routing_entry, skill=skill, session_id=session_id, requested_by=requested_by)
    first_entry = log_entry(decision=decision, attempt=first, is_final=not retry)

    def remember(entries: list[RoutingEntry], attempts: list[Attempt]) -> None:
        # An override says nothing about what works where, so it teaches the pathway nothing.
        if pathway is not None and decision.reason != RoutingEntry.Reason.OVERRIDE:
            # An outage says nothing about the model either.
            outcomes = [
                (entry.model, result.passed)
                for entry, result in zip(entries, attempts, strict=True)
                if not result.outage
            ]
            do_record_pathway_outcome(pathway, outcomes, entries)

    if first.passed:
        remember([first_entry], [first])
        return Routed(first.data, first_entry, [first_entry])
    if not retry:
        remember([first_entry], [first])
        why_not = "the call was cancelled" if stopped else "it is the thinking model, there is nothing to fall back on"
        if decision.reason == RoutingEntry.Reason.SINGLE_MODEL:
            why_not = "the fast and the thinking model are the same model"
        raise RoutingFailed(
            f"{skill}: {decision.model} ({decision.reason}) failed: {first.error} No retry: {why_not}.{failure_hint([first])}",
            [first_entry],
            first.data,
        )
    fallback = Decision(thinking, RoutingEntry.Reason.FAIL_OPEN, decision.pass_rate, decision.samples, None)
    second = attempt(thinking)
    second_entry = log_entry(decision=fallback, attempt=second, is_final=True, attempt_of=first_entry)
    remember([first_entry, second_entry], [first, second])
    if second.passed:
        return Routed(second.data, second_entry, [first_entry, second_entry])
    raise RoutingFailed(
        f"{skill}: both models failed. {decision.model} ({decision.reason}): {first.error} "
        f"Then {thinking} (fail-open retry): {second.error}{failure_hint([first, second])}",
        [first_entry, second_entry],
        second.data,
    )


def failure_hint(attempts: list[Attempt]) -> str:
    """What to do about failed attempts, named after their actual cause ('' when the answers were just wrong)."""
    if all(attempt.outage for attempt in attempts):
        return (
            " The gateway (LITELLM_BASE_URL) could not be reached or kept failing: this is an outage, not counted "
            "against either model; check that it is running."
        )
    if any(attempt.rejected for attempt in attempts):
        return (
            " Check the gateway (LITELLM_BASE_URL) knows both models (HYPERGUILD_FAST_MODEL, HYPERGUILD_THINKING_MODEL) "
            "and accepts LITELLM_API_KEY."
        )
    return ""


def llm_attempt(
    client: LLMClient,
    messages: list[JSON],
    schema: JsonSchema,
    check: Callable[[JSON], str | None] | None = None,
    *,
    max_tokens: int | None = None,
    purpose: str = "",
) -> Callable[[str], Attempt]:
    """An `attempt` for `route` that asks a model for JSON matching `schema`, then runs `check`.

    `check(data)` returns None when the answer passes, or the reason it fails;
    it may also normalise `data` in place (e.g. drop ungrounded findings).
    """

    def run(model: str) -> Attempt:
        started = time.monotonic()
        result: ChatResult | None
        try:
            data, result = client.chat_json(
                messages, model=model, schema=schema, max_tokens=max_tokens, purpose=purpose
            )
        except LLMBadResponse as exc:
            result = getattr(exc, "result", None)
            what = (
                "the answer was cut at the token limit"
                if isinstance(exc, LLMTruncated)
                else "the answer failed validation"
            )
            return Attempt(
                RoutingEntry.Status.FAIL,
                error=f"{what}: {exc}",
                latency_ms=result.latency_ms if result else _ms_since(started),
                usage=result.usage if result else None,
                request=messages,
                response=result.text if result else (exc.text or ""),
                model_calls=_call_ids(exc),
            )
        except LLMUnavailable as exc:
            # Unreachable, timed out, 5xx: the model never got its chance; not counted in its pass rate.
            return Attempt(
                RoutingEntry.Status.OUTAGE,
                error=str(exc),
                latency_ms=_ms_since(started),
                request=messages,
                model_calls=_call_ids(exc),
            )
        except LLMError as exc:
            # Unknown model, bad key: for the router this model failed the call.
            return Attempt(
                RoutingEntry.Status.FAIL,
                error=str(exc),
                latency_ms=_ms_since(started),
                request=messages,
                model_calls=_call_ids(exc),
                rejected=isinstance(exc, LLMRejected),
            )
        problem = check(data) if check else None
        if problem and result.call_id is not None:
            mark_model_call(result.call_id, ModelCall.Outcome.BAD_OUTPUT, f"the answer failed a check: {problem}")
        return Attempt(
            RoutingEntry.Status.FAIL if problem else RoutingEntry.Status.PASS,
            data=data,
            error=f"the answer failed a check: {problem}" if problem else "",
            latency_ms=result.latency_ms,
            usage=result.usage,
            request=messages,
            response=result.text,
            model_calls=[result.call_id] if result.call_id is not None else [],
        )

    return run


def _call_ids(exc: Exception) -> list[int]:
    call_id = getattr(exc, "call_id", None)
    return [call_id] if call_id is not None else []


def _ms_since(started: float) -> int:
    return int((time.monotonic() - started) * 1000)


class RoutingSettings(TypedDict):
    fast_model: str
    thinking_model: str
    floor: float
    ceil: float
    window: int
    min_samples: int
    pass_rate_ttl_seconds: int
    pathway_probation: int
    pathway_min_success: float


def routing_settings() -> RoutingSettings:
    """What the router works with (for the stats endpoint and the dashboard)."""
    return {
        "fast_model": settings.HYPERGUILD_FAST_MODEL,
        "thinking_model": settings.HYPERGUILD_THINKING_MODEL,
        "floor": settings.HYPERGUILD_ROUTE_LOCAL_FLOOR,
        "ceil": settings.HYPERGUILD_ROUTE_LOCAL_CEIL,
        "window": settings.HYPERGUILD_ROUTE_WINDOW,
        "min_samples": settings.HYPERGUILD_ROUTE_MIN_SAMPLES,
        "pass_rate_ttl_seconds": settings.HYPERGUILD_PASS_RATE_TTL_SECONDS,
        "pathway_probation": settings.HYPERGUILD_PATHWAY_PROBATION,
        "pathway_min_success": settings.HYPERGUILD_PATHWAY_MIN_SUCCESS,
    }


def routing_stats(since: datetime) -> RoutingFigures:
    """Every routing figure for entries since `since` (defined once, on RoutingEntryQuerySet)."""
    return RoutingEntry.objects.since(since).figures(settings.HYPERGUILD_FAST_MODEL)
