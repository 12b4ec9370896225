"""OpenAI-compatible chat-completions client (LiteLLM and friends).

One small client per protocol, with timeouts, bounded retries and typed
errors, so callers can tell "the gateway is down" (LLMUnavailable) from "the
gateway said no" (LLMRejected: unknown model, bad key, bad request) from "the
gateway answered nonsense" (LLMBadResponse).

    client = get_llm_client()           # None when LITELLM_BASE_URL is empty
    result = client.chat([{"role": "user", "content": "hi"}], model="fast", purpose="answer")
    data, result = client.chat_json(messages, model="fast", schema={...}, purpose="review")

Every generation is bounded: `max_tokens` is always sent, the caller's or the
purpose's limit from settings (`generation_limit`). An answer cut at that limit
(`finish_reason: length`) comes back with `truncated=True` from `chat`, and
raises LLMTruncated from `chat_json` (cut JSON is not an answer). The client made
by `get_llm_client` records every call as a ModelCall (hyperguild.lib.model_calls),
success or failure; `result.call_id` / `error.call_id` name the record.

Ours rather than the openai SDK: bench/plumbing_cpu.py and the product's tests run on bench/plumbing/llm_sdks.py
(bench/RESULTS.md, issue 49; docs/architecture.md).
"""

from __future__ import annotations

import contextlib
import time
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, NotRequired, TypedDict

import httpx
from django.conf import settings

from hyperguild.lib.http import ServiceClient, ServiceRejected, ServiceUnavailable, configured_client, safe_url
from hyperguild.lib.model_calls import mark_model_call, record_model_call, reserve_budget
from hyperguild.lib.modeljson import ModelJSONError, parse_model_json
from hyperguild.lib.text import excerpt
from hyperguild.lib.typed import JsonSchema

# How much of a non-JSON or malformed answer an LLMBadResponse keeps.
ERROR_BODY_CHARS = 500


class LLMError(Exception):
    """Base class: any failure to get a usable answer from the gateway."""

    call_id: int | None = None  # the ModelCall that recorded the failure (set by a recording client)


class LLMUnavailable(LLMError):
    """The gateway could not be reached, timed out, or kept failing (5xx/429) after retries."""

    def __init__(self, message: str, *, status: int | None = None, attempts: int = 1):
        super().__init__(message)
        self.status = status
        self.attempts = attempts


class LLMRejected(LLMError):
    """The gateway refused the request (4xx): unknown model, bad key, invalid request."""

    def __init__(self, message: str, *, status: int, gateway_message: str = ""):
        super().__init__(message)
        self.status = status
        self.gateway_message = gateway_message


class LLMBadResponse(LLMError):
    """The gateway answered, but not with something usable (not JSON, wrong shape, schema mismatch)."""

    result: ChatResult | None = None  # the answer that could not be used, when there was one

    def __init__(self, message: str, *, text: str | None = None):
        super().__init__(message)
        self.text = text


class LLMTruncated(LLMBadResponse):
    """The model was cut at the token limit (`finish_reason: length`): its JSON answer is incomplete."""


# The most tokens a model may write, per purpose (fixed, issue 49: sized to what each answer needs; brain_answer's is
# the setting LLM_MAX_TOKENS_ANSWER). "summary" is a tree-split summary of a long file; any other purpose: DEFAULT.
MAX_TOKENS = {
    "retrospective": 1500,
    "review": 2500,
    "debug": 2500,
    "trainer": 1500,
    "spec": 2500,
    "summary": 300,
}
MAX_TOKENS_DEFAULT = 1000


def generation_limit(purpose: str) -> int:
    """The most tokens a model may write for `purpose` (MAX_TOKENS; "answer": LLM_MAX_TOKENS_ANSWER)."""
    if purpose == "answer":
        return settings.LLM_MAX_TOKENS_ANSWER
    return MAX_TOKENS.get(purpose, MAX_TOKENS_DEFAULT)


@dataclass
class ChatResult:
    text: str
    model: str
    usage: dict[str, int] | None
    latency_ms: int
    raw: dict[str, Any] = field(repr=False)
    finish_reason: str = ""
    call_id: int | None = None  # the ModelCall that recorded it (None when the client does not record)
    body: str = field(default="", repr=False)  # the server's body as received

    @property
    def truncated(self) -> bool:
        """Cut at the token limit (OpenAI `finish_reason: length`)."""
        return self.finish_reason == "length"


def _usage(raw: dict[str, Any]) -> dict[str, int] | None:
    usage = raw.get("usage")
    if not isinstance(usage, dict):
        return None
    out: dict[str, int] = {}
    for key in ("prompt_tokens", "completion_tokens", "total_tokens"):
        value = usage.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            out[key] = value
    if not out:
        return None
    if "total_tokens" not in out and {"prompt_tokens", "completion_tokens"} <= out.keys():
        out["total_tokens"] = out["prompt_tokens"] + out["completion_tokens"]
    return out


class LLMClient:
    def __init__(
        self,
        base_url: str,
        api_key: str = "",
        *,
        timeout: float = 60.0,
        retries: int = 2,
        backoff: float | None = None,
        transport: httpx.BaseTransport | None = None,
        record: bool = False,
    ):
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.timeout = timeout
        self.retries = retries
        # Record every call as a ModelCall (needs the database; get_llm_client's clients do).
        self.record = record
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        self._http = ServiceClient(
            "the LLM gateway",
            self.base_url,
            headers=headers,
            timeout=timeout,
            retries=retries,
            backoff=backoff,
            transport=transport,
        )

    @property
    def completions_url(self) -> str:
        # LiteLLM and OpenAI both answer at /v1/chat/completions; accept a base with or without /v1.
        if self.base_url.endswith("/v1"):
            return f"{self.base_url}/chat/completions"
        return f"{self.base_url}/v1/chat/completions"

    def close(self) -> None:
        self._http.close()

    def chat(
        self,
        messages: list[dict[str, Any]],
        *,
        model: str,
        response_format: dict[str, Any] | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        purpose: str = "",
    ) -> ChatResult:
        """One chat completion, bounded by `max_tokens` (default: the purpose's limit), recorded when `record`."""
        limit = max_tokens if max_tokens is not None else generation_limit(purpose)
        payload: dict[str, Any] = {"model": model, "messages": messages}
        if response_format is not None:
            payload["response_format"] = response_format
        if temperature is not None:
            payload["temperature"] = temperature
        payload["max_tokens"] = limit

        # A budget (ledger.budgets) holds this call's estimate until its record is written.
        with self._budget(model, messages, limit, purpose):
            return self._chat(payload, model, limit, purpose)

    def _budget(
        self, model: str, messages: list[dict[str, Any]], limit: int, purpose: str
    ) -> AbstractContextManager[object]:
        if not self.record:
            return contextlib.nullcontext()
        chars = sum(len(str(message.get("content") or "")) for message in messages)
        return reserve_budget(model=model, prompt_chars=chars, max_tokens=limit, what=f"{purpose or 'chat'} on {model}")

    def _chat(self, payload: dict[str, Any], model: str, limit: int, purpose: str) -> ChatResult:
        def record(outcome: str, **values: Any) -> int | None:
            if not self.record:
                return None
            return record_model_call(
                provider="openai",
                endpoint=safe_url(self.completions_url),
                model=model,
                purpose=purpose,
                request=payload,
                max_tokens=limit,
                outcome=outcome,
                latency_ms=_ms_since(started),
                **values,
            ).pk

        started = time.monotonic()
        try:
            response = self._http.post(self.completions_url, json=payload)
        except ServiceRejected as exc:
            error: LLMError = LLMRejected(
                f"the gateway rejected model {model!r} with HTTP {exc.status}: {exc.detail}",
                status=exc.status or 400,
                gateway_message=exc.detail,
            )
            error.call_id = record("model_error", error=str(error), status_code=exc.status)
            raise error from None
        except ServiceUnavailable as exc:
            error = LLMUnavailable(f"{exc} (model {model!r})", status=exc.status, attempts=exc.attempts)
            error.call_id = record("outage", error=str(error), status_code=exc.status)
            raise error from None
        try:
            result = self._result(response, model, started)
        except LLMBadResponse as exc:
            exc.call_id = record("bad_output", response=response.text, error=str(exc), status_code=response.status_code)
            raise
        usage = result.usage or {}
        result.call_id = record(
            "truncated" if result.truncated else "ok",
            response=result.body,
            status_code=response.status_code,
            finish_reason=result.finish_reason,
            input_tokens=usage.get("prompt_tokens"),
            output_tokens=usage.get("completion_tokens"),
            error=f"cut at the limit of {limit} tokens" if result.truncated else "",
        )
        return result

    def _result(self, response: httpx.Response, model: str, started: float) -> ChatResult:
        latency_ms = int((time.monotonic() - started) * 1000)
        try:
            raw = response.json()
        except ValueError:
            raise LLMBadResponse(
                f"the gateway answered HTTP {response.status_code} with a body that is not JSON",
                text=excerpt(response.text, ERROR_BODY_CHARS),
            ) from None
        try:
            choice = raw["choices"][0]
            message = choice["message"]
            text = message.get("content")
        except (KeyError, IndexError, TypeError, AttributeError):
            raise LLMBadResponse(
                "the gateway's answer has no choices[0].message (not an OpenAI chat-completions body)",
                text=excerpt(response.text, ERROR_BODY_CHARS),
            ) from None
        if not isinstance(text, str):
            raise LLMBadResponse("the model returned no text content", text=excerpt(response.text, ERROR_BODY_CHARS))
        finish_reason = choice.get("finish_reason") if isinstance(choice, dict) else None
        return ChatResult(
            text=text,
            model=str(raw.get("model") or model),
            usage=_usage(raw),
            latency_ms=latency_ms,
            raw=raw,
            finish_reason=finish_reason if isinstance(finish_reason, str) else "",
            body=response.text,
        )

    def chat_json(
        self,
        messages: list[dict[str, Any]],
        *,
        model: str,
        schema: JsonSchema,
        temperature: float | None = None,
        max_tokens: int | None = None,
        purpose: str = "",
    ) -> tuple[dict[str, Any], ChatResult]:
        """Ask for a JSON object and validate it against `schema`.

        Raises LLMTruncated when the model was cut at the limit, LLMBadResponse
        when the text is not JSON, not an object, or does not match the schema;
        either carries the ChatResult on `.result` and the record on `.call_id`.
        """
        result = self.chat(
            messages,
            model=model,
            response_format={"type": "json_object"},
            temperature=temperature,
            max_tokens=max_tokens,
            purpose=purpose,
        )
        if result.truncated:
            error: LLMBadResponse = LLMTruncated(
                f"the model was cut at the token limit ({result.usage or {}}); its JSON is incomplete", text=result.text
            )
        else:
            try:
                return parse_model_json(result.text, schema), result
            except ModelJSONError as exc:
                error = LLMBadResponse(str(exc), text=result.text)
                if self.record:
                    mark_model_call(result.call_id, "bad_output", str(exc))
        error.result = result
        error.call_id = result.call_id
        raise error from None


def get_llm_client(*, timeout: float | None = None, retries: int | None = None) -> LLMClient | None:
    """The configured gateway client, or None when LITELLM_BASE_URL is empty (feature stays off).

    `timeout` / `retries` tighten the configured ones (never loosen them): a call a person waits on
    (brain_answer) asks for less. The client records every call as a ModelCall.
    """
    if not settings.LITELLM_BASE_URL:
        return None
    timeout_cap = min(settings.LITELLM_TIMEOUT, settings.HYPERGUILD_HTTP_TIMEOUT)
    retries_cap = min(settings.LITELLM_RETRIES, settings.HYPERGUILD_HTTP_RETRIES)
    url, key, timeout, retries = (
        settings.LITELLM_BASE_URL,
        settings.LITELLM_API_KEY,
        min(timeout, timeout_cap) if timeout is not None else timeout_cap,
        min(retries, retries_cap) if retries is not None else retries_cap,
    )
    return configured_client(
        ("llm", url, key, timeout, retries), lambda: LLMClient(url, key, timeout=timeout, retries=retries, record=True)
    )


def _ms_since(started: float) -> int:
    return int((time.monotonic() - started) * 1000)


# How long a gateway probe's answer is reused (/health may be polled every few seconds).
GATEWAY_PROBE_TTL_SECONDS = 30.0
GATEWAY_PROBE_TIMEOUT_SECONDS = 2.0
_probe_cache: dict[str, tuple[float, bool, str]] = {}


class GatewayModels(TypedDict):
    answer: str | None
    fast: str
    thinking: str


class GatewayStatus(TypedDict):
    """The model gateway as /health shows it."""

    configured: bool
    url: str | None
    models: GatewayModels
    reachable: bool | None  # None: no gateway configured
    note: NotRequired[str]  # why there is none
    error: NotRequired[str]  # why it did not answer
    single_model: NotRequired[bool]  # the fast and the thinking model are one


def gateway_status(*, fresh: bool = False) -> GatewayStatus:
    """The model gateway as /health and the `serve` banner name it: URL, models, reachable or not.

    Reachable means it answered HTTP at all (any status: a 401 or 404 is a gateway that is up); the
    probe is a GET of /v1/models with a short timeout, reused for GATEWAY_PROBE_TTL_SECONDS.
    """
    fast, thinking = settings.HYPERGUILD_FAST_MODEL, settings.HYPERGUILD_THINKING_MODEL
    models: GatewayModels = {"answer": settings.BRAIN_ANSWER_MODEL or None, "fast": fast, "thinking": thinking}
    if not settings.LITELLM_BASE_URL:
        return {
            "configured": False,
            "url": None,
            "models": models,
            "reachable": None,
            "note": "LITELLM_BASE_URL is empty: brain_answer is extractive, the retrospective uses rules, "
            "/mcp/routing refuses its calls",
        }
    base = settings.LITELLM_BASE_URL.rstrip("/")
    url = f"{base}/models" if base.endswith("/v1") else f"{base}/v1/models"
    now = time.monotonic()
    cached = _probe_cache.get(url)
    if cached is None or fresh or now - cached[0] > GATEWAY_PROBE_TTL_SECONDS:
        headers = {"Authorization": f"Bearer {settings.LITELLM_API_KEY}"} if settings.LITELLM_API_KEY else {}
        try:
            status = httpx.get(url, headers=headers, timeout=GATEWAY_PROBE_TIMEOUT_SECONDS).status_code
            cached = (now, True, f"HTTP {status}")
        except httpx.HTTPError as exc:
            cached = (now, False, f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)
        _probe_cache[url] = cached
    report: GatewayStatus = {"configured": True, "url": safe_url(base), "models": models, "reachable": cached[1]}
    if not cached[1]:
        report["error"] = cached[2][:300]
    if fast == thinking:
        report["single_model"] = True
    return report
