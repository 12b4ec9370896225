"""An HTTP/1.1 server on 127.0.0.1 that answers from a script and records who called when.

    with ScriptedServer() as server:
        server.script(Scripted(503), Scripted(429, headers={"Retry-After": "0.3"}))  # then 200s
        ...
        server.requests   # [Seen(path, client_port, at, headers)]

Keep-alive is on (HTTP/1.1 with Content-Length), so `client_port` shows
whether a client reused its connection.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Scripted:
    status: int = 200
    body: object = field(default_factory=lambda: {"ok": True})
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    raw: bytes | None = None  # sent as the body instead of `body` as JSON


@dataclass
class Seen:
    method: str
    path: str
    client_port: int
    at: float
    headers: dict[str, str]


class ScriptedServer:
    def __init__(self, default: Scripted | None = None):
        self.default = default or Scripted()
        self.requests: list[Seen] = []
        self._queue: deque[Scripted] = deque()
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                pass

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                with server._lock:
                    server.requests.append(
                        Seen(self.command, self.path, self.client_address[1], time.monotonic(), dict(self.headers))
                    )
                    reply = server._queue.popleft() if server._queue else server.default
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

            do_GET = do_POST = _answer

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def script(self, *replies: Scripted) -> None:
        with self._lock:
            self._queue.extend(replies)

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> ScriptedServer:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
