"""A fake OpenAI-compatible gateway (LiteLLM) on 127.0.0.1: POST /v1/chat/completions.

Behaviour is scripted per model with `on(model, fn)`, where fn(request_json) returns
a Reply; or queued with `queue(reply, ...)`, consumed first, one reply per request,
whatever the model. Every request is recorded.

    with FakeOpenAI() as gateway:
        gateway.on("fast", lambda req: Reply.text('{"ok": true}'))
        gateway.queue(Reply.error(500), Reply.text("hi"))
        client = LLMClient(gateway.url, "key")
"""

from __future__ import annotations

import json
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tests.fakes.http import FakeHTTPServer, Request, Response


@dataclass
class Reply:
    status: int = 200
    body: Any = None
    delay: float = 0.0
    raw: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def text(cls, content: str, *, model: str = "", usage: dict | None = None, delay: float = 0.0) -> Reply:
        body = {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        }
        if usage is not None:
            body["usage"] = usage
        return cls(200, body, delay)

    @classmethod
    def json(cls, data: Any, **kwargs) -> Reply:
        return cls.text(json.dumps(data), **kwargs)

    @classmethod
    def error(cls, status: int, message: str = "boom", *, delay: float = 0.0) -> Reply:
        return cls(status, {"error": {"message": message, "type": "invalid_request_error", "code": status}}, delay)

    @classmethod
    def model_not_found(cls, model: str) -> Reply:
        # What LiteLLM answers for a model missing from its config.
        return cls.error(400, f"Invalid model name passed in model={model}. Call `/v1/models` to view available models")


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: Any
    model: str = ""
    client_port: int = 0  # the same port on two requests: the client reused its connection
    at: float = 0.0  # time.monotonic() when the request arrived


class FakeOpenAI(FakeHTTPServer):
    name = "fake-openai"
    protocol_version = "HTTP/1.1"  # tests check that clients keep their connections

    def __init__(self, default: Callable[[dict], Reply] | None = None) -> None:
        super().__init__()
        self.default = default
        self._handlers: dict[str, Callable[[dict], Reply]] = {}
        self._queue: deque[Reply] = deque()

    def handle(self, request: Request) -> Response:
        body = request.json()
        if body is None:
            body = request.raw.decode(errors="replace")
        model = body.get("model", "") if isinstance(body, dict) else ""
        reply = self._reply_for(Recorded(request.path, request.headers, body, model, request.client_port, request.at))
        if reply.delay:
            time.sleep(reply.delay)
        return Response(reply.status, reply.body, reply.headers, reply.raw)

    def _reply_for(self, recorded: Recorded) -> Reply:
        with self.lock:
            self.requests.append(recorded)
            if self._queue:
                return self._queue.popleft()
            handler = self._handlers.get(recorded.model) or self.default
        if not isinstance(recorded.body, dict) or recorded.path.rstrip("/") != "/v1/chat/completions":
            return Reply.error(404, f"no route {recorded.path}")
        if handler is None:
            return Reply.model_not_found(recorded.model)
        return handler(recorded.body)

    def on(self, model: str, handler: Callable[[dict], Reply]) -> FakeOpenAI:
        with self.lock:
            self._handlers[model] = handler
        return self

    def queue(self, *replies: Reply) -> FakeOpenAI:
        with self.lock:
            self._queue.extend(replies)
        return self

    def models_called(self) -> list[str]:
        with self.lock:
            return [r.model for r in self.requests]
