"""A fake OpenAI-compatible gateway on 127.0.0.1 for tests.

It speaks the chat-completions wire format (POST /v1/chat/completions) and
records every request. Behaviour is scripted per model with `on(model, fn)`,
where fn(request_json) returns a Reply; or queued with `queue(reply, ...)`,
which is consumed first, one reply per request, whatever the model.

    with FakeOpenAI() as gateway:
        gateway.on("fast", lambda req: Reply.text('{"ok": true}'))
        gateway.queue(Reply.error(500), Reply.text("hi"))
        client = LLMClient(gateway.url, "key")
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


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


@dataclass
class FakeOpenAI:
    default: Callable[[dict], Reply] | None = None
    requests: list[Recorded] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._handlers: dict[str, Callable[[dict], Reply]] = {}
        self._queue: deque[Reply] = deque()
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:  # keep test output quiet
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = raw.decode(errors="replace")
                model = body.get("model", "") if isinstance(body, dict) else ""
                recorded = Recorded(self.path, dict(self.headers), body, model, self.client_address[1], time.monotonic())
                reply = fake._reply_for(recorded)
                if reply.delay:
                    time.sleep(reply.delay)
                payload = reply.raw if reply.raw is not None else json.dumps(reply.body).encode()
                try:
                    self.send_response(reply.status)
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        class Server(ThreadingHTTPServer):
            request_queue_size = 128  # the default backlog of 5 resets connections under concurrent calls

        self._server = Server(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True, name="fake-openai")

    def _reply_for(self, recorded: Recorded) -> Reply:
        with self._lock:
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
        with self._lock:
            self._handlers[model] = handler
        return self

    def queue(self, *replies: Reply) -> FakeOpenAI:
        with self._lock:
            self._queue.extend(replies)
        return self

    def models_called(self) -> list[str]:
        with self._lock:
            return [r.model for r in self.requests]

    def start(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
