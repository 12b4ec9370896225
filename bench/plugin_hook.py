"""How long one run of the plugin's hook script takes, against a stub service that answers `{}` at once.

    .venv/bin/python bench/plugin_hook.py [--runs 100] [--against OTHER_SCRIPT]

Prints the median and p95 wall time of `sh hyperguild-hook Stop` (the hook's input on stdin, as Claude
Code runs it) with the service up, and with it down (connection refused: the event goes to the spool).
`--against` times another copy of the script the same way, e.g. the one on main
(`git show main:claude-plugin/hyperguild/hooks/hyperguild-hook > /tmp/old-hook`). Only the script's own
cost is measured: the stub does no work.
"""

from __future__ import annotations

import argparse
import http.server
import json
import os
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "claude-plugin" / "hyperguild" / "hooks" / "hyperguild-hook"
PAYLOAD = json.dumps({"session_id": "bench-1", "cwd": "/tmp/x", "hook_event_name": "Stop", "transcript_path": "/tmp/t.jsonl"})


class Answer(http.server.BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args) -> None:
        pass


def timed_runs(script: Path, url: str, runs: int, spool: str) -> list[float]:
    env = {"PATH": os.environ["PATH"], "HOME": spool, "HYPERGUILD_URL": url, "HYPERGUILD_SPOOL_DIR": spool}
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        subprocess.run(["sh", str(script), "Stop"], input=PAYLOAD, text=True, env=env, capture_output=True, check=True)
        times.append((time.perf_counter() - began) * 1000)
    return times


def line(label: str, times: list[float]) -> str:
    return f"{label:45s} median {statistics.median(times):6.1f} ms   p95 {sorted(times)[int(len(times) * 0.95) - 1]:6.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--against", type=Path, help="another copy of the hook script to time the same way")
    args = parser.parse_args()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Answer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    up = f"http://127.0.0.1:{server.server_address[1]}"
    closed = socket_port_closed()
    with tempfile.TemporaryDirectory() as spool:
        if args.against:
            print(line(f"{args.against.name}, service up", timed_runs(args.against, up, args.runs, spool)))
        print(line("hyperguild-hook, service up", timed_runs(SCRIPT, up, args.runs, spool)))
        print(line("hyperguild-hook, service down (spooling)", timed_runs(SCRIPT, closed, args.runs, spool)))
    server.shutdown()


def socket_port_closed() -> str:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


if __name__ == "__main__":
    main()
