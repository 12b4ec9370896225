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

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: dict


class FakeAnthropic:
    def __init__(self, *, key: str | None = None, models: set[str] | None = None):
        self.key = key
        self.models = models
        self.requests: list[Recorded] = []
        self.answer: Callable[[dict], str] = lambda request: "Done."
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # keep test output clean
                pass

            def _send(self, status: int, body: dict) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _error(self, status: int, kind: str, message: str) -> None:
                self._send(status, {"type": "error", "error": {"type": kind, "message": message}})

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    return self._error(400, "invalid_request_error", "body is not JSON")
                fake.requests.append(Recorded(self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                if self.path != "/v1/messages":
                    return self._error(404, "not_found_error", f"no route {self.path}")
                if not self.headers.get("anthropic-version"):
                    return self._error(400, "invalid_request_error", "anthropic-version header is required")
                presented = self.headers.get("x-api-key") or (self.headers.get("authorization") or "").removeprefix("Bearer ")
                if fake.key is not None and presented != fake.key:
                    return self._error(401, "authentication_error", "invalid x-api-key")
                model = body.get("model")
                if fake.models is not None and model not in fake.models:
                    return self._error(400, "invalid_request_error",
                                       f"Invalid model name passed in model={model}. Call `/v1/models` to view available models")
                if not isinstance(body.get("messages"), list) or not body.get("max_tokens"):
                    return self._error(400, "invalid_request_error", "messages and max_tokens are required")
                text = fake.answer(body)
                self._send(200, {
                    "id": f"msg_fake_{len(fake.requests)}", "type": "message", "role": "assistant", "model": model,
                    "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": None,
                    "usage": {"input_tokens": 100, "output_tokens": 20},
                })

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True, name="fake-anthropic")

    def __enter__(self) -> FakeAnthropic:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)

    def messages(self) -> list[Recorded]:
        return [request for request in self.requests if request.path == "/v1/messages"]
