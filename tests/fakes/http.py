"""The one base of every fake HTTP server the tests start on 127.0.0.1.

A subclass (or a `handle` callable) turns each `Request` into a `Response`; the base
records the request, serves it from a thread of its own, writes the JSON answer with
its Content-Length and shrugs off a client that went away first.

    class Teapot(FakeHTTPServer):
        def handle(self, request: Request) -> Response:
            return Response(418, {"error": "I'm a teapot"})

    with Teapot() as server:
        httpx.post(server.url + "/brew", json={})
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    raw: bytes
    client_port: int  # the same port on two requests: the client reused its connection
    at: float  # time.monotonic() when it arrived

    def json(self) -> Any:
        """The body as JSON, or None when it is not JSON."""
        try:
            return json.loads(self.raw or b"null")
        except ValueError:
            return None


@dataclass
class Response:
    status: int = 200
    body: Any = None  # sent as JSON unless `raw` is set
    headers: dict[str, str] = field(default_factory=dict)
    raw: bytes | None = None


class FakeHTTPServer:
    """A threaded HTTP server on 127.0.0.1, port chosen by the system; `url` is its base URL."""

    name = "fake-http"
    # HTTP/1.0 closes every connection after its answer, so a stopped server is really gone for its
    # clients; a fake that must show connection reuse sets "HTTP/1.1".
    protocol_version = "HTTP/1.0"

    def __init__(self, handle: Callable[[Request], Response] | None = None) -> None:
        if handle is not None:
            self.handle = handle  # type: ignore[method-assign]
        self.requests: list = []  # what `record` keeps, in arrival order
        self.lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = fake.protocol_version

            def log_message(self, *args) -> None:  # keep test output quiet
                pass

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                request = Request(
                    self.command,
                    self.path,
                    dict(self.headers),
                    self.rfile.read(length),
                    self.client_address[1],
                    time.monotonic(),
                )
                response = fake.handle(request)
                payload = response.raw if response.raw is not None else json.dumps(response.body).encode()
                try:
                    self.send_response(response.status)
                    for name, value in response.headers.items():
                        self.send_header(name, value)
                    if not any(name.lower() == "content-type" for name in response.headers):
                        self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):  # the client timed out first
                    pass

            do_GET = do_POST = _serve  # noqa: N815 (http.server's names)

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            request_queue_size = 128  # the default backlog of 5 resets connections under concurrent calls

        self.httpd = Server(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True, name=self.name)
        self.started = False

    def handle(self, request: Request) -> Response:
        raise NotImplementedError

    def start(self):
        if not self.started:
            self.thread.start()
            self.started = True
        return self

    def stop(self) -> None:
        if self.started:
            self.httpd.shutdown()
            self.thread.join(timeout=5)
            self.started = False
        self.httpd.server_close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
