"""An HTTP server on 127.0.0.1 that speaks Ollama /api/embed and OpenAI /v1/embeddings.

Vectors are a deterministic bag of words hashed into `dimensions` buckets, so
texts sharing words are close. `mode` switches failures on: "ok", "error"
(HTTP 500), "slow" (sleeps past the client's timeout), "wrong_dimension",
"down" (connection refused: the server is stopped).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

WORD = re.compile(r"\w+")


def bag_of_words_vector(text: str, dimensions: int) -> list[float]:
    vector = [0.0] * dimensions
    for word in WORD.findall(text.lower()):
        bucket = int(hashlib.md5(word.encode()).hexdigest(), 16) % dimensions
        vector[bucket] += 1.0
    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
    return [x / norm for x in vector] if any(vector) else [1.0 / math.sqrt(dimensions)] * dimensions


class FakeEmbedServer:
    def __init__(self, dimensions: int = 8, slow_seconds: float = 2.0):
        self.dimensions = dimensions
        self.slow_seconds = slow_seconds
        self.mode = "ok"
        self.fail_from_request: int | None = None  # 1-based: this request and later ones get a 500
        self.requests: list[dict] = []  # {"path", "headers", "body"}
        self.texts_embedded = 0
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # keep test output quiet
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = None
                with server.lock:
                    server.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                    mode = server.mode
                    if server.fail_from_request is not None and len(server.requests) >= server.fail_from_request:
                        mode = "error"
                if mode == "slow":
                    time.sleep(server.slow_seconds)
                if mode == "error":
                    return self._send(500, {"error": "model crashed"})
                if self.path not in {"/api/embed", "/v1/embeddings"}:
                    return self._send(404, {"error": f"no route {self.path}"})
                texts = body.get("input") if isinstance(body, dict) else None
                if isinstance(texts, str):
                    texts = [texts]
                if not isinstance(texts, list):
                    return self._send(400, {"error": "input must be a string or a list of strings"})
                dims = server.dimensions + (3 if mode == "wrong_dimension" else 0)
                vectors = [bag_of_words_vector(text, dims) for text in texts]
                with server.lock:
                    server.texts_embedded += len(texts)
                if self.path == "/api/embed":
                    return self._send(200, {"model": body.get("model"), "embeddings": vectors})
                data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]
                data.reverse()  # clients must order by index, not by position
                return self._send(200, {"object": "list", "model": body.get("model"), "data": data})

            def _send(self, status: int, payload: dict) -> None:
                encoded = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(encoded)))
                    self.end_headers()
                    self.wfile.write(encoded)
                except (BrokenPipeError, ConnectionResetError):  # the client timed out first
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True, name="fake-embed")
        self.thread.start()

    def reset_counts(self) -> None:
        with self.lock:
            self.requests.clear()
            self.texts_embedded = 0

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
