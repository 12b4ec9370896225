"""The pieces bench/load.py and bench/registration.py drive a real server with: a lean HTTP/1.1 client,
open-loop pacing, the figures of a phase, and the CPU the server's processes (and PostgreSQL's) used."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Coroutine, Iterable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import psutil

from brain.evaluation import percentile

TOKEN = "bench-load-token"


def database_url(settings_dict: dict[str, Any]) -> str:
    user, password = quote(settings_dict.get("USER") or ""), quote(settings_dict.get("PASSWORD") or "")
    host = settings_dict.get("HOST") or "127.0.0.1"
    if host.startswith("/"):
        return f"postgresql://{user}:{password}@{quote(host, safe='')}/{settings_dict['NAME']}"
    return f"postgresql://{user}:{password}@{host}:{settings_dict.get('PORT') or 5432}/{settings_dict['NAME']}"


def cpu_model() -> str:
    """The processor's name (figures from different machines are not comparable), or "unknown"."""
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class Connection:
    """One keep-alive HTTP/1.1 connection, as lean as a client can be."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def request(self, method: str, path: str, body: bytes = b"") -> tuple[int, dict[str, str], bytes]:
        if self.reader is None or self.writer is None:
            self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
        head = (
            f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\nAuthorization: Bearer {TOKEN}\r\n"
            f"Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        )
        self.writer.write(head.encode() + body)
        raw = await self.reader.readuntil(b"\r\n\r\n")
        lines = raw.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {}
        for line in lines[1:]:
            if ":" in line:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
        payload = await self.reader.readexactly(int(headers.get("content-length", "0")))
        if headers.get("connection", "").lower() == "close":
            self.close()
        return status, headers, payload

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


def rpc(method: str, params: dict[str, Any] | None = None, request_id: int = 1) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message).encode()


def server_ms(headers: dict[str, str]) -> float | None:
    timing = headers.get("server-timing", "")
    if "dur=" in timing:
        return float(timing.split("dur=")[1].split(",")[0].split(";")[0])
    return None


def cpu_seconds(processes: Iterable[psutil.Process]) -> float:
    """CPU time (user + system) used so far by `processes` (those that ended meanwhile are skipped)."""
    total = 0.0
    for proc in processes:
        try:
            times = proc.cpu_times()
        except psutil.Error:
            continue
        total += times.user + times.system
    return total


def database_cpu_seconds() -> float:
    """CPU time used so far by PostgreSQL's processes on this machine (its backends serve the web processes)."""
    return cpu_seconds(p for p in psutil.process_iter(["name"]) if p.info["name"] in ("postgres", "postmaster"))


def server_minor_faults(server: subprocess.Popen[bytes]) -> int:
    """Minor page faults so far of the web processes under `server` (/proc/<pid>/stat, field 10; 0 elsewhere).
    On CPython 3.11 a loop whose calls cross a boundary of the interpreter's frame stack maps and unmaps memory
    at each call: a page fault each time (bench/RESULTS.md, "What metrics and traces cost")."""
    total = 0
    for proc in psutil.Process(server.pid).children(recursive=True):
        try:
            stat = Path(f"/proc/{proc.pid}/stat").read_text()
        except OSError:
            continue
        total += int(stat.rsplit(")", 1)[1].split()[7])
    return total


def server_cpu_seconds(server: subprocess.Popen[bytes]) -> float:
    """CPU time used so far by the web processes under `server`."""
    return cpu_seconds(psutil.Process(server.pid).children(recursive=True))


async def post_on_kept(idle: list[Connection], port: int, body: bytes) -> tuple[int, dict[str, str], bytes]:
    """POST to /mcp/brain on an idle kept connection (put back after), or a new one; once more on a new
    connection if the kept one was closed by the server while idle. Status 0: no answer at all."""
    problem = b""
    for fresh in (False, True):
        conn = idle.pop() if idle and not fresh else Connection(port)
        try:
            answer = await conn.request("POST", "/mcp/brain", body)
        except (OSError, asyncio.IncompleteReadError) as exc:
            conn.close()
            problem = str(exc).encode()
            continue
        idle.append(conn)
        return answer
    return 0, {}, problem


async def open_loop(
    start: Callable[[int], Coroutine[Any, Any, None]],
    rate: float,
    done: Callable[[], bool],
    drain_seconds: float,
    idle: list[Connection],
) -> None:
    """Start `start(1)`, `start(2)`, … at `rate` per second whatever their latency, until `done()`;
    then wait up to `drain_seconds` for those still running and close the idle connections."""
    tasks: set[asyncio.Task[None]] = set()
    number = 0
    next_at = time.perf_counter()
    try:
        while not done():
            number += 1
            task = asyncio.create_task(start(number))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
            next_at += 1 / rate
            await asyncio.sleep(max(0.0, next_at - time.perf_counter()))
        if tasks:
            await asyncio.wait(tasks, timeout=drain_seconds)
    finally:
        for task in tasks:
            task.cancel()
        for conn in idle:
            conn.close()


class Figures:
    def __init__(self) -> None:
        self.client: list[float] = []
        self.server: list[float] = []
        self.per_client: list[float] = []  # each client's mean latency: is the load shared fairly?
        self.errors = 0
        self.first_error = ""

    def error(self, status: int, payload: bytes) -> None:
        self.errors += 1
        if not self.first_error:
            self.first_error = f"HTTP {status}: {payload[:300].decode(errors='replace')}"

    def line(self, seconds: float) -> str:
        if not self.client:
            return f"no calls ({self.errors} errors)"
        s = self.server or [float("nan")]
        return (
            f"{len(self.client) / seconds:7.1f} calls/s | client p50 {percentile(self.client, 50):6.1f}  "
            f"p95 {percentile(self.client, 95):6.1f}  p99 {percentile(self.client, 99):6.1f} ms | "
            f"server p50 {percentile(s, 50):5.1f}  p95 {percentile(s, 95):5.1f}  p99 {percentile(s, 99):5.1f} ms"
            f" | {len(self.client)} calls, {self.errors} errors"
        )

    def fairness(self) -> str:
        means = sorted(self.per_client)
        if len(means) < 2:
            return ""
        return (
            f"  each client's mean latency: min {means[0]:.1f}  median {percentile(means, 50):.1f}  "
            f"max {means[-1]:.1f} ms (uneven: connections are shared unevenly between web processes)"
            if means[-1] > 1.5 * means[0]
            else f"  each client's mean latency: min {means[0]:.1f}  median {percentile(means, 50):.1f}  max {means[-1]:.1f} ms"
        )


def stop_server(server: subprocess.Popen[bytes]) -> None:
    """SIGTERM, then SIGKILL to its process group after 30 s."""
    if server.poll() is None:
        server.send_signal(signal.SIGTERM)
    try:
        server.wait(30)
    except subprocess.TimeoutExpired:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait(10)
