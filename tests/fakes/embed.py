"""A fake embedding service on 127.0.0.1 that speaks Ollama /api/embed and OpenAI /v1/embeddings.

Vectors are a deterministic bag of words hashed into `dimensions` buckets, so
texts sharing words are close. `mode` switches failures on: "ok", "error"
(HTTP 500), "slow" (sleeps past the client's timeout), "wrong_dimension",
"down" (connection refused: the server is stopped). It starts when made.
"""

from __future__ import annotations

import hashlib
import math
import re
import time

from tests.fakes.http import FakeHTTPServer, Request, Response

WORD = re.compile(r"\w+")


def bag_of_words_vector(text: str, dimensions: int) -> list[float]:
    vector = [0.0] * dimensions
    for word in WORD.findall(text.lower()):
        bucket = int(hashlib.md5(word.encode()).hexdigest(), 16) % dimensions
        vector[bucket] += 1.0
    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
    return [x / norm for x in vector] if any(vector) else [1.0 / math.sqrt(dimensions)] * dimensions


class FakeEmbedServer(FakeHTTPServer):
    name = "fake-embed"

    def __init__(self, dimensions: int = 8, slow_seconds: float = 2.0):
        super().__init__()
        self.dimensions = dimensions
        self.slow_seconds = slow_seconds
        self.mode = "ok"
        self.fail_from_request: int | None = None  # 1-based: this request and later ones get a 500
        self.texts_embedded = 0
        self.start()

    def handle(self, request: Request) -> Response:
        body = request.json()
        with self.lock:
            self.requests.append({"path": request.path, "headers": request.headers, "body": body})
            mode = self.mode
            if self.fail_from_request is not None and len(self.requests) >= self.fail_from_request:
                mode = "error"
        if mode == "slow":
            time.sleep(self.slow_seconds)
        if mode == "error":
            return Response(500, {"error": "model crashed"})
        if request.path not in {"/api/embed", "/v1/embeddings"}:
            return Response(404, {"error": f"no route {request.path}"})
        texts = body.get("input") if isinstance(body, dict) else None
        if isinstance(texts, str):
            texts = [texts]
        if not isinstance(texts, list):
            return Response(400, {"error": "input must be a string or a list of strings"})
        dims = self.dimensions + (3 if mode == "wrong_dimension" else 0)
        vectors = [bag_of_words_vector(text, dims) for text in texts]
        with self.lock:
            self.texts_embedded += len(texts)
        if request.path == "/api/embed":
            return Response(200, {"model": body.get("model"), "embeddings": vectors})
        data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]
        data.reverse()  # clients must order by index, not by position
        return Response(200, {"object": "list", "model": body.get("model"), "data": data})

    def reset_counts(self) -> None:
        with self.lock:
            self.requests.clear()
            self.texts_embedded = 0
