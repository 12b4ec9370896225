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

import time
from dataclasses import dataclass, field
from typing import Any

import httpx
from django.conf import settings

from hyperguild.lib.http import ServiceClient, ServiceRejected, ServiceUnavailable, configured_client
from hyperguild.lib.modeljson import ModelJSONError, parse_model_json
from hyperguild.lib.text import excerpt

# How much of a non-JSON or malformed answer an LLMBadResponse keeps.
ERROR_BODY_CHARS = 500


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
    ):
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.timeout = timeout
        self.retries = retries
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
    ) -> ChatResult:
        payload: dict[str, Any] = {"model": model, "messages": messages}
        if response_format is not None:
            payload["response_format"] = response_format
        if temperature is not None:
            payload["temperature"] = temperature
        if max_tokens is not None:
            payload["max_tokens"] = max_tokens

        started = time.monotonic()
        try:
            response = self._http.post(self.completions_url, json=payload)
        except ServiceRejected as exc:
            raise LLMRejected(
                f"the gateway rejected model {model!r} with HTTP {exc.status}: {exc.detail}",
                status=exc.status or 400,
                gateway_message=exc.detail,
            ) from None
        except ServiceUnavailable as exc:
            raise LLMUnavailable(f"{exc} (model {model!r})", status=exc.status, attempts=exc.attempts) from None
        return self._result(response, model, started)

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
            message = raw["choices"][0]["message"]
            text = message.get("content")
        except (KeyError, IndexError, TypeError, AttributeError):
            raise LLMBadResponse(
                "the gateway's answer has no choices[0].message (not an OpenAI chat-completions body)",
                text=excerpt(response.text, ERROR_BODY_CHARS),
            ) from None
        if not isinstance(text, str):
            raise LLMBadResponse("the model returned no text content", text=excerpt(response.text, ERROR_BODY_CHARS))
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
            data = parse_model_json(result.text, schema)
        except ModelJSONError as exc:
            error = LLMBadResponse(str(exc), text=result.text)
            error.result = result  # type: ignore[attr-defined]
            raise error from None
        return data, result


def get_llm_client() -> LLMClient | None:
    """The configured gateway client, or None when LITELLM_BASE_URL is empty (feature stays off)."""
    if not settings.LITELLM_BASE_URL:
        return None
    url, key, timeout, retries = (
        settings.LITELLM_BASE_URL,
        settings.LITELLM_API_KEY,
        settings.HYPERGUILD_HTTP_TIMEOUT,
        settings.HYPERGUILD_HTTP_RETRIES,
    )
    return configured_client(("llm", url, key, timeout, retries), lambda: LLMClient(url, key, timeout=timeout, retries=retries))
