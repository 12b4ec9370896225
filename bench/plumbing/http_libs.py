"""hyperguild.lib.http's retry policy and circuit breaker on maintained libraries: tenacity (retries, backoff,
Retry-After) and pybreaker (the breaker). Same public names; errors, pools and excerpts are the product's.

Only the parts the libraries would replace are written here (ServiceClient.request/_attempts, the breaker and
its registry); `bench/plumbing/swap.py` puts this module in place of hyperguild.lib.http for a test run.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import httpx
import pybreaker
import tenacity
from django.conf import settings

from hyperguild.lib import admission
from hyperguild.lib import http as ours
from hyperguild.lib.http import (  # noqa: F401 (re-exported: the same names as hyperguild.lib.http)
    DEFAULT_MAX_CONNECTIONS,
    RETRYABLE_STATUSES,
    CircuitOpen,
    ServiceBadResponse,
    ServiceError,
    ServiceRejected,
    ServiceTimeout,
    ServiceUnavailable,
    _Attempt,
    backoff_delay,
    configured_client,
    pooled_client,
    response_excerpt,
    safe_url,
)


class _Failed(ServiceUnavailable):
    """The retries are spent; carries the last problem for the breaker's snapshot."""


class _Watch(pybreaker.CircuitBreakerListener):
    """What the snapshot shows that pybreaker does not expose: when it opened, the last problem."""

    def __init__(self) -> None:
        self.opened_at = 0.0
        self.last_problem = ""

    def failure(self, cb: pybreaker.CircuitBreaker, exc: BaseException) -> None:
        self.last_problem = getattr(exc, "problem", str(exc))

    def state_change(self, cb: pybreaker.CircuitBreaker, old: Any, new: Any) -> None:
        if new is not None and new.name == pybreaker.STATE_OPEN:
            self.opened_at = time.monotonic()
            cb.reset_timeout = settings.HYPERGUILD_BREAKER_COOLDOWN_SECONDS  # fixed when it opens, as ours


class Breaker:
    def __init__(self) -> None:
        self.watch = _Watch()
        self.cb = pybreaker.CircuitBreaker(
            fail_max=settings.HYPERGUILD_BREAKER_FAILURES,
            reset_timeout=settings.HYPERGUILD_BREAKER_COOLDOWN_SECONDS,
            exclude=[ServiceRejected],  # a 4xx is an answer, not a failure
            listeners=[self.watch],
            throw_new_error_on_trip=False,
        )

    @property
    def failures(self) -> int:
        return self.cb.fail_counter

    @property
    def last_problem(self) -> str:
        return self.watch.last_problem

    def snapshot(self) -> dict[str, Any]:
        state = self.cb.current_state
        retry_in = 0.0
        if state == pybreaker.STATE_OPEN:
            retry_in = max(0.0, self.watch.opened_at + self.cb.reset_timeout - time.monotonic())
            if retry_in == 0:
                state = "half-open"
        return {
            "state": state,
            "consecutive_failures": self.cb.fail_counter,
            "retry_in_seconds": round(retry_in, 1),
            "last_problem": self.watch.last_problem,
        }


_breakers: dict[str, Breaker] = {}
_breakers_lock = threading.Lock()


def breaker_for(key: str) -> Breaker:
    with _breakers_lock:
        if key not in _breakers:
            _breakers[key] = Breaker()
        return _breakers[key]


def breaker_states() -> dict[str, dict[str, Any]]:
    with _breakers_lock:
        items = list(_breakers.items())
    return {key: breaker.snapshot() for key, breaker in sorted(items)}


def reset_breakers() -> None:
    with _breakers_lock:
        _breakers.clear()


def _wait(base: float) -> tenacity.wait.wait_base:
    class RetryAfterOrBackoff(tenacity.wait.wait_base):
        def __call__(self, state: tenacity.RetryCallState) -> float:
            failed = state.outcome.result() if state.outcome else None
            if isinstance(failed, _Attempt) and failed.retry_after is not None:
                return min(failed.retry_after, settings.HYPERGUILD_HTTP_RETRY_AFTER_MAX_SECONDS)
            return backoff_delay(state.attempt_number, base, settings.HYPERGUILD_HTTP_BACKOFF_MAX_SECONDS)

    return RetryAfterOrBackoff()


class ServiceClient(ours.ServiceClient):
    def __init__(self, service: str, base_url: str, **kwargs: Any) -> None:
        super().__init__(service, base_url, **kwargs)
        self.breaker = breaker_for(f"{service} {safe_url(self.base_url)}")  # type: ignore[assignment]

    def request(
        self,
        method: str,
        path: str = "",
        *,
        json: Any = None,
        timeout: float | None = None,
        retries: int | None = None,
        any_status: bool = False,
    ) -> httpx.Response:
        url = self.url(path)
        shown = safe_url(url)
        timeout = self.timeout if timeout is None else timeout
        retries = self.retries if retries is None else retries
        cb = self.breaker.cb
        cb.fail_max = settings.HYPERGUILD_BREAKER_FAILURES

        def guarded() -> httpx.Response:
            probe = cb.current_state == pybreaker.STATE_HALF_OPEN  # pybreaker moved it there for this call
            return self._retried(method, url, shown, json, timeout, any_status, 1 if probe else retries + 1)

        with admission.outside():
            try:
                return cb.call(guarded)
            except pybreaker.CircuitBreakerError:
                raise CircuitOpen(
                    f"{self.service} at {shown} is unavailable: {cb.fail_counter} calls in a row failed "
                    f"(last: {self.breaker.last_problem}); the next try goes out in "
                    f"{self.breaker.snapshot()['retry_in_seconds']:.0f} s",
                    service=self.service,
                    url=shown,
                ) from None

    def _retried(
        self, method: str, url: str, shown: str, json: Any, timeout: float, any_status: bool, attempts: int
    ) -> httpx.Response:
        retrying = tenacity.Retrying(
            stop=tenacity.stop_after_attempt(attempts),
            wait=_wait(self.backoff),
            retry=tenacity.retry_if_result(lambda outcome: isinstance(outcome, _Attempt)),
            retry_error_callback=lambda state: state.outcome.result() if state.outcome else None,
            sleep=time.sleep,
        )
        outcome = retrying(self._attempt, method, url, json, timeout, any_status)
        attempt = retrying.statistics.get("attempt_number", 1)
        if isinstance(outcome, httpx.Response):
            if outcome.status_code >= 400 and not any_status:
                detail = response_excerpt(outcome)
                raise ServiceRejected(
                    f"{self.service} at {shown} refused the request with HTTP {outcome.status_code}: {detail}",
                    service=self.service,
                    url=shown,
                    status=outcome.status_code,
                    attempts=attempt,
                    detail=detail,
                )
            return outcome
        error = ServiceTimeout if outcome.timed_out else _Failed
        failure = error(
            f"{self.service} at {shown} is unavailable after {attempt} attempt{'s' if attempt != 1 else ''}: "
            f"{outcome.problem}",
            service=self.service,
            url=shown,
            status=outcome.status,
            attempts=attempt,
        )
        failure.problem = outcome.problem  # type: ignore[attr-defined]
        raise failure
