"""A fake Ollama serving Qwen3-Reranker on 127.0.0.1: POST /api/generate.

It judges each prompt with `judge(prompt) -> str` (the text the model would
generate), records every request body, and counts how many requests are
in flight at once (each waits `delay` seconds so overlaps show).

    with FakeReranker(lambda prompt: "yes" if "deploy" in document_of(prompt) else "no") as ollama:
        settings.BRAIN_RERANKER_URL = ollama.url
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def document_of(prompt: str) -> str:
    """The <Document> part of a reranker prompt."""
    return prompt.split("<Document>: ", 1)[1].split("<|im_end|>", 1)[0]


def query_of(prompt: str) -> str:
    return prompt.split("<Query>: ", 1)[1].split("\n<Document>: ", 1)[0]


class FakeReranker:
    def __init__(self, judge: Callable[[str], str], *, delay: float = 0.0, status: int = 200):
        self.judge = judge
        self.delay = delay
        self.status = status
        self.requests: list[dict] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length))
                with fake._lock:
                    fake.requests.append({"path": self.path, "body": body})
                    fake.in_flight += 1
                    fake.max_in_flight = max(fake.max_in_flight, fake.in_flight)
                try:
                    if fake.delay:
                        time.sleep(fake.delay)
                    if self.path != "/api/generate":
                        status, reply = 404, {"error": "404 page not found"}
                    elif fake.status != 200:
                        status, reply = fake.status, {"error": "model runner has unexpectedly stopped"}
                    else:
                        status = 200
                        reply = {
                            "model": body.get("model"),
                            "created_at": "2026-01-01T00:00:00Z",
                            "response": fake.judge(body["prompt"]),
                            "done": True,
                            "done_reason": "stop",
                        }
                finally:
                    with fake._lock:
                        fake.in_flight -= 1
                payload = json.dumps(reply).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True, name="fake-ollama")

    def prompts(self) -> list[str]:
        with self._lock:
            return [request["body"]["prompt"] for request in self.requests]

    def __enter__(self) -> FakeReranker:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()
