"""A fake LiteLLM gateway on 127.0.0.1 speaking the Anthropic messages format.

What Claude Code talks to when ANTHROPIC_BASE_URL points at LiteLLM:
`POST /v1/messages` with `Authorization: Bearer <ANTHROPIC_AUTH_TOKEN>` (or
`x-api-key`) and `anthropic-version`. It records every request, refuses a
wrong key (401, Anthropic's error shape) and a model it does not serve (400,
as LiteLLM does), and answers with `answer(request_json) -> str`.

    with FakeAnthropic(key="sk-gw", models={"ollama/qwen3-coder-30b-tuned"}) as gateway:
        gateway.answer = lambda request: '{"report": {...}}'
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tests.fakes.http import FakeHTTPServer, Request, Response


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]  # names lowercased
    body: dict


def anthropic_error(status: int, kind: str, message: str) -> Response:
    return Response(status, {"type": "error", "error": {"type": kind, "message": message}})


class FakeAnthropic(FakeHTTPServer):
    name = "fake-anthropic"

    def __init__(self, *, key: str | None = None, models: set[str] | None = None):
        super().__init__()
        self.key = key
        self.models = models
        self.answer: Callable[[dict], str] = lambda request: "Done."

    def handle(self, request: Request) -> Response:
        body = request.json() if request.raw else {}
        if body is None:
            return anthropic_error(400, "invalid_request_error", "body is not JSON")
        headers = {name.lower(): value for name, value in request.headers.items()}
        with self.lock:
            self.requests.append(Recorded(request.path, headers, body))
            count = len(self.requests)
        if request.path != "/v1/messages":
            return anthropic_error(404, "not_found_error", f"no route {request.path}")
        if not headers.get("anthropic-version"):
            return anthropic_error(400, "invalid_request_error", "anthropic-version header is required")
        presented = headers.get("x-api-key") or (headers.get("authorization") or "").removeprefix("Bearer ")
        if self.key is not None and presented != self.key:
            return anthropic_error(401, "authentication_error", "invalid x-api-key")
        model = body.get("model")
        if self.models is not None and model not in self.models:
            return anthropic_error(
                400,
                "invalid_request_error",
                f"Invalid model name passed in model={model}. Call `/v1/models` to view available models",
            )
        if not isinstance(body.get("messages"), list) or not body.get("max_tokens"):
            return anthropic_error(400, "invalid_request_error", "messages and max_tokens are required")
        return Response(
            200,
            {
                "id": f"msg_fake_{count}",
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [{"type": "text", "text": self.answer(body)}],
                "stop_reason": "end_turn",
                "stop_sequence": None,
                "usage": {"input_tokens": 100, "output_tokens": 20},
            },
        )

    def messages(self) -> list[Recorded]:
        return [request for request in self.requests if request.path == "/v1/messages"]
