"""OpenAI-compatible chat-completions client (LiteLLM and friends).

One small client per protocol, with timeouts, bounded retries and typed
errors, so callers can tell "the gateway is down" (LLMUnavailable) from "the
gateway said no" (LLMRejected: unknown model, bad key, bad request) from "the
gateway answered nonsense" (LLMBadResponse).

    client = get_llm_client()           # None when LITELLM_BASE_URL is empty
    result = client.chat([{"role": "user", "content": "hi"}], model="fast")
    data, result = client.chat_json(messages, model="fast", schema={...})
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import httpx
import jsonschema
from django.conf import settings

# Seconds to wait before retry n (1-based); the last value repeats.
RETRY_BACKOFF_SECONDS = (0.2, 0.5, 1.0)
# Statuses worth retrying: rate limits and server-side failures.
RETRYABLE_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
# How much of a gateway's error body goes into an exception message.
ERROR_BODY_CHARS = 500

_FENCE = re.compile(r"^\s*```(?:json|JSON)?\s*\n?(.*?)\n?\s*```\s*$", re.DOTALL)


class LLMError(Exception):
    """Base class: any failure to get a usable answer from the gateway."""


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

    def __init__(self, message: str, *, text: str | None = None):
        super().__init__(message)
        self.text = text


@dataclass
class ChatResult:
    text: str
    model: str
    usage: dict[str, int] | None
    latency_ms: int
    raw: dict[str, Any] = field(repr=False)


def _gateway_message(response: httpx.Response) -> str:
    """The human message out of an OpenAI-style error body, or the body itself."""
    try:
        body = response.json()
    except ValueError:
        return response.text[:ERROR_BODY_CHARS].strip()
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict):
            message = error.get("message") or error.get("detail")
            if message:
                return str(message)[:ERROR_BODY_CHARS]
        elif isinstance(error, str):
            return error[:ERROR_BODY_CHARS]
        if body.get("detail"):
            return str(body["detail"])[:ERROR_BODY_CHARS]
    return response.text[:ERROR_BODY_CHARS].strip()


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


def parse_json_answer(text: str) -> Any:
    """Parse a model's JSON answer, tolerating a ```json fence around it."""
    stripped = text.strip()
    match = _FENCE.match(stripped)
    if match:
        stripped = match.group(1).strip()
    try:
        return json.loads(stripped)
    except ValueError as exc:
        # Some models add a sentence before or after the object: take the outermost {...}.
        start, end = stripped.find("{"), stripped.rfind("}")
        if start != -1 and end > start:
            try:
                return json.loads(stripped[start : end + 1])
            except ValueError:
                pass
        raise LLMBadResponse(f"the answer is not JSON ({exc.msg} at position {exc.pos})", text=text) from None


class LLMClient:
    def __init__(
        self,
        base_url: str,
        api_key: str = "",
        *,
        timeout: float = 60.0,
        retries: int = 2,
        backoff: tuple[float, ...] = RETRY_BACKOFF_SECONDS,
        transport: httpx.BaseTransport | None = None,
    ):
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        # One pooled client, shared across threads (httpx.Client is thread-safe).
        self._http = httpx.Client(timeout=timeout, headers=headers, transport=transport)

    @property
    def completions_url(self) -> str:
        # LiteLLM and OpenAI both answer at /v1/chat/completions; accept a base with or without /v1.
        if self.base_url.endswith("/v1"):
            return f"{self.base_url}/chat/completions"
        return f"{self.base_url}/v1/chat/completions"

    def close(self) -> None:
        self._http.close()

    def _sleep_before_retry(self, attempt: int) -> None:
        if self.backoff:
            time.sleep(self.backoff[min(attempt - 1, len(self.backoff) - 1)])

    def chat(
        self,
        messages: list[dict[str, Any]],
        *,
        model: str,
        response_format: dict[str, Any] | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> ChatResult:
        payload: dict[str, Any] = {"model": model, "messages": messages}
        if response_format is not None:
            payload["response_format"] = response_format
        if temperature is not None:
            payload["temperature"] = temperature
        if max_tokens is not None:
            payload["max_tokens"] = max_tokens

        started = time.monotonic()
        attempts = 0
        last_problem = ""
        last_status: int | None = None
        while True:
            attempts += 1
            try:
                response = self._http.post(self.completions_url, json=payload)
            except httpx.TimeoutException:
                last_problem, last_status = f"timed out after {self.timeout:g}s", None
            except httpx.TransportError as exc:
                last_problem, last_status = f"could not connect ({exc.__class__.__name__}: {exc})", None
            else:
                if response.status_code < 400:
                    return self._result(response, model, started)
                gateway_message = _gateway_message(response)
                if response.status_code not in RETRYABLE_STATUSES and response.status_code < 500:
                    raise LLMRejected(
                        f"the gateway rejected model {model!r} with HTTP {response.status_code}: {gateway_message}",
                        status=response.status_code,
                        gateway_message=gateway_message,
                    )
                last_problem, last_status = f"HTTP {response.status_code}: {gateway_message}", response.status_code
            if attempts > self.retries:
                raise LLMUnavailable(
                    f"the gateway at {self.base_url} failed for model {model!r} after {attempts} "
                    f"attempt{'s' if attempts != 1 else ''}: {last_problem}",
                    status=last_status,
                    attempts=attempts,
                )
            self._sleep_before_retry(attempts)

    def _result(self, response: httpx.Response, model: str, started: float) -> ChatResult:
        latency_ms = int((time.monotonic() - started) * 1000)
        try:
            raw = response.json()
        except ValueError:
            raise LLMBadResponse(
                f"the gateway answered HTTP {response.status_code} with a body that is not JSON",
                text=response.text[:ERROR_BODY_CHARS],
            ) from None
        try:
            message = raw["choices"][0]["message"]
            text = message.get("content")
        except (KeyError, IndexError, TypeError, AttributeError):
            raise LLMBadResponse(
                "the gateway's answer has no choices[0].message (not an OpenAI chat-completions body)",
                text=response.text[:ERROR_BODY_CHARS],
            ) from None
        if not isinstance(text, str):
            raise LLMBadResponse("the model returned no text content", text=response.text[:ERROR_BODY_CHARS])
        return ChatResult(
            text=text,
            model=str(raw.get("model") or model),
            usage=_usage(raw),
            latency_ms=latency_ms,
            raw=raw,
        )

    def chat_json(
        self,
        messages: list[dict[str, Any]],
        *,
        model: str,
        schema: dict[str, Any],
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> tuple[dict[str, Any], ChatResult]:
        """Ask for a JSON object and validate it against `schema`.

        Raises LLMBadResponse (with the ChatResult on `.result`) when the text
        is not JSON, not an object, or does not match the schema.
        """
        result = self.chat(
            messages,
            model=model,
            response_format={"type": "json_object"},
            temperature=temperature,
            max_tokens=max_tokens,
        )
        try:
            data = parse_json_answer(result.text)
            if not isinstance(data, dict):
                raise LLMBadResponse(f"the answer is JSON but a {type(data).__name__}, not an object", text=result.text)
            validate_against(data, schema)
        except LLMBadResponse as exc:
            exc.result = result  # type: ignore[attr-defined]
            raise
        return data, result


def validate_against(data: Any, schema: dict[str, Any]) -> None:
    """Raise LLMBadResponse naming the first schema violation (with its path)."""
    validator = jsonschema.Draft202012Validator(schema)
    error = jsonschema.exceptions.best_match(validator.iter_errors(data))
    if error is not None:
        where = "/".join(str(part) for part in error.absolute_path) or "(top level)"
        raise LLMBadResponse(f"the answer does not match the schema at {where}: {error.message}")


_clients: dict[tuple[str, str, float, int], LLMClient] = {}
_clients_lock = threading.Lock()


def get_llm_client() -> LLMClient | None:
    """The configured gateway client, or None when LITELLM_BASE_URL is empty (feature stays off).

    One pooled client per configuration, so concurrent calls share connections;
    a changed setting (tests use override_settings) gets a fresh client.
    """
    if not settings.LITELLM_BASE_URL:
        return None
    key = (
        settings.LITELLM_BASE_URL,
        settings.LITELLM_API_KEY,
        settings.HYPERGUILD_HTTP_TIMEOUT,
        settings.HYPERGUILD_HTTP_RETRIES,
    )
    with _clients_lock:
        client = _clients.get(key)
        if client is None:
            client = _clients[key] = LLMClient(key[0], key[1], timeout=key[2], retries=key[3])
        return client
