"""hyperguild.lib.llm's LLMClient on the official `openai` SDK: the SDK builds the request, retries (its own
policy: 408/409/429/5xx, exponential backoff from 0.5 s, Retry-After), times out and parses the answer into
its ChatCompletion model; we keep what is ours (errors, token limits, budgets, ModelCall records, chat_json).

The gateway hyperguild talks to (LiteLLM, Ollama's /v1, any OpenAI-compatible server) speaks OpenAI chat
completions; the `anthropic` SDK speaks the Anthropic Messages API, which no hyperguild caller uses, so only the
openai SDK can stand in here. `bench/plumbing/swap.py` puts this module in place of hyperguild.lib.llm.
"""

from __future__ import annotations

import time
from typing import Any

import httpx
import openai

from hyperguild.lib import llm as ours
from hyperguild.lib.http import safe_url
from hyperguild.lib.llm import (  # noqa: F401 (re-exported: the same names as hyperguild.lib.llm)
    ERROR_BODY_CHARS,
    ChatResult,
    LLMBadResponse,
    LLMError,
    LLMRejected,
    LLMTruncated,
    LLMUnavailable,
    gateway_status,
    generation_limit,
)
from hyperguild.lib.model_calls import record_model_call
from hyperguild.lib.text import excerpt


class LLMClient(ours.LLMClient):
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
    ) -> None:
        super().__init__(base_url, api_key, timeout=timeout, retries=retries, backoff=backoff, record=record)
        base = self.base_url if self.base_url.endswith("/v1") else f"{self.base_url}/v1"
        self._sdk = openai.OpenAI(
            base_url=base,
            api_key=api_key or "none",
            timeout=timeout,
            max_retries=retries,
        )
        # No key: no Authorization header at all (the SDK wants the omission spelled out on each call).
        self._no_key = {} if api_key else {"Authorization": openai.omit}

    def close(self) -> None:
        self._sdk.close()

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
                latency_ms=int((time.monotonic() - started) * 1000),
                **values,
            ).pk

        started = time.monotonic()
        attempts = self._sdk.max_retries + 1
        try:
            raw = self._sdk.chat.completions.with_raw_response.create(**payload, extra_headers=self._no_key)
        except openai.APIStatusError as exc:
            detail = excerpt(exc.message)
            if exc.status_code in (408, 409, 429) or exc.status_code >= 500:
                error: LLMError = LLMUnavailable(
                    f"the LLM gateway at {safe_url(self.completions_url)} is unavailable after {attempts} attempts: "
                    f"HTTP {exc.status_code}: {detail} (model {model!r})",
                    status=exc.status_code,
                    attempts=attempts,
                )
                error.call_id = record("outage", error=str(error), status_code=exc.status_code)
            else:
                error = LLMRejected(
                    f"the gateway rejected model {model!r} with HTTP {exc.status_code}: {detail}",
                    status=exc.status_code,
                    gateway_message=detail,
                )
                error.call_id = record("model_error", error=str(error), status_code=exc.status_code)
            raise error from None
        except openai.APIConnectionError as exc:
            problem = (
                f"timed out after {self.timeout:g} s"
                if isinstance(exc, openai.APITimeoutError)
                else "unreachable, could not connect"
            )
            error = LLMUnavailable(
                f"the LLM gateway at {safe_url(self.completions_url)} is unavailable after "
                f"{attempts} attempts: {problem} (model {model!r})",
                attempts=attempts,
            )
            error.call_id = record("outage", error=str(error))
            raise error from None
        body = raw.http_response.text
        try:
            completion = raw.parse()
            choice = completion.choices[0]
            text = choice.message.content
        except (ValueError, TypeError, AttributeError, IndexError, KeyError) as exc:
            problem = "not JSON" if isinstance(exc, ValueError) else "no choices[0].message"
            error = LLMBadResponse(
                f"the gateway answered HTTP {raw.status_code} with a body that is {problem}"
                if problem == "not JSON"
                else f"the gateway's answer has {problem} (not an OpenAI chat-completions body)",
                text=excerpt(body, ERROR_BODY_CHARS),
            )
            error.call_id = record("bad_output", response=body, error=str(error), status_code=raw.status_code)
            raise error from None
        if not isinstance(text, str):
            error = LLMBadResponse("the model returned no text content", text=excerpt(body, ERROR_BODY_CHARS))
            error.call_id = record("bad_output", response=body, error=str(error), status_code=raw.status_code)
            raise error
        usage = (
            completion.usage.model_dump(include={"prompt_tokens", "completion_tokens", "total_tokens"})
            if completion.usage
            else None
        )
        result = ChatResult(
            text=text,
            model=completion.model or model,
            usage=usage or None,
            latency_ms=int((time.monotonic() - started) * 1000),
            raw=completion.model_dump(),
            finish_reason=choice.finish_reason or "",
            body=body,
        )
        result.call_id = record(
            "truncated" if result.truncated else "ok",
            response=body,
            status_code=raw.status_code,
            finish_reason=result.finish_reason,
            input_tokens=(usage or {}).get("prompt_tokens"),
            output_tokens=(usage or {}).get("completion_tokens"),
            error=f"cut at the limit of {limit} tokens" if result.truncated else "",
        )
        return result


def get_llm_client(*, timeout: float | None = None, retries: int | None = None) -> LLMClient | None:
    # The product's factory, building this module's client.
    ours_client = ours.get_llm_client(timeout=timeout, retries=retries)
    if ours_client is None:
        return None
    return ours.configured_client(
        ("llm-sdk", ours_client.base_url, ours_client.api_key, ours_client.timeout, ours_client.retries),
        lambda: LLMClient(
            ours_client.base_url,
            ours_client.api_key,
            timeout=ours_client.timeout,
            retries=ours_client.retries,
            record=True,
        ),
    )
