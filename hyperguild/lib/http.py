"""Every outbound HTTP call: pooled clients, one retry policy, typed errors, a circuit breaker.

    client = ServiceClient("ollama embedder (nomic-embed-text)", "http://127.0.0.1:11434", timeout=30, retries=1)
    response = client.post("/api/embed", json={...})     # 2xx, or a ServiceError
    breaker_states()                                     # {"<service> <base url>": {"state": "closed", ...}}

- Pooling: one `httpx.Client` per (origin, pool size), shared by every
  ServiceClient that talks to that origin and across threads (httpx.Client is
  thread-safe), so keep-alive connections are reused from call to call.
- Retries: a transport error, a timeout, HTTP 408/425/429/5xx are retried up
  to `retries` more times with exponential backoff and jitter; a Retry-After
  header is honoured up to `HYPERGUILD_HTTP_RETRY_AFTER_MAX_SECONDS`. Any
  other status below 500 is an answer: a 4xx raises ServiceRejected at once.
- Errors: ServiceError names the service and the URL (credentials and query stripped)
  and carries an excerpt of the body (`response_excerpt`, cut by `hyperguild.lib.text.excerpt`).
- Circuit breaker, one per service and base URL, process-wide: after
  `HYPERGUILD_BREAKER_FAILURES` calls in a row end unavailable it opens and
  calls fail at once (CircuitOpen) for `HYPERGUILD_BREAKER_COOLDOWN_SECONDS`;
  then one probe call (a single attempt) goes through: success closes it,
  failure opens it again. A 4xx or a malformed body counts as "the service
  answered", not as a failure.

Ours rather than tenacity + pybreaker: bench/plumbing_cpu.py and the product's tests run on
bench/plumbing/http_libs.py (bench/RESULTS.md, issue 49; docs/architecture.md).
"""

from __future__ import annotations

import email.utils
import random
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypedDict, TypeVar
from urllib.parse import urlsplit, urlunsplit

import httpx
from django.conf import settings

from hyperguild.lib import admission
from hyperguild.lib.text import EXCERPT_CHARS, excerpt

T = TypeVar("T")

# Timeouts, retries, backoff and the breaker's thresholds are settings (HYPERGUILD_HTTP_*, HYPERGUILD_BREAKER_*),
# defined once in hyperguild/settings.py and read at each call, so a test's override takes effect.

# Statuses below 500 worth another attempt: request timeout, too early, rate limit (every 5xx is too).
RETRYABLE_STATUSES = frozenset({408, 425, 429})
# Connections kept per pool unless a client asks for another size.
DEFAULT_MAX_CONNECTIONS = 20


def response_excerpt(response: httpx.Response, limit: int = EXCERPT_CHARS) -> str:
    """The human part of an error body: `error.message`, `error`, `detail` of a JSON body, else the text."""
    try:
        body = response.json()
    except ValueError:
        return excerpt(response.text, limit)
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and (error.get("message") or error.get("detail")):
            return excerpt(str(error.get("message") or error.get("detail")), limit)
        if isinstance(error, str) and error:
            return excerpt(error, limit)
        if body.get("detail"):
            return excerpt(str(body["detail"]), limit)
    return excerpt(response.text, limit)


def safe_url(url: str) -> str:
    """`url` without user:password and without the query string (where keys hide)."""
    parts = urlsplit(url)
    netloc = parts.hostname or ""
    if parts.port:
        netloc = f"{netloc}:{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


# --- errors ----------------------------------------------------------------------------------


class ServiceError(Exception):
    """No usable answer from an outbound service; the message names the service and the URL."""

    def __init__(self, message: str, *, service: str, url: str, status: int | None = None, attempts: int = 1):
        super().__init__(message)
        self.service = service
        self.url = url
        self.status = status
        self.attempts = attempts


class ServiceUnavailable(ServiceError):
    """Unreachable, or still failing (429/5xx) after the retries."""


class ServiceTimeout(ServiceUnavailable):
    """The last attempt ran past the timeout."""


class CircuitOpen(ServiceUnavailable):
    """The service failed too often in a row; calls are refused until the cool-down ends."""


class ServiceRejected(ServiceError):
    """The service answered with a 4xx: the request is wrong (unknown model, bad key, missing path)."""

    def __init__(self, message: str, *, detail: str = "", **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.detail = detail


class ServiceBadResponse(ServiceError):
    """The service answered 2xx, but not with something usable (not JSON, wrong shape)."""


# --- circuit breaker -------------------------------------------------------------------------


class BreakerState(TypedDict):
    """A breaker as /health shows it."""

    state: str  # closed, open or half-open
    consecutive_failures: int
    retry_in_seconds: float
    last_problem: str  # "" until one failed


class CircuitBreaker:
    """closed -> open after `failures` failed calls in a row -> half-open after `cooldown` s -> closed or open."""

    def __init__(self, failures: int | None = None, cooldown: float | None = None):
        self.failures_to_open = failures
        self.cooldown = cooldown
        self.state = "closed"
        self.failures = 0
        self.open_until = 0.0
        self.last_problem = ""
        self._probing = False
        self._lock = threading.Lock()

    def _threshold(self) -> int:
        return self.failures_to_open or settings.HYPERGUILD_BREAKER_FAILURES

    def _cooldown(self) -> float:
        return self.cooldown if self.cooldown is not None else settings.HYPERGUILD_BREAKER_COOLDOWN_SECONDS

    def before_call(self) -> tuple[bool, bool, float]:
        """(allowed, is_probe, seconds until the next probe may go out)."""
        with self._lock:
            if self.state == "closed":
                return True, False, 0.0
            left = self.open_until - time.monotonic()
            if self.state == "open" and left <= 0:
                self.state = "half-open"
            if self.state == "half-open" and not self._probing:
                self._probing = True
                return True, True, 0.0
            return False, False, max(left, 0.0)

    def abandon_probe(self) -> None:
        """The probe ended in an error of our own (a bad URL): let the next call probe instead."""
        with self._lock:
            self._probing = False

    def record_success(self) -> None:
        with self._lock:
            self.state, self.failures, self._probing = "closed", 0, False

    def record_failure(self, problem: str) -> None:
        with self._lock:
            self.failures += 1
            self.last_problem = problem
            if self.state == "half-open" or self.failures >= self._threshold():
                # The cool-down is fixed when the breaker opens.
                self.state, self.open_until = "open", time.monotonic() + self._cooldown()
            self._probing = False

    def snapshot(self) -> BreakerState:
        with self._lock:
            state = self.state
            retry_in = max(0.0, self.open_until - time.monotonic())
            if state == "open" and retry_in == 0:
                state = "half-open"  # the next call is let through as a probe
            return {
                "state": state,
                "consecutive_failures": self.failures,
                "retry_in_seconds": round(retry_in, 1),
                "last_problem": self.last_problem,
            }


_breakers: dict[str, CircuitBreaker] = {}
_breakers_lock = threading.Lock()


def breaker_for(key: str) -> CircuitBreaker:
    with _breakers_lock:
        breaker = _breakers.get(key)
        if breaker is None:
            breaker = _breakers[key] = CircuitBreaker()
        return breaker


def breaker_states() -> Mapping[str, BreakerState]:
    """Every service called since start-up: {"<service> <base url>": {state, consecutive_failures, ...}}."""
    with _breakers_lock:
        items = list(_breakers.items())
    return {key: breaker.snapshot() for key, breaker in sorted(items)}


def reset_breakers() -> None:
    """Forget every breaker (tests start from closed breakers)."""
    with _breakers_lock:
        _breakers.clear()


# --- pools -----------------------------------------------------------------------------------

_pools: dict[tuple[str, int], httpx.Client] = {}
_pools_lock = threading.Lock()


def pooled_client(base_url: str, max_connections: int = DEFAULT_MAX_CONNECTIONS) -> httpx.Client:
    """The process-wide connection pool for `base_url`'s origin (scheme, host, port) and pool size."""
    parts = urlsplit(base_url)
    key = (f"{parts.scheme}://{parts.netloc}", max_connections)
    with _pools_lock:
        pool = _pools.get(key)
        if pool is None or pool.is_closed:
            limits = httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections)
            pool = _pools[key] = httpx.Client(limits=limits, follow_redirects=False)
        return pool


_configured: dict[tuple[object, ...], Any] = {}
_configured_lock = threading.Lock()


def configured_client(key: tuple[object, ...], build: Callable[[], T]) -> T:
    """One client object per configuration `key` for the whole process, built on first use.

    A changed setting (tests use override_settings) makes a new key, hence a fresh client.
    """
    with _configured_lock:
        client = _configured.get(key)
        if client is None:
            client = _configured[key] = build()
        return client


# --- the client ------------------------------------------------------------------------------


@dataclass
class _Attempt:
    problem: str
    status: int | None = None
    timed_out: bool = False
    retry_after: float | None = None


def _retry_after_seconds(response: httpx.Response) -> float | None:
    value = response.headers.get("Retry-After")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def backoff_delay(retry: int, base: float, cap: float) -> float:
    """Pause before retry number `retry` (1-based): base * 2**(retry-1), capped, with equal jitter."""
    delay = min(cap, base * 2 ** (retry - 1))
    return delay / 2 + random.uniform(0, delay / 2)


class ServiceClient:
    """Calls to one service at one base URL, through the shared pool, the retry policy and the breaker.

    `timeout` and `retries` default to HYPERGUILD_HTTP_TIMEOUT and HYPERGUILD_HTTP_RETRIES;
    `backoff` is the first pause in seconds (HYPERGUILD_HTTP_BACKOFF_SECONDS); `headers` go
    on every request (put the API key here: it never reaches a message). Pass `transport`
    to get a private client instead of the shared pool.
    """

    def __init__(
        self,
        service: str,
        base_url: str,
        *,
        headers: dict[str, str] | None = None,
        timeout: float | None = None,
        retries: int | None = None,
        backoff: float | None = None,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        transport: httpx.BaseTransport | None = None,
    ):
        self.service = service
        self.base_url = base_url.rstrip("/")
        self.headers = dict(headers or {})
        self.timeout = float(timeout if timeout is not None else settings.HYPERGUILD_HTTP_TIMEOUT)
        self.retries = int(retries if retries is not None else settings.HYPERGUILD_HTTP_RETRIES)
        self.backoff = float(backoff if backoff is not None else settings.HYPERGUILD_HTTP_BACKOFF_SECONDS)
        if transport is not None:
            self._http = httpx.Client(transport=transport, follow_redirects=False)
        else:
            self._http = pooled_client(self.base_url, max_connections)
        self.breaker = breaker_for(f"{service} {safe_url(self.base_url)}")

    def url(self, path: str) -> str:
        return path if "://" in path else f"{self.base_url}{path}"

    def get(self, path: str = "", **kwargs: Any) -> httpx.Response:
        return self.request("GET", path, **kwargs)

    def post(self, path: str = "", **kwargs: Any) -> httpx.Response:
        return self.request("POST", path, **kwargs)

    def post_json(self, path: str, payload: Any, **kwargs: Any) -> Any:
        """POST `payload` as JSON; the decoded JSON answer, or ServiceBadResponse when it is not JSON."""
        response = self.post(path, json=payload, **kwargs)
        try:
            return response.json()
        except ValueError:
            raise ServiceBadResponse(
                f"{self.service} at {safe_url(str(response.url))} answered HTTP {response.status_code} "
                f"with a body that is not JSON: {excerpt(response.text)}",
                service=self.service,
                url=safe_url(str(response.url)),
                status=response.status_code,
            ) from None

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
        """One call: the response (2xx, or any status with `any_status`), else a ServiceError.

        `timeout` and `retries` override the client's for this call only.
        """
        url = self.url(path)
        shown = safe_url(url)
        allowed, probe, wait = self.breaker.before_call()
        if not allowed:
            raise CircuitOpen(
                f"{self.service} at {shown} is unavailable: {self.breaker.failures} calls in a row failed "
                f"(last: {self.breaker.last_problem}); the next try goes out in {wait:.0f} s",
                service=self.service,
                url=shown,
            )
        timeout = self.timeout if timeout is None else timeout
        retries = self.retries if retries is None else retries
        # A web request waiting on another service gives its place to the next one meanwhile.
        with admission.outside():
            return self._attempts(method, url, shown, json, timeout, any_status, 1 if probe else retries + 1, probe)

    def _attempts(
        self,
        method: str,
        url: str,
        shown: str,
        json: Any,
        timeout: float,
        any_status: bool,
        attempts_allowed: int,
        probe: bool,
    ) -> httpx.Response:
        """Up to `attempts_allowed` attempts (a half-open probe is one), with backoff between them."""
        attempt = 0
        while True:
            attempt += 1
            try:
                failed = self._attempt(method, url, json, timeout, any_status)
            except Exception:
                if probe:
                    self.breaker.abandon_probe()
                raise
            if isinstance(failed, httpx.Response):
                self.breaker.record_success()
                if failed.status_code >= 400 and not any_status:
                    detail = response_excerpt(failed)
                    raise ServiceRejected(
                        f"{self.service} at {shown} refused the request with HTTP {failed.status_code}: {detail}",
                        service=self.service,
                        url=shown,
                        status=failed.status_code,
                        attempts=attempt,
                        detail=detail,
                    )
                return failed
            if attempt >= attempts_allowed:
                self.breaker.record_failure(failed.problem)
                error = ServiceTimeout if failed.timed_out else ServiceUnavailable
                raise error(
                    f"{self.service} at {shown} is unavailable after {attempt} "
                    f"attempt{'s' if attempt != 1 else ''}: {failed.problem}",
                    service=self.service,
                    url=shown,
                    status=failed.status,
                    attempts=attempt,
                )
            pause = backoff_delay(attempt, self.backoff, settings.HYPERGUILD_HTTP_BACKOFF_MAX_SECONDS)
            if failed.retry_after is not None:
                pause = min(failed.retry_after, settings.HYPERGUILD_HTTP_RETRY_AFTER_MAX_SECONDS)
            time.sleep(pause)

    def _attempt(self, method: str, url: str, json: Any, timeout: float, any_status: bool) -> httpx.Response | _Attempt:
        try:
            response = self._http.request(method, url, json=json, headers=self.headers, timeout=timeout)
        except httpx.TimeoutException:
            return _Attempt(f"timed out after {timeout:g} s", timed_out=True)
        except httpx.TransportError as exc:
            return _Attempt(f"unreachable, could not connect ({exc.__class__.__name__}: {excerpt(str(exc))})")
        status = response.status_code
        if any_status or not (status in RETRYABLE_STATUSES or status >= 500):
            return response
        return _Attempt(
            f"HTTP {status}: {response_excerpt(response)}", status, retry_after=_retry_after_seconds(response)
        )

    def close(self) -> None:
        """Close a private client; the shared pool stays open for the other clients."""
        if self._http not in _pools.values():
            self._http.close()
