"""A fake Ollama serving Qwen3-Reranker on 127.0.0.1: POST /api/generate.

It judges each prompt with `judge(prompt) -> str` (the text the model would
generate), records every request body, and counts how many requests are
in flight at once (each waits `delay` seconds so overlaps show).

    with FakeReranker(lambda prompt: "yes" if "deploy" in document_of(prompt) else "no") as ollama:
        settings.BRAIN_RERANKER_URL = ollama.url
"""

from __future__ import annotations

import time
from collections.abc import Callable

from tests.fakes.http import FakeHTTPServer, Request, Response


def document_of(prompt: str) -> str:
    """The <Document> part of a reranker prompt."""
    return prompt.split("<Document>: ", 1)[1].split("<|im_end|>", 1)[0]


def query_of(prompt: str) -> str:
    return prompt.split("<Query>: ", 1)[1].split("\n<Document>: ", 1)[0]


class FakeReranker(FakeHTTPServer):
    name = "fake-ollama"
    protocol_version = "HTTP/1.1"

    def __init__(
        self,
        judge: Callable[[str], str],
        *,
        delay: float = 0.0,
        status: int = 200,
        counts: tuple[int, int] | None = None,
    ):
        """`counts`: the prompt_eval_count and eval_count every answer reports (Ollama's usage); None: none."""
        super().__init__()
        self.counts = counts
        self.judge = judge
        self.delay = delay
        self.status = status
        self.in_flight = 0
        self.max_in_flight = 0

    def handle(self, request: Request) -> Response:
        body = request.json()
        with self.lock:
            self.requests.append({"path": request.path, "body": body})
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.delay:
                time.sleep(self.delay)
            if request.path != "/api/generate":
                return Response(404, {"error": "404 page not found"})
            if self.status != 200:
                return Response(self.status, {"error": "model runner has unexpectedly stopped"})
            answer = {
                "model": body.get("model"),
                "created_at": "2026-01-01T00:00:00Z",
                "response": self.judge(body["prompt"]),
                "done": True,
                "done_reason": "stop",
            }
            if self.counts is not None:
                answer["prompt_eval_count"], answer["eval_count"] = self.counts
            return Response(200, answer)
        finally:
            with self.lock:
                self.in_flight -= 1

    def prompts(self) -> list[str]:
        with self.lock:
            return [request["body"]["prompt"] for request in self.requests]
