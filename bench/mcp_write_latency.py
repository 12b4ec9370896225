"""`brain_write` over MCP, one call after the other: p50/p99 per checkout (issue 34: a write's enqueue).

    .venv/bin/python bench/mcp_write_latency.py --calls 500 --checkout /tmp/hg-main .

For each checkout in turn, on the same machine: a fresh data directory (its own embedded PostgreSQL), the
server started the way `make run` does (`manage.py serve --no-worker`, so the queued tasks stay queued and
cost nothing after the call; `--db-pool 0` without the web process's connection pool), `--warmup` calls not counted, then `--calls` sequential `brain_write` calls on
one keep-alive connection (httpx). Printed: client p50/p95/p99, the server's own time (`Server-Timing`) when
the checkout sends it, and the load average (the machine may be shared).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

TOKEN = "bench-write-token"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(share / 100 * (len(ordered) - 1))))]


def server_ms(headers) -> float | None:
    timing = headers.get("server-timing", "")
    if "dur=" in timing:
        return float(timing.split("dur=")[1].split(",")[0].split(";")[0])
    return None


def stop_database(data_dir: Path) -> None:
    for pid_file in data_dir.glob("pg/**/postmaster.pid"):
        try:
            os.kill(int(pid_file.read_text().split("\n", 1)[0]), signal.SIGINT)  # fast shutdown
        except (OSError, ValueError):
            continue
        for _ in range(100):
            if not pid_file.exists():
                break
            time.sleep(0.1)


def write_call(client: httpx.Client, url: str, i: int) -> tuple[float, float | None]:
    message = {
        "jsonrpc": "2.0",
        "id": i,
        "method": "tools/call",
        "params": {
            "name": "brain_write",
            "arguments": {
                "title": f"Bench write {i}",
                "body": f"Sequential write number {i}: what a session learned about topic {i % 37}.",
            },
        },
    }
    started = time.perf_counter()
    response = client.post(url, content=json.dumps(message).encode())
    elapsed = (time.perf_counter() - started) * 1000
    body = response.json() if response.headers.get("content-type", "").startswith("application/json") else {}
    if response.status_code != 200 or "result" not in body or body["result"].get("isError"):
        raise SystemExit(f"brain_write failed: {response.status_code} {response.text[:300]}")
    return elapsed, server_ms(response.headers)


def run_one(checkout: Path, calls: int, warmup: int, db_pool: int | None) -> dict:
    python = str(checkout / ".venv" / "bin" / "python") if (checkout / ".venv").exists() else sys.executable
    data_dir = Path(tempfile.mkdtemp(prefix="hg-write-bench-"))
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "HYPERGUILD_EMBEDDED_DB_URL")}
    env.update(
        HYPERGUILD_DATA_DIR=str(data_dir),
        BRAIN_EMBEDDER="off",
        BRAIN_MCP_TOKEN=TOKEN,
        BRAIN_DIR="",
        HYPERGUILD_ADMIN_PASSWORD="bench-only-password",
        PYTHONDONTWRITEBYTECODE="1",
    )
    if db_pool is not None:
        env["HYPERGUILD_DB_POOL"] = str(db_pool)
    server = subprocess.Popen(
        [python, "manage.py", "serve", "--no-worker", "--port", str(port)],
        cwd=checkout,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        for _ in range(1200):
            if server.poll() is not None:
                raise SystemExit(f"the server exited with {server.returncode}")
            try:
                if httpx.get(f"{base}/health/live", timeout=2).status_code in (200, 404):
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.25)
        headers = {
            "Authorization": f"Bearer {TOKEN}",
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
        }
        with httpx.Client(headers=headers, timeout=60) as client:
            for i in range(warmup):
                write_call(client, f"{base}/mcp/brain", -1 - i)
            load_before = os.getloadavg()[0]
            measured = [write_call(client, f"{base}/mcp/brain", i) for i in range(calls)]
        client_ms = [c for c, _ in measured]
        server_side = [s for _, s in measured if s is not None]
        return {"client": client_ms, "server": server_side, "load": (load_before, os.getloadavg()[0])}
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
        stop_database(data_dir)
        shutil.rmtree(data_dir, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--checkout", type=Path, nargs="+", default=[Path(".")])
    parser.add_argument("--rounds", type=int, default=1, help="alternate the checkouts this many times")
    parser.add_argument(
        "--db-pool", type=int, help="HYPERGUILD_DB_POOL for the web process (0: a connection per request)"
    )
    args = parser.parse_args()
    for round_ in range(args.rounds):
        for checkout in args.checkout:
            checkout = checkout.resolve()
            head = subprocess.run(
                ["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
            ).stdout.strip()
            r = run_one(checkout, args.calls, args.warmup, args.db_pool)
            c, s = r["client"], r["server"]
            server = f"; server p50 {statistics.median(s):.1f} p99 {percentile(s, 99):.1f} ms" if s else ""
            pool = "" if args.db_pool is None else f", HYPERGUILD_DB_POOL={args.db_pool}"
            print(
                f"{checkout.name}@{head} round {round_ + 1}{pool}: {len(c)} brain_write calls, client p50 "
                f"{statistics.median(c):.1f} p95 {percentile(c, 95):.1f} p99 {percentile(c, 99):.1f} ms{server} "
                f"(load {r['load'][0]:.1f}→{r['load'][1]:.1f})",
                flush=True,
            )


if __name__ == "__main__":
    main()
