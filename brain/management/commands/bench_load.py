"""Load benchmark: the real server under N concurrent MCP clients.

    manage.py bench_load                                  # 2,000 notes, 50 clients
    manage.py bench_load --notes 100000 --clients 50      # the 100k figures
    manage.py bench_load --memory-notes 1000000           # base segment memory at 1M notes, no server

It creates a scratch database (`hyperguild_eval_<pid>`, dropped at the end),
stores synthetic notes there, starts the server the way `make run` does
(`manage.py serve --no-worker`, HYPERGUILD_WEB_WORKERS web processes) and
prints, for `--clients` concurrent MCP clients on keep-alive connections:

- calls/s and p50/p95/p99 of `brain_query`, client side and server side
  (the `Server-Timing` header: time inside the web process);
- the same while a writer adds `--write-rate` notes per second through
  `brain_ingest`, and how long a written note takes to be found by a query
  that may land on any web process;
- with the writer still running, brain_query started at fixed rates
  (`--query-rates`, open loop): the latency at a given load, not at saturation;
- an MCP `ping` round trip against the bare JSON view `/health/live` on the
  same server (sequential medians, and throughput under the same load);
- memory per web process (RSS, and PSS/USS, which count shared pages once);
- where a `brain_query` call's time goes, measured in this process.

The clients are plain asyncio HTTP/1.1 (no client library) so that they
cost the machine as little as possible; they still share its cores with the
server, and so do other programs: the load average is printed with the figures.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import quote

import numpy as np
import psutil
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DatabaseError, connections

from brain import bm25
from brain.evaluation import SyntheticCorpus, percentile, store_synthetic_notes
from brain.management.commands.brain_eval import ScratchDatabase

TOKEN = "bench-load-token"


def database_url(settings_dict: dict) -> str:
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
        return sock.getsockname()[1]


class Connection:
    """One keep-alive HTTP/1.1 connection, as lean as a client can be."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def request(self, method: str, path: str, body: bytes = b"") -> tuple[int, dict[str, str], bytes]:
        if self.writer is None:
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


def rpc(method: str, params: dict | None = None, request_id: int = 1) -> bytes:
    message = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message).encode()


def server_ms(headers: dict[str, str]) -> float | None:
    timing = headers.get("server-timing", "")
    if "dur=" in timing:
        return float(timing.split("dur=")[1].split(",")[0].split(";")[0])
    return None


def cpu_seconds(processes) -> float:
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


def server_cpu_seconds(server: subprocess.Popen) -> float:
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


async def open_loop(start, rate: float, done, drain_seconds: float, idle: list[Connection]) -> None:
    """Start `start(1)`, `start(2)`, … at `rate` per second whatever their latency, until `done()`;
    then wait up to `drain_seconds` for those still running and close the idle connections."""
    tasks: set[asyncio.Task] = set()
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


def stop_server(server: subprocess.Popen) -> None:
    """SIGTERM, then SIGKILL to its process group after 30 s."""
    if server.poll() is None:
        server.send_signal(signal.SIGTERM)
    try:
        server.wait(30)
    except subprocess.TimeoutExpired:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait(10)


def server_spec(spec: str) -> tuple[str, dict[str, str]]:
    """ "granian@32/2" -> ("granian", {HYPERGUILD_WEB_THREADS: 32, HYPERGUILD_WEB_CONCURRENCY: 2}): a web server,
    optionally its threads per process (@) and its admission gate (/, 0 for none), and "+exhaustive" to score
    every BM25 posting (BRAIN_BM25_PRUNING off); ValueError if malformed."""
    spec, plus, option = spec.partition("+")
    if plus and option != "exhaustive":
        raise ValueError(spec)
    rest, _, gate = spec.partition("/")
    name, _, threads = rest.partition("@")
    env = {"BRAIN_BM25_PRUNING": "0"} if plus else {}
    for variable, value, minimum in (("HYPERGUILD_WEB_THREADS", threads, 1), ("HYPERGUILD_WEB_CONCURRENCY", gate, 0)):
        if not value:
            continue
        if not value.isdigit() or not minimum <= int(value) <= 256:
            raise ValueError(spec)
        env[variable] = value
    if (threads and not rest.count("@") == 1) or spec.count("/") > 1:
        raise ValueError(spec)
    return name, env


def checkout_spec(spec: str) -> tuple[str, Path] | None:
    """ "today=/srv/old" -> ("today", Path("/srv/old")): another checkout's own `manage.py serve`, as it stands
    (an older version with a web server of its own); None for a server name."""
    label, equals, directory = spec.partition("=")
    if not equals:
        return None
    if not label or "@" in label or "/" in label or not (Path(directory) / "manage.py").is_file():
        raise ValueError(spec)
    return label, Path(directory)


def side_by_side_table(results: dict[tuple[str, str], list[Figures]], seconds: float, options: dict) -> str:
    """A markdown table: per server and phase, the median over rounds of calls/s and the p99s (the range in
    brackets), and how each compares with the best of the other servers."""
    rows = []
    medians: dict[tuple[str, str], tuple[float, float, float]] = {}
    for (name, kind), runs in results.items():
        rates = [len(f.client) / seconds for f in runs]
        client = [percentile(f.client, 99) if f.client else float("nan") for f in runs]
        server = [percentile(f.server, 99) if f.server else float("nan") for f in runs]
        medians[name, kind] = (float(np.median(rates)), float(np.median(client)), float(np.median(server)))
        errors = sum(f.errors for f in runs)

        def cell(values: list[float], digits: int) -> str:
            return f"{np.median(values):.{digits}f} ({min(values):.{digits}f}–{max(values):.{digits}f})"

        rows.append((name, kind, cell(rates, 0), cell(client, 0), cell(server, 1), errors))
    lines = [
        "stock: a stock server and Django's own handler with no gate (/0); the others carry a piece of ours",
        f"side by side: {options['notes']} notes, {options['clients']} clients, {options['workers']} web process(es), "
        f"{len(next(iter(results.values())))} round(s) of {seconds:g} s; median (min–max) over rounds",
        "",
        "| server | phase | calls/s | client p99 ms | server p99 ms | errors | vs the best other (calls/s, client p99) |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, kind, rate, client, server, errors in rows:
        others = [medians[other, kind] for other, k in medians if k == kind and other != name]
        compare = ""
        if others:
            best_rate = max(o[0] for o in others)
            best_p99 = min(o[1] for o in others)
            mine = medians[name, kind]
            compare = f"{(mine[0] / best_rate - 1) * 100:+.0f} %, {(mine[1] / best_p99 - 1) * 100:+.0f} %"
        phase = "reads" if kind == "reads" else f"reads + writer {options['write_rate']:g}/s"
        lines.append(f"| {name} | {phase} | {rate} | {client} | {server} | {errors} | {compare} |")
    stock = [name for name in {name for name, _ in medians} if name in options["stock"]]
    for kind in dict.fromkeys(kind for _, kind in medians):
        best = [medians[name, kind] for name in stock]
        if not best:
            break
        rate, client, server = max(b[0] for b in best), min(b[1] for b in best), min(b[2] for b in best)
        for name in (name for name, k in medians if k == kind and name not in stock):
            mine = medians[name, kind]
            lines.append(
                f"{name} against the best stock server on each figure ({kind}): calls/s {(mine[0] / rate - 1) * 100:+.0f} %, "
                f"client p99 {(mine[1] / client - 1) * 100:+.0f} %, server p99 {(mine[2] / server - 1) * 100:+.0f} %"
            )
    return "\n".join(lines)


def is_stock(spec: str) -> bool:
    """A stock server of this checkout with Django's own handler and no piece of ours in front (no admission gate)."""
    if checkout_spec(spec) is not None:
        return False
    _, overrides = server_spec(spec)
    return overrides.get("HYPERGUILD_WEB_CONCURRENCY", str(settings.HYPERGUILD_WEB_CONCURRENCY)) == "0"


class Command(BaseCommand):
    help = "Start the real server on a scratch database and print calls/s and latency percentiles under load."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--notes", type=int, default=2000, help="synthetic notes (default: %(default)s)")
        parser.add_argument("--clients", type=int, default=50, help="concurrent MCP clients (default: %(default)s)")
        parser.add_argument("--seconds", type=float, default=15.0, help="length of each phase (default: %(default)s)")
        parser.add_argument("--workers", type=int, default=settings.HYPERGUILD_WEB_WORKERS,
                            help="web processes (default: HYPERGUILD_WEB_WORKERS = %(default)s)")  # fmt: skip
        parser.add_argument("--write-rate", type=float, default=10.0, help="notes/s of the writer (default: 10)")
        parser.add_argument("--ping-samples", type=int, default=400, help="sequential pings and bare views each")
        parser.add_argument("--memory-notes", type=int, help="only measure base-segment memory at this many notes")
        parser.add_argument("--reads-only", action="store_true",
                            help="only the brain_query phase (no writer, ping or memory): for quick comparisons")  # fmt: skip
        parser.add_argument("--query-rates", default="100",
                            help="open-loop brain_query rates (calls/s, comma-separated) measured with the writer "
                                 "running: latency at a given load rather than at saturation (default: %(default)s; "
                                 "empty: none)")  # fmt: skip
        parser.add_argument("--repeat", type=int, default=1,
                            help="run the brain_query phase this many times on the same server (default: 1)")  # fmt: skip
        parser.add_argument("--server-log", type=Path,
                            help="write the server's output (its log) to this file instead of discarding it")  # fmt: skip
        parser.add_argument("--servers", default=settings.HYPERGUILD_SERVER,
                            help=f"web servers to start, comma-separated ({', '.join(settings.HYPERGUILD_SERVERS)}), "
                                 "each with an optional @threads and /gate (HYPERGUILD_WEB_THREADS and HYPERGUILD_WEB_CONCURRENCY "
                                 "for it: granian@32/2, granian@2/0), or label=DIR for another checkout's own serve "
                                 "(today=/path/to/main); with more than one, "
                                 "the same clients drive each in turn on the same notes and a side-by-side table is printed (default: HYPERGUILD_SERVER = %(default)s)")  # fmt: skip
        parser.add_argument("--restart", action="store_true",
                            help="at the end, restart each server and time its first brain_query answer "
                                 "(the base segment is mapped from disk, not built)")  # fmt: skip
        parser.add_argument("--server-dir", type=Path, default=Path(settings.BASE_DIR),
                            help="checkout whose `manage.py serve` is started (to compare with an older version)")  # fmt: skip

    def handle(self, *args, **options) -> None:
        try:
            rates = [float(rate) for rate in options["query_rates"].split(",") if rate.strip()]
        except ValueError:
            raise CommandError(
                f"--query-rates takes numbers separated by commas, not {options['query_rates']!r}"
            ) from None
        if any(not 0 < rate <= 10_000 for rate in rates) or options["write_rate"] <= 0:
            raise CommandError("--query-rates and --write-rate take rates above 0 (calls/s, at most 10,000)")
        options["rates"] = rates
        options["stock"] = set()
        options["servers"] = [spec.strip() for spec in options["servers"].split(",") if spec.strip()]
        try:
            parsed = [server_spec(spec) for spec in options["servers"] if checkout_spec(spec) is None]
            checkouts = [spec for spec in options["servers"] if checkout_spec(spec) is not None]
        except ValueError:
            parsed, checkouts = [], []
        if not parsed and checkouts and len(checkouts) == len(options["servers"]):
            parsed = [("granian", {})]  # only checkouts: nothing of this one to check
        if (not parsed or any(name not in settings.HYPERGUILD_SERVERS for name, _ in parsed)
                or len(set(options["servers"])) != len(options["servers"])):  # fmt: skip
            raise CommandError(
                f"--servers takes distinct names from {', '.join(settings.HYPERGUILD_SERVERS)}, each with an optional "
                f"@threads and /gate (granian@32/2), or label=DIR (another checkout's serve), not {options['servers']!r}"
            )
        load = os.getloadavg()
        self.stdout.write(
            f"machine: {os.cpu_count()} CPUs ({cpu_model()}), load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} "
            "(other programs share these cores: figures are noisy when it is high)"
        )
        if options["memory_notes"]:
            self.memory_only(options["memory_notes"])
            return
        settings.BRAIN_EMBEDDER = "off"
        previous = signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(SystemExit(143)))
        try:
            with ScratchDatabase(self.stdout) as scratch:
                self.stdout.write(f"scratch database {scratch.name}")
                self.run(options)
        finally:
            signal.signal(signal.SIGTERM, previous)
        self.stdout.write(self.style.SUCCESS("bench_load done; scratch database dropped"))

    # -- the run ---------------------------------------------------------------------------

    def run(self, options: dict) -> None:
        corpus = SyntheticCorpus(seed=11)
        started = time.perf_counter()
        store_synthetic_notes(corpus, options["notes"])
        self.stdout.write(f"{options['notes']} notes stored in {time.perf_counter() - started:.1f} s")
        connections["default"].close()
        env = {
            **os.environ,
            "DATABASE_URL": database_url(connections["default"].settings_dict),
            "HYPERGUILD_WEB_WORKERS": str(options["workers"]),
            "BRAIN_EMBEDDER": "off",
            "BRAIN_MCP_TOKEN": TOKEN,
            "HYPERGUILD_ADMIN_PASSWORD": "bench-only-password",
        }
        log = open(options["server_log"], "ab") if options.get("server_log") else subprocess.DEVNULL  # noqa: SIM115
        servers: dict[str, tuple[int, subprocess.Popen]] = {}
        launches: dict[str, tuple[list[str], Path, dict[str, str]]] = {}

        def start(label: str) -> None:
            command, directory, own_env = launches[label]
            port = free_port()
            servers[label] = (
                port,
                subprocess.Popen(
                    [*command, "--port", str(port)], cwd=directory, env=own_env, stdout=log, stderr=log,
                    start_new_session=True,
                ),
            )

        try:
            for spec in options["servers"]:
                command = [sys.executable, "manage.py", "serve", "--no-worker"]
                if (checkout := checkout_spec(spec)) is not None:
                    label, directory, own_env = checkout[0], checkout[1], env
                else:
                    name, overrides = server_spec(spec)
                    label, directory, own_env = spec, options["server_dir"], {**env, **overrides}
                    command += ["--server", name]
                    if is_stock(spec):
                        options["stock"].add(label)
                launches[label] = (command, directory, own_env)
                start(label)
                asyncio.run(self.wait_ready(servers[label][0], servers[label][1]))  # one at a time: each migrates
            if len(servers) == 1:
                ((port, server),) = servers.values()
                asyncio.run(self.drive(port, server, corpus, options))
            else:
                asyncio.run(self.side_by_side(servers, corpus, options))
            if options["restart"]:
                for label in list(servers):
                    stop_server(servers[label][1])
                    started = time.perf_counter()
                    start(label)
                    asyncio.run(self.first_answer(label, started, *servers[label], corpus))
                    stop_server(servers[label][1])  # one at a time: the next restart has the machine to itself
        finally:
            for _, server in servers.values():
                if server.poll() is None:
                    server.send_signal(signal.SIGTERM)
            for _, server in servers.values():
                stop_server(server)
            if log is not subprocess.DEVNULL:
                log.close()
            # Asked once the servers are gone: with several of them, their pools can hold every connection there is.
            from brain.models import BrainVersion

            try:
                corpus_id = BrainVersion.current_with_corpus()[1]
            except DatabaseError:
                corpus_id = None
            directory = bm25.shared_dir(corpus_id)
            if directory is not None:
                shutil.rmtree(directory, ignore_errors=True)
        if not options["reads_only"] and len(servers) == 1:
            self.breakdown(corpus)

    async def side_by_side(self, servers: dict[str, tuple[int, subprocess.Popen]], corpus: SyntheticCorpus,
                           options: dict) -> None:  # fmt: skip
        """The 50-client phase (and, unless --reads-only, the same with the writer) on each web server in turn,
        --repeat rounds, the order rotated each round; all the servers stay up on the same scratch database, so
        they serve the same notes on the same machine at the same time of day."""
        clients, seconds = options["clients"], options["seconds"]
        for name, (port, server) in servers.items():
            await self.wait_ready(port, server)
            warm = await self.phase(port, corpus, clients, seconds=0, calls_each=max(4, 40 // clients + 2))
            self.stdout.write(f"{name}: up on port {port} with {options['workers']} web process(es), "
                              f"warmed up with {len(warm.client)} calls")  # fmt: skip
        names = list(servers)
        kinds = ["reads"] if options["reads_only"] else ["reads", "writer"]
        results: dict[tuple[str, str], list[Figures]] = {(name, kind): [] for name in names for kind in kinds}
        for round_number in range(max(1, options["repeat"])):
            order = names[round_number % len(names) :] + names[: round_number % len(names)]
            for kind in kinds:
                for name in order:
                    port = servers[name][0]
                    if kind == "reads":
                        figures = await self.phase(port, corpus, clients, seconds)
                    else:
                        writes, lags, stop = Figures(), [], asyncio.Event()
                        writer = asyncio.create_task(self.writer(port, options["write_rate"], writes, lags, stop))
                        figures = await self.phase(port, corpus, clients, seconds)
                        stop.set()
                        await writer
                    results[name, kind].append(figures)
                    label = (
                        f"round {round_number + 1}, {name}, {clients} clients{' + writer' if kind == 'writer' else ''}"
                    )
                    self.stdout.write(f"{label:<46}: {figures.line(seconds)}")
                    if figures.first_error:
                        self.stdout.write(f"  first error: {figures.first_error}")
        self.stdout.write(side_by_side_table(results, seconds, options))
        for name, (_, server) in servers.items():
            self.memory(server, f"{name}, at the end")

    async def drive(self, port: int, server: subprocess.Popen, corpus: SyntheticCorpus, options: dict) -> None:
        await self.wait_ready(port, server)
        clients, seconds = options["clients"], options["seconds"]
        self.stdout.write(f"server up on port {port} with {options['workers']} web process(es)")

        started = time.perf_counter()
        warm = await self.phase(port, corpus, clients, seconds=0, calls_each=max(4, 40 // clients + 2))
        self.stdout.write(f"warm-up ({len(warm.client)} calls, first index per process): "
                          f"{time.perf_counter() - started:.1f} s")  # fmt: skip
        self.memory(server, "after the warm-up (each process has its first index)")

        for _ in range(max(1, options["repeat"])):
            cpu, db_cpu, own_cpu = server_cpu_seconds(server), database_cpu_seconds(), time.process_time()
            reads = await self.phase(port, corpus, clients, seconds)
            calls = max(1, len(reads.client))
            cpu_per_call = (server_cpu_seconds(server) - cpu) * 1000 / calls
            db_per_call = (database_cpu_seconds() - db_cpu) * 1000 / calls
            own_per_call = (time.process_time() - own_cpu) * 1000 / calls
            self.stdout.write(f"brain_query, {clients} clients          : {reads.line(seconds)}")
            self.stdout.write(reads.fairness())
            if reads.first_error:
                self.stdout.write(f"  first error: {reads.first_error}")
            self.stdout.write(
                f"  CPU per brain_query: web processes {cpu_per_call:.1f} ms, PostgreSQL {db_per_call:.1f} ms, "
                f"these clients {own_per_call:.1f} ms (what load does not change much)"
            )
        if options["reads_only"]:
            return

        writes = Figures()
        lags: list[float] = []
        stop = asyncio.Event()
        writer = asyncio.create_task(self.writer(port, options["write_rate"], writes, lags, stop))
        mixed = await self.phase(port, corpus, clients, seconds)
        stop.set()
        await writer
        self.stdout.write(f"brain_query, {clients} clients + writer : {mixed.line(seconds)}")
        if mixed.first_error:
            self.stdout.write(f"  first error: {mixed.first_error}")
        self.stdout.write(f"  writer brain_ingest at {options['write_rate']:g}/s     : {writes.line(seconds)}")
        if lags:
            self.stdout.write(
                f"  a written note found by a query on any process after: p50 {percentile(lags, 50):.0f} ms, "
                f"max {max(lags):.0f} ms ({len(lags)} notes probed)"
            )

        for rate in options["rates"]:
            writes, lags, stop = Figures(), [], asyncio.Event()
            writer = asyncio.create_task(self.writer(port, options["write_rate"], writes, lags, stop))
            rated = await self.rated_queries(port, corpus, rate, seconds)
            stop.set()
            await writer
            label = f"brain_query at {rate:g}/s + writer"
            self.stdout.write(f"{label:<33}: {rated.line(seconds)}")
            if rated.first_error:
                self.stdout.write(f"  first error: {rated.first_error}")

        await self.ping_ratio(port, clients, options["ping_samples"], min(5.0, seconds))
        self.memory(server, "at the end (after the writer's phases)")

    async def first_answer(self, label: str, started: float, port: int, server: subprocess.Popen,
                           corpus: SyntheticCorpus) -> None:  # fmt: skip
        """After a restart: when the server answers /health/live, its first brain_query, and the slowest of the
        next calls on new connections (which reach the other web processes, each mapping the base)."""
        await self.wait_ready(port, server)
        up = time.perf_counter() - started
        first = None
        while first is None:
            conn = Connection(port)
            try:
                body = rpc("tools/call", {"name": "brain_query", "arguments": {"query": corpus.query(), "limit": 10}})
                status, headers, payload = await conn.request("POST", "/mcp/brain", body)
            finally:
                conn.close()
            if status == 200 and b'"isError": true' not in payload and b'"isError":true' not in payload:
                first = time.perf_counter() - started
            elif server.poll() is not None:
                raise SystemExit(f"{label}: the server exited with {server.returncode} after its restart")
            else:
                await asyncio.sleep(0.1)
        following = await self.phase(port, corpus, clients=4, seconds=0, calls_each=5)
        self.stdout.write(
            f"{label}, restarted: serving after {up:.1f} s, first brain_query answered after {first:.1f} s; "
            f"the next {len(following.client)} calls on new connections: slowest {max(following.client or [0]):.0f} ms"
        )

    async def wait_ready(self, port: int, server: subprocess.Popen) -> None:
        for _ in range(600):
            if server.poll() is not None:
                raise SystemExit(f"the server exited with {server.returncode}")
            conn = Connection(port)
            try:
                status, _, _ = await conn.request("GET", "/health/live")
                if status in (200, 404):  # 404: an older version without /health/live, but up
                    self.bare_view = "/health/live" if status == 200 else None
                    return
            except OSError:
                pass
            finally:
                conn.close()
            await asyncio.sleep(0.2)
        raise SystemExit("the server did not come up in 120 s")

    async def phase(self, port, corpus, clients: int, seconds: float, calls_each: int | None = None) -> Figures:
        figures = Figures()
        deadline = time.perf_counter() + seconds
        queries = [corpus.query() for _ in range(500)]

        async def client(number: int) -> None:
            conn = Connection(port)
            calls = 0
            mine: list[float] = []
            try:
                while (calls_each is not None and calls < calls_each) or (
                    calls_each is None and time.perf_counter() < deadline
                ):
                    arguments = {"query": queries[(number * 31 + calls) % len(queries)], "limit": 10}
                    body = rpc("tools/call", {"name": "brain_query", "arguments": arguments}, calls)
                    t0 = time.perf_counter()
                    status, headers, payload = await conn.request("POST", "/mcp/brain", body)
                    elapsed = (time.perf_counter() - t0) * 1000
                    calls += 1
                    if calls_each is not None:
                        conn.close()  # warm-up: new connections, so that every web process builds its index
                    if status != 200 or b'"isError": true' in payload or b'"isError":true' in payload:
                        figures.error(status, payload)
                        continue
                    figures.client.append(elapsed)
                    mine.append(elapsed)
                    if (ms := server_ms(headers)) is not None:
                        figures.server.append(ms)
            finally:
                conn.close()
                if mine:
                    figures.per_client.append(sum(mine) / len(mine))

        await asyncio.gather(*(client(i) for i in range(clients)))
        return figures

    async def writer(self, port: int, rate: float, figures: Figures, lags: list[float], stop: asyncio.Event) -> None:
        """Writes at `rate` notes/s whatever their latency (open loop: a write does not wait for the
        one before), on a few connections; every fifth note is then looked for until a query finds it."""
        idle: list[Connection] = []

        async def write(number: int) -> None:
            marker = f"zqprobe{os.getpid()}x{number}"
            arguments = {"title": f"Load note {number}", "body": f"written under load {marker}", "wing": "load"}
            body = rpc("tools/call", {"name": "brain_ingest", "arguments": arguments}, number)
            t0 = time.perf_counter()
            status, headers, _ = await post_on_kept(idle, port, body)
            written = time.perf_counter()
            if status != 200:
                figures.errors += 1
                return
            figures.client.append((written - t0) * 1000)
            if (ms := server_ms(headers)) is not None:
                figures.server.append(ms)
            if number % 5:
                return
            probe = Connection(port)  # a new connection: the kernel may hand it to another web process
            try:
                while time.perf_counter() - written < 5:
                    query = {"query": marker, "wing": "load"}
                    try:
                        _, _, payload = await probe.request(
                            "POST", "/mcp/brain", rpc("tools/call", {"name": "brain_query", "arguments": query}, 1)
                        )
                    except (OSError, asyncio.IncompleteReadError):
                        payload = b""
                    if marker.encode() in payload:
                        lags.append((time.perf_counter() - written) * 1000)
                        return
                    probe.close()
                    probe = Connection(port)
            finally:
                probe.close()

        await open_loop(write, rate, stop.is_set, 10, idle)

    async def rated_queries(self, port: int, corpus: SyntheticCorpus, rate: float, seconds: float) -> Figures:
        """brain_query calls started at `rate` per second whatever their latency (open loop), on as many
        keep-alive connections as are busy at once: the latency a team sees at that load, not at saturation."""
        figures = Figures()
        queries = [corpus.query() for _ in range(500)]
        idle: list[Connection] = []

        async def query(number: int) -> None:
            arguments = {"query": queries[number % len(queries)], "limit": 10}
            body = rpc("tools/call", {"name": "brain_query", "arguments": arguments}, number)
            t0 = time.perf_counter()
            status, headers, payload = await post_on_kept(idle, port, body)
            elapsed = (time.perf_counter() - t0) * 1000
            if status != 200 or b'"isError": true' in payload or b'"isError":true' in payload:
                figures.error(status, payload)
                return
            figures.client.append(elapsed)
            if (ms := server_ms(headers)) is not None:
                figures.server.append(ms)

        started = time.perf_counter()
        await open_loop(query, rate, lambda: time.perf_counter() - started >= seconds, 30, idle)
        return figures

    async def ping_ratio(self, port: int, clients: int, samples: int, seconds: float) -> None:
        if self.bare_view is None:
            self.stdout.write("no /health/live on this server: ping vs bare view skipped")
            return
        conn = Connection(port)
        bare, ping = [], []
        ping_body = rpc("ping")
        for i in range(samples * 2):
            t0 = time.perf_counter()
            if i % 2:
                status, _, _ = await conn.request("POST", "/mcp/brain", ping_body)
                ping.append((time.perf_counter() - t0) * 1000)
            else:
                status, _, _ = await conn.request("GET", "/health/live")
                bare.append((time.perf_counter() - t0) * 1000)
            assert status == 200, status
        conn.close()
        ratio = percentile(ping, 50) / percentile(bare, 50)
        self.stdout.write(
            f"sequential round trip: bare JSON view p50 {percentile(bare, 50):.2f} ms, MCP ping p50 "
            f"{percentile(ping, 50):.2f} ms -> ping/bare {ratio:.2f}x ({samples} each, interleaved)"
        )
        rates = {}
        for name, method, path, body in (
            ("bare", "GET", "/health/live", b""),
            ("ping", "POST", "/mcp/brain", ping_body),
        ):
            count = 0
            deadline = time.perf_counter() + seconds

            async def loop(method=method, path=path, body=body, deadline=deadline) -> None:
                nonlocal count
                c = Connection(port)
                while time.perf_counter() < deadline:
                    await c.request(method, path, body)
                    count += 1
                c.close()

            await asyncio.gather(*(loop() for _ in range(clients)))
            rates[name] = count / seconds
        self.stdout.write(
            f"throughput with {clients} clients: bare JSON view {rates['bare']:.0f}/s, MCP ping {rates['ping']:.0f}/s "
            f"-> bare/ping {rates['bare'] / rates['ping']:.2f}x"
        )

    def memory(self, server: subprocess.Popen, when: str) -> None:
        self.stdout.write(f"memory per process, {when}:")
        parent = psutil.Process(server.pid)
        for proc in [parent, *parent.children(recursive=True)]:
            try:
                info = proc.memory_full_info()
                cmd = " ".join(proc.cmdline()[1:4])[:60]
            except psutil.Error:
                continue
            self.stdout.write(
                f"  pid {proc.pid:>7} RSS {info.rss / 2**20:6.0f} MiB  PSS {info.pss / 2**20:6.0f} MiB  "
                f"USS {info.uss / 2**20:6.0f} MiB  {cmd}{self.mapped_bases(proc)}"
            )

    @staticmethod
    def mapped_bases(proc: psutil.Process) -> str:
        """What of a process's memory is BM25 base files mapped from BRAIN_BM25_DIR (shared with other processes
        when they map the same base) — the rest of its USS is its own heap."""
        try:
            maps = [m for m in proc.memory_maps(grouped=True) if "/base-" in m.path and m.path.endswith(".npy")]
        except psutil.Error:
            return ""
        if not maps:
            return ""
        bases = sorted({Path(m.path).parent.name for m in maps})
        private = sum(m.private_clean + m.private_dirty for m in maps)
        return (
            f"  (BM25 base {', '.join(bases)}: RSS {sum(m.rss for m in maps) / 2**20:.0f} MiB, "
            f"of it only here {private / 2**20:.0f} MiB)"
        )

    # -- where the time goes ---------------------------------------------------------------

    def breakdown(self, corpus: SyntheticCorpus) -> None:
        """Time the pieces of one brain_query in this process (same database, no HTTP)."""
        from brain.models import BrainVersion
        from brain.search import hit_rows, search
        from hyperguild.mcp.engine import CallRecord, Dispatcher
        from hyperguild.mcp.registry import ToolContext, get_endpoint

        bm25.reset()
        bm25.current_index()
        queries = [corpus.query() for _ in range(200)]
        endpoint = get_endpoint("brain")
        tool = endpoint.tools["brain_query"]
        pieces: dict[str, list[float]] = {}

        def timed(name: str, fn):
            t0 = time.perf_counter()
            value = fn()
            pieces.setdefault(name, []).append((time.perf_counter() - t0) * 1000)
            return value

        snapshot = bm25.current_index()
        for i, query in enumerate(queries):
            tokens = timed("tokenize query", lambda q=query: bm25.tokenize(q))
            timed("version query (SQL)", BrainVersion.current_with_corpus)
            ranking = timed("BM25 ranking", lambda t=tokens: snapshot.rank(t, limit=30, status="wiki"))
            ids = [note_id for note_id, _ in ranking[:10]]
            timed("hits SQL", lambda ids=ids: hit_rows(ids))
            timed("search() total", lambda q=query: search(q, limit=10))
            structured = timed("tool handler total", lambda q=query, i=i: tool.call({"query": q}, ToolContext(
                endpoint="brain", request_id=i)))  # fmt: skip
            timed("output schema check (sampled)", lambda s=structured: list(tool.output_validator.iter_errors(s)))
            timed("JSON encoding", lambda s=structured: json.dumps({"result": {"structuredContent": s,
                  "content": [{"type": "text", "text": json.dumps(s, ensure_ascii=False, separators=(",", ":"))}]}}))  # fmt: skip
            message = {"jsonrpc": "2.0", "id": i, "method": "tools/call",
                       "params": {"name": "brain_query", "arguments": {"query": query}}}  # fmt: skip
            timed("JSON-RPC dispatch total", lambda m=message, i=i: Dispatcher(endpoint).handle(
                m, ToolContext(endpoint="brain", request_id=i), CallRecord()))  # fmt: skip
            ping = {"jsonrpc": "2.0", "id": i, "method": "ping"}
            timed("JSON-RPC ping dispatch", lambda m=ping, i=i: Dispatcher(endpoint).handle(
                m, ToolContext(endpoint="brain", request_id=i), CallRecord()))  # fmt: skip
        self.stdout.write("where a brain_query call's time goes (in process, p50 / p95 ms over 200 queries):")
        for name, values in pieces.items():
            self.stdout.write(f"  {name:<26} {np.percentile(values, 50):7.2f} {np.percentile(values, 95):7.2f}")

    # -- memory at scale, no server ---------------------------------------------------------

    def memory_only(self, count: int) -> None:
        """Build a base segment of `count` synthetic notes from term counts (no database, no tokenising),
        then map it from disk in 3 processes and report what each costs."""
        import tempfile

        rng = np.random.default_rng(7)
        vocabulary = 30_000
        zipf = 1 / np.arange(1, vocabulary + 1)
        zipf /= zipf.sum()
        started = time.perf_counter()
        parts, lengths, docs = [], [], []
        chunk = 50_000
        for first in range(0, count, chunk):
            n = min(chunk, count - first)
            sizes = rng.integers(42, 207, size=n)  # title 2–6 + body 40–200 words, as brain_eval --synthetic
            terms = rng.choice(vocabulary, size=int(sizes.sum()), p=zipf)
            doc = np.repeat(np.arange(first, first + n), sizes)
            pair, tf = np.unique(doc * vocabulary + terms, return_counts=True)
            parts.append((pair // vocabulary, pair % vocabulary, tf))
            lengths.append(sizes)
        docs = np.concatenate([p[0] for p in parts])
        keys = np.asarray([bm25.term_key(f"w{t}") for t in range(vocabulary)], dtype=np.uint64)[
            np.concatenate([p[1] for p in parts])
        ]
        tfs = np.concatenate([p[2] for p in parts]).astype(np.int32)
        del parts
        segment = bm25.build_segment(
            version=1, note_ids=np.arange(1, count + 1, dtype=np.int64), statuses=["wiki"] * count,
            wings=["eng"] * count, halls=[""] * count, lengths=np.concatenate(lengths), doc_of=docs, keys=keys, tfs=tfs,
        )  # fmt: skip
        del docs, keys, tfs
        self.stdout.write(
            f"{count} notes: {len(segment.post_docs)} postings, {len(segment.keys)} terms, base segment arrays "
            f"{segment.nbytes / 2**20:.0f} MiB (built in {time.perf_counter() - started:.1f} s)"
        )
        with tempfile.TemporaryDirectory(dir=settings.DATA_DIR) as tmp:
            path = bm25.save_segment(segment, Path(tmp), "bench")
            del segment
            script = (
                "import sys, numpy as np, psutil, django, os; os.environ.setdefault('DJANGO_SETTINGS_MODULE', "
                "'hyperguild.settings'); django.setup(); from brain import bm25; from pathlib import Path;"
                "seg = bm25.load_segment(Path(sys.argv[1])); mode = sys.argv[2];"
                "seg = seg if mode == 'mapped' else bm25.Segment(**{**seg.__dict__, **{n: np.array(getattr(seg, n)) "
                "for n in bm25.SEGMENT_ARRAYS}, 'path': None});"
                "snap = bm25.Snapshot(version=1, corpus_id='', base=seg, dead=np.zeros(0, np.int64), "
                "delta=bm25.segment_from_docs([], 1)); rng = np.random.default_rng(int(sys.argv[3]));"
                "[snap.rank([f'w{t}' for t in rng.integers(0, 5000, 3)], limit=10) for _ in range(300)];"
                "before = psutil.Process().memory_full_info(); print(before.rss, before.pss, before.uss, flush=True);"
                "sys.stdin.read()"
            )
            for mode in ("mapped", "private"):
                procs = [subprocess.Popen([sys.executable, "-c", script, str(path), mode, str(i)], cwd=settings.BASE_DIR,
                                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) for i in range(3)]  # fmt: skip
                figures = [list(map(int, p.stdout.readline().split())) for p in procs]
                for p in procs:
                    p.stdin.close()
                    p.wait()
                for (rss, pss, uss), p in zip(figures, procs, strict=True):
                    self.stdout.write(
                        f"  3 processes, base {mode:<7}: pid {p.pid} RSS {rss / 2**20:6.0f} MiB  PSS "
                        f"{pss / 2**20:6.0f} MiB  USS {uss / 2**20:6.0f} MiB"
                    )
        self.stdout.write(self.style.SUCCESS("bench_load --memory-notes done"))
