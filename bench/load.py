"""Load benchmark: the real server under N concurrent MCP clients.

    .venv/bin/python bench/load.py                                  # 2,000 notes, 50 clients
    .venv/bin/python bench/load.py --notes 100000 --clients 50      # the 100k figures
    .venv/bin/python bench/load.py --memory-notes 1000000           # base segment memory at 1M notes, no server

(Formerly `manage.py bench_load`; the options are the same.) It creates a scratch database
(`hyperguild_eval_<pid>`, dropped at the end), stores synthetic notes there, starts the server the way
`make run` does (`manage.py serve --no-worker`, HYPERGUILD_WEB_WORKERS web processes) and prints, for
`--clients` concurrent MCP clients on keep-alive connections:

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
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import IO, Any, TypeVar

if __name__ == "__main__":  # `python bench/x.py` puts bench/ first on the path: the checkout belongs there
    sys.path[0] = str(Path(__file__).resolve().parents[1])

from bench.script import BenchCommand, run, setup_django  # noqa: E402

setup_django()

import numpy as np  # noqa: E402
import psutil  # noqa: E402
from django.conf import settings  # noqa: E402
from django.core.management.base import CommandError, CommandParser  # noqa: E402
from django.db import DatabaseError, connections  # noqa: E402

from bench.serving import (  # noqa: E402
    TOKEN,
    Connection,
    Figures,
    cpu_model,
    cpu_seconds,
    database_cpu_seconds,
    database_url,
    free_port,
    open_loop,
    post_on_kept,
    rpc,
    server_cpu_seconds,
    server_minor_faults,
    server_ms,
    stop_server,
)
from bench.synthetic import SyntheticCorpus, store_synthetic_notes  # noqa: E402
from brain import bm25  # noqa: E402
from brain.evaluation import percentile  # noqa: E402
from brain.models import BrainVersion  # noqa: E402
from brain.scratch import ScratchDatabase  # noqa: E402
from brain.search import hit_rows, search  # noqa: E402
from hyperguild.mcp.engine import CallRecord, Dispatcher  # noqa: E402
from hyperguild.mcp.registry import ToolContext, get_endpoint  # noqa: E402

T = TypeVar("T")
Server = subprocess.Popen[bytes]


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


def side_by_side_table(results: dict[tuple[str, str], list[Figures]], seconds: float, options: dict[str, Any]) -> str:
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
    for name, kind, rate_cell, client_cell, server_cell, errors in rows:
        others = [medians[other, kind] for other, k in medians if k == kind and other != name]
        compare = ""
        if others:
            best_rate = max(o[0] for o in others)
            best_p99 = min(o[1] for o in others)
            mine = medians[name, kind]
            compare = f"{(mine[0] / best_rate - 1) * 100:+.0f} %, {(mine[1] / best_p99 - 1) * 100:+.0f} %"
        phase = "reads" if kind == "reads" else f"reads + writer {options['write_rate']:g}/s"
        lines.append(f"| {name} | {phase} | {rate_cell} | {client_cell} | {server_cell} | {errors} | {compare} |")
    stock = [name for name in {name for name, _ in medians} if name in options["stock"]]
    for kind in dict.fromkeys(kind for _, kind in medians):
        best = [medians[name, kind] for name in stock]
        if not best:
            break
        top_rate, top_client, top_server = max(b[0] for b in best), min(b[1] for b in best), min(b[2] for b in best)
        for name in (name for name, k in medians if k == kind and name not in stock):
            mine = medians[name, kind]
            lines.append(
                f"{name} against the best stock server on each figure ({kind}): calls/s {(mine[0] / top_rate - 1) * 100:+.0f} %, "
                f"client p99 {(mine[1] / top_client - 1) * 100:+.0f} %, server p99 {(mine[2] / top_server - 1) * 100:+.0f} %"
            )
    return "\n".join(lines)


def is_stock(spec: str) -> bool:
    """A stock server of this checkout with Django's own handler and no piece of ours in front (no admission gate)."""
    if checkout_spec(spec) is not None:
        return False
    _, overrides = server_spec(spec)
    return overrides.get("HYPERGUILD_WEB_CONCURRENCY", str(settings.HYPERGUILD_WEB_CONCURRENCY)) == "0"


def checked_options(options: dict[str, Any]) -> dict[str, Any]:
    """`options` with the rates parsed and the server specs split; a CommandError before anything is created."""
    try:
        rates = [float(rate) for rate in options["query_rates"].split(",") if rate.strip()]
    except ValueError:
        raise CommandError(f"--query-rates takes numbers separated by commas, not {options['query_rates']!r}") from None
    if any(not 0 < rate <= 10_000 for rate in rates) or options["write_rate"] <= 0:
        raise CommandError("--query-rates and --write-rate take rates above 0 (calls/s, at most 10,000)")
    servers = [spec.strip() for spec in options["servers"].split(",") if spec.strip()]
    try:
        parsed = [server_spec(spec) for spec in servers if checkout_spec(spec) is None]
        checkouts = [spec for spec in servers if checkout_spec(spec) is not None]
    except ValueError:
        parsed, checkouts = [], []
    if not parsed and checkouts and len(checkouts) == len(servers):
        parsed = [("granian", {})]  # only checkouts: nothing of this one to check
    if (
        not parsed
        or any(name not in settings.HYPERGUILD_SERVERS for name, _ in parsed)
        or len(set(servers)) != len(servers)
    ):
        raise CommandError(
            f"--servers takes distinct names from {', '.join(settings.HYPERGUILD_SERVERS)}, each with an optional "
            f"@threads and /gate (granian@32/2), or label=DIR (another checkout's serve), not {servers!r}"
        )
    return {**options, "rates": rates, "servers": servers, "stock": set()}


class ServerFleet:
    """The web servers under test, each started as `make run` starts one (`manage.py serve --no-worker`) on a
    free port, on the scratch database; a server can be stopped and started again (--restart)."""

    def __init__(self, env: dict[str, str], server_dir: Path, log: IO[bytes] | int) -> None:
        self.env = env
        self.server_dir = server_dir
        self.log = log
        self.servers: dict[str, tuple[int, Server]] = {}
        self.launches: dict[str, tuple[list[str], Path, dict[str, str]]] = {}

    def add(self, spec: str) -> tuple[str, bool]:
        """Start the server `spec` names; its label, and whether it is a stock server of this checkout."""
        command = [sys.executable, "manage.py", "serve", "--no-worker"]
        if (checkout := checkout_spec(spec)) is not None:
            label, directory, env = checkout[0], checkout[1], self.env
        else:
            name, overrides = server_spec(spec)
            label, directory, env = spec, self.server_dir, {**self.env, **overrides}
            command += ["--server", name]
        self.launches[label] = (command, directory, env)
        self.start(label)
        return label, checkout is None and is_stock(spec)

    def start(self, label: str) -> None:
        command, directory, env = self.launches[label]
        port = free_port()
        self.servers[label] = (
            port,
            subprocess.Popen(
                [*command, "--port", str(port)],
                cwd=directory,
                env=env,
                stdout=self.log,
                stderr=self.log,
                start_new_session=True,
            ),
        )

    def stop_all(self) -> None:
        for _, server in self.servers.values():
            if server.poll() is None:
                server.send_signal(signal.SIGTERM)
        for _, server in self.servers.values():
            stop_server(server)


def remove_shared_base() -> None:
    """The scratch corpus's shared BM25 base folder, if the servers wrote one. Asked once the servers are gone:
    with several of them, their pools can hold every connection there is."""
    try:
        corpus_id = BrainVersion.current_with_corpus()[1]
    except DatabaseError:
        corpus_id = None
    directory = bm25.shared_dir(corpus_id)
    if directory is not None:
        shutil.rmtree(directory, ignore_errors=True)


def failed(status: int, payload: bytes) -> bool:
    return status != 200 or b'"isError": true' in payload or b'"isError":true' in payload


async def wait_ready(port: int, server: Server) -> bool:
    """Wait until the server answers; whether it has the bare JSON view /health/live (an older version may not)."""
    for _ in range(600):
        if server.poll() is not None:
            raise SystemExit(f"the server exited with {server.returncode}")
        conn = Connection(port)
        try:
            status, _, _ = await conn.request("GET", "/health/live")
            if status in (200, 404):  # 404: an older version without /health/live, but up
                return status == 200
        except OSError:
            pass
        finally:
            conn.close()
        await asyncio.sleep(0.2)
    raise SystemExit("the server did not come up in 120 s")


async def phase(
    port: int, corpus: SyntheticCorpus, clients: int, seconds: float, calls_each: int | None = None
) -> Figures:
    """`clients` clients calling brain_query back to back, each on its own kept connection, for `seconds`
    (or `calls_each` calls each, on new connections: the warm-up)."""
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
                if failed(status, payload):
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


async def warm_up(port: int, corpus: SyntheticCorpus, clients: int) -> Figures:
    """A few calls per client on new connections, so that every web process has built its index."""
    return await phase(port, corpus, clients, seconds=0, calls_each=max(4, 40 // clients + 2))


async def writer(port: int, rate: float, figures: Figures, lags: list[float], stop: asyncio.Event) -> None:
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
        await found_after(port, marker, written, lags)

    await open_loop(write, rate, stop.is_set, 10, idle)


async def found_after(port: int, marker: str, written: float, lags: list[float]) -> None:
    """Query for `marker` on new connections (the kernel may hand each to another web process) until a query
    finds it, for at most 5 s; the milliseconds since `written` go to `lags`."""
    probe = Connection(port)
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


async def with_writer(port: int, rate: float, measured: Callable[[], Awaitable[T]]) -> tuple[T, Figures, list[float]]:
    """Run the coroutine `measured()` while a writer adds `rate` notes/s; its result, the writes' figures and
    how long written notes took to be found."""
    writes, stop = Figures(), asyncio.Event()
    lags: list[float] = []
    task = asyncio.create_task(writer(port, rate, writes, lags, stop))
    try:
        result = await measured()
    finally:
        stop.set()
        await task
    return result, writes, lags


async def rated_queries(port: int, corpus: SyntheticCorpus, rate: float, seconds: float) -> Figures:
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
        if failed(status, payload):
            figures.error(status, payload)
            return
        figures.client.append(elapsed)
        if (ms := server_ms(headers)) is not None:
            figures.server.append(ms)

    started = time.perf_counter()
    await open_loop(query, rate, lambda: time.perf_counter() - started >= seconds, 30, idle)
    return figures


async def interleaved_round_trips(port: int, samples: int) -> tuple[list[float], list[float]]:
    """`samples` sequential GET /health/live and MCP pings each, alternating on one connection: their ms."""
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
    return bare, ping


async def calls_per_second(port: int, clients: int, seconds: float, method: str, path: str, body: bytes) -> float:
    """`clients` clients sending the same request back to back for `seconds`: answers per second."""
    count = 0
    deadline = time.perf_counter() + seconds

    async def loop() -> None:
        nonlocal count
        c = Connection(port)
        while time.perf_counter() < deadline:
            await c.request(method, path, body)
            count += 1
        c.close()

    await asyncio.gather(*(loop() for _ in range(clients)))
    return count / seconds


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


def synthetic_segment(count: int) -> bm25.Segment:
    """A base segment of `count` synthetic notes built from term counts (no database, no tokenising)."""
    rng = np.random.default_rng(7)
    vocabulary = 30_000
    zipf = 1 / np.arange(1, vocabulary + 1)
    zipf /= zipf.sum()
    parts, lengths = [], []
    chunk = 50_000
    for first in range(0, count, chunk):
        n = min(chunk, count - first)
        sizes = rng.integers(42, 207, size=n)  # title 2–6 + body 40–200 words, as bench/search_scale.py
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
    return bm25.build_segment(
        version=1,
        note_ids=np.arange(1, count + 1, dtype=np.int64),
        statuses=["wiki"] * count,
        wings=["eng"] * count,
        halls=[""] * count,
        lengths=np.concatenate(lengths),
        doc_of=docs,
        keys=keys,
        tfs=tfs,
    )


# Run in 3 processes at once: map (or copy) a saved base segment, rank 300 queries, print RSS, PSS and USS.
MAPPED_SEGMENT_SCRIPT = (
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


def segment_memory_in_processes(path: Path, mode: str) -> list[tuple[int, list[int]]]:
    """Three processes holding the saved segment at `path` at once, mapped or copied (`mode`): each one's pid
    and [RSS, PSS, USS] in bytes."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", MAPPED_SEGMENT_SCRIPT, str(path), mode, str(i)],
            cwd=settings.BASE_DIR,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for i in range(3)
    ]
    figures = [list(map(int, p.stdout.readline().split())) if p.stdout else [] for p in procs]
    for p in procs:
        if p.stdin:
            p.stdin.close()
        p.wait()
    return [(p.pid, f) for p, f in zip(procs, figures, strict=True)]


class Command(BenchCommand):
    help = "Start the real server on a scratch database and print calls/s and latency percentiles under load."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--notes", type=int, default=2000, help="synthetic notes (default: %(default)s)")
        parser.add_argument("--clients", type=int, default=50, help="concurrent MCP clients (default: %(default)s)")
        parser.add_argument("--seconds", type=float, default=15.0, help="length of each phase (default: %(default)s)")
        parser.add_argument(
            "--workers",
            type=int,
            default=settings.HYPERGUILD_WEB_WORKERS,
            help="web processes (default: HYPERGUILD_WEB_WORKERS = %(default)s)",
        )
        parser.add_argument("--write-rate", type=float, default=10.0, help="notes/s of the writer (default: 10)")
        parser.add_argument("--ping-samples", type=int, default=400, help="sequential pings and bare views each")
        parser.add_argument("--memory-notes", type=int, help="only measure base-segment memory at this many notes")
        parser.add_argument(
            "--reads-only",
            action="store_true",
            help="only the brain_query phase (no writer, ping or memory): for quick comparisons",
        )
        parser.add_argument(
            "--query-rates",
            default="100",
            help="open-loop brain_query rates (calls/s, comma-separated) measured with the writer "
            "running: latency at a given load rather than at saturation (default: %(default)s; "
            "empty: none)",
        )
        parser.add_argument(
            "--repeat",
            type=int,
            default=1,
            help="run the brain_query phase this many times on the same server (default: 1)",
        )
        parser.add_argument(
            "--server-log", type=Path, help="write the server's output (its log) to this file instead of discarding it"
        )
        parser.add_argument(
            "--servers",
            default=settings.HYPERGUILD_SERVER,
            help=f"web servers to start, comma-separated ({', '.join(settings.HYPERGUILD_SERVERS)}), "
            "each with an optional @threads and /gate (HYPERGUILD_WEB_THREADS and HYPERGUILD_WEB_CONCURRENCY "
            "for it: granian@32/2, granian@2/0), or label=DIR for another checkout's own serve "
            "(today=/path/to/main); with more than one, "
            "the same clients drive each in turn on the same notes and a side-by-side table is printed (default: HYPERGUILD_SERVER = %(default)s)",
        )
        parser.add_argument(
            "--restart",
            action="store_true",
            help="at the end, restart each server and time its first brain_query answer "
            "(the base segment is mapped from disk, not built)",
        )
        parser.add_argument(
            "--keep-notes",
            action="store_true",
            help="store the notes once in a kept database (hyperguild_eval_kept_notes_<n>_seed11_<schema>) "
            "and copy it in later runs with this flag: a million notes are stored in a quarter of "
            "an hour, copied in a minute or two (drop it with DROP DATABASE when done)",
        )
        parser.add_argument(
            "--server-dir",
            type=Path,
            default=Path(settings.BASE_DIR),
            help="checkout whose `manage.py serve` is started (to compare with an older version)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        options = checked_options(options)
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
        corpus = SyntheticCorpus(seed=11)
        count = options["notes"]

        def store() -> None:
            started = time.perf_counter()
            store_synthetic_notes(corpus, count)
            self.stdout.write(f"{count} notes stored in {time.perf_counter() - started:.1f} s")

        kept = f"notes_{count}_seed11" if options["keep_notes"] else None
        try:
            with ScratchDatabase(self.stdout, kept=kept, fill=store) as scratch:
                self.stdout.write(f"scratch database {scratch.name}")
                if kept is None:
                    store()
                elif not scratch.filled:
                    for _ in range(count):  # the same draws as storing them: the queries that follow are the same
                        corpus.note()
                    self.stdout.write(f"{count} notes copied from the kept database (--keep-notes)")
                self.run(corpus, options)
        finally:
            signal.signal(signal.SIGTERM, previous)
        self.stdout.write(self.style.SUCCESS("bench_load done; scratch database dropped"))

    # -- the run ---------------------------------------------------------------------------

    def run(self, corpus: SyntheticCorpus, options: dict[str, Any]) -> None:
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
        fleet = ServerFleet(env, options["server_dir"], log)
        try:
            self.measure(fleet, corpus, options)
        finally:
            fleet.stop_all()
            if not isinstance(log, int):
                log.close()
            remove_shared_base()
        if not options["reads_only"] and len(fleet.servers) == 1:
            self.breakdown(corpus)

    def measure(self, fleet: ServerFleet, corpus: SyntheticCorpus, options: dict[str, Any]) -> None:
        """Start the servers one at a time (each migrates), drive them, then time restarts (--restart)."""
        for spec in options["servers"]:
            label, stock = fleet.add(spec)
            if stock:
                options["stock"].add(label)
            asyncio.run(wait_ready(*fleet.servers[label]))
        if len(fleet.servers) == 1:
            ((port, server),) = fleet.servers.values()
            asyncio.run(self.drive(port, server, corpus, options))
        else:
            asyncio.run(self.side_by_side(fleet.servers, corpus, options))
        if options["restart"]:
            for label in list(fleet.servers):
                stop_server(fleet.servers[label][1])
                started = time.perf_counter()
                fleet.start(label)
                asyncio.run(self.first_answer(label, started, *fleet.servers[label], corpus))
                stop_server(fleet.servers[label][1])  # one at a time: the next restart has the machine to itself

    async def side_by_side(
        self, servers: dict[str, tuple[int, Server]], corpus: SyntheticCorpus, options: dict[str, Any]
    ) -> None:
        """The 50-client phase (and, unless --reads-only, the same with the writer) on each web server in turn,
        --repeat rounds, the order rotated each round; all the servers stay up on the same scratch database, so
        they serve the same notes on the same machine at the same time of day."""
        clients, seconds = options["clients"], options["seconds"]
        for name, (port, server) in servers.items():
            await wait_ready(port, server)
            warm = await warm_up(port, corpus, clients)
            self.stdout.write(
                f"{name}: up on port {port} with {options['workers']} web process(es), "
                f"warmed up with {len(warm.client)} calls"
            )
        names = list(servers)
        kinds = ["reads"] if options["reads_only"] else ["reads", "writer"]
        results: dict[tuple[str, str], list[Figures]] = {(name, kind): [] for name in names for kind in kinds}
        for round_number in range(max(1, options["repeat"])):
            order = names[round_number % len(names) :] + names[: round_number % len(names)]
            for kind in kinds:
                for name in order:
                    port = servers[name][0]
                    if kind == "reads":
                        figures = await phase(port, corpus, clients, seconds)
                    else:
                        figures, _, _ = await with_writer(
                            port, options["write_rate"], partial(phase, port, corpus, clients, seconds)
                        )
                    results[name, kind].append(figures)
                    label = (
                        f"round {round_number + 1}, {name}, {clients} clients{' + writer' if kind == 'writer' else ''}"
                    )
                    self.stdout.write(f"{label:<46}: {figures.line(seconds)}")
                    self.first_error(figures)
        self.stdout.write(side_by_side_table(results, seconds, options))
        for name, (_, server) in servers.items():
            self.memory(server, f"{name}, at the end")

    def first_error(self, figures: Figures) -> None:
        if figures.first_error:
            self.stdout.write(f"  first error: {figures.first_error}")

    async def drive(self, port: int, server: Server, corpus: SyntheticCorpus, options: dict[str, Any]) -> None:
        """Every phase on one server: warm-up, reads (--repeat times), unless --reads-only reads with the writer,
        reads at fixed rates with the writer, ping against the bare view, and memory."""
        has_bare_view = await wait_ready(port, server)
        clients, seconds = options["clients"], options["seconds"]
        self.stdout.write(f"server up on port {port} with {options['workers']} web process(es)")

        started = time.perf_counter()
        warm = await warm_up(port, corpus, clients)
        self.stdout.write(
            f"warm-up ({len(warm.client)} calls, first index per process): {time.perf_counter() - started:.1f} s"
        )
        self.memory(server, "after the warm-up (each process has its first index)")

        for _ in range(max(1, options["repeat"])):
            await self.reads_with_cpu(port, server, corpus, clients, seconds)
        if options["reads_only"]:
            return

        mixed, writes, lags = await with_writer(
            port, options["write_rate"], partial(phase, port, corpus, clients, seconds)
        )
        self.stdout.write(f"brain_query, {clients} clients + writer : {mixed.line(seconds)}")
        self.first_error(mixed)
        self.stdout.write(f"  writer brain_ingest at {options['write_rate']:g}/s     : {writes.line(seconds)}")
        if lags:
            self.stdout.write(
                f"  a written note found by a query on any process after: p50 {percentile(lags, 50):.0f} ms, "
                f"max {max(lags):.0f} ms ({len(lags)} notes probed)"
            )

        for rate in options["rates"]:
            rated, _, _ = await with_writer(
                port, options["write_rate"], partial(rated_queries, port, corpus, rate, seconds)
            )
            label = f"brain_query at {rate:g}/s + writer"
            self.stdout.write(f"{label:<33}: {rated.line(seconds)}")
            self.first_error(rated)

        if has_bare_view:
            await self.ping_ratio(port, clients, options["ping_samples"], min(5.0, seconds))
        else:
            self.stdout.write("no /health/live on this server: ping vs bare view skipped")
        self.memory(server, "at the end (after the writer's phases)")

    async def reads_with_cpu(
        self, port: int, server: Server, corpus: SyntheticCorpus, clients: int, seconds: float
    ) -> None:
        """The brain_query phase, and the CPU each call cost the web processes, PostgreSQL and these clients."""
        cpu, db_cpu, own_cpu = server_cpu_seconds(server), database_cpu_seconds(), time.process_time()
        faults = server_minor_faults(server)
        reads = await phase(port, corpus, clients, seconds)
        calls = max(1, len(reads.client))
        cpu_per_call = (server_cpu_seconds(server) - cpu) * 1000 / calls
        faults_per_call = (server_minor_faults(server) - faults) / calls
        db_per_call = (database_cpu_seconds() - db_cpu) * 1000 / calls
        own_per_call = (time.process_time() - own_cpu) * 1000 / calls
        self.stdout.write(f"brain_query, {clients} clients          : {reads.line(seconds)}")
        self.stdout.write(reads.fairness())
        self.first_error(reads)
        self.stdout.write(
            f"  CPU per brain_query: web processes {cpu_per_call:.2f} ms, PostgreSQL {db_per_call:.1f} ms, "
            f"these clients {own_per_call:.1f} ms (what load does not change much); "
            f"web processes' minor page faults per call {faults_per_call:.1f}"
        )

    async def first_answer(
        self, label: str, started: float, port: int, server: Server, corpus: SyntheticCorpus
    ) -> None:
        """After a restart: when the server answers /health/live, its first brain_query (and the CPU the server's
        processes used until then: what a busy machine does not change much), and the slowest of the next calls
        on new connections (which reach the other web processes)."""
        await wait_ready(port, server)
        up = time.perf_counter() - started
        first, start_cpu = None, 0.0
        while first is None:
            conn = Connection(port)
            try:
                body = rpc("tools/call", {"name": "brain_query", "arguments": {"query": corpus.query(), "limit": 10}})
                status, _, payload = await conn.request("POST", "/mcp/brain", body)
            finally:
                conn.close()
            if not failed(status, payload):
                first = time.perf_counter() - started
                tree = psutil.Process(server.pid)
                start_cpu = cpu_seconds([tree, *tree.children(recursive=True)])
            elif server.poll() is not None:
                raise SystemExit(f"{label}: the server exited with {server.returncode} after its restart")
            else:
                await asyncio.sleep(0.1)
        following = await phase(port, corpus, clients=4, seconds=0, calls_each=5)
        self.stdout.write(
            f"{label}, restarted: serving after {up:.1f} s, first brain_query answered after {first:.1f} s "
            f"(CPU of serve and its web processes until then: {start_cpu:.1f} s); "
            f"the next {len(following.client)} calls on new connections: slowest {max(following.client or [0]):.0f} ms"
        )

    async def ping_ratio(self, port: int, clients: int, samples: int, seconds: float) -> None:
        bare, ping = await interleaved_round_trips(port, samples)
        ratio = percentile(ping, 50) / percentile(bare, 50)
        self.stdout.write(
            f"sequential round trip: bare JSON view p50 {percentile(bare, 50):.2f} ms, MCP ping p50 "
            f"{percentile(ping, 50):.2f} ms -> ping/bare {ratio:.2f}x ({samples} each, interleaved)"
        )
        rates = {
            "bare": await calls_per_second(port, clients, seconds, "GET", "/health/live", b""),
            "ping": await calls_per_second(port, clients, seconds, "POST", "/mcp/brain", rpc("ping")),
        }
        self.stdout.write(
            f"throughput with {clients} clients: bare JSON view {rates['bare']:.0f}/s, MCP ping {rates['ping']:.0f}/s "
            f"-> bare/ping {rates['bare'] / rates['ping']:.2f}x"
        )

    def memory(self, server: Server, when: str) -> None:
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
                f"USS {info.uss / 2**20:6.0f} MiB  {cmd}{mapped_bases(proc)}"
            )

    # -- where the time goes ---------------------------------------------------------------

    def breakdown(self, corpus: SyntheticCorpus) -> None:
        """Time the pieces of one brain_query in this process (same database, no HTTP)."""
        bm25.reset()
        bm25.current_index()
        queries = [corpus.query() for _ in range(200)]
        endpoint = get_endpoint("brain")
        tool = endpoint.tools["brain_query"]
        pieces: dict[str, list[float]] = {}

        def timed(name: str, fn: Callable[[], T]) -> T:
            t0 = time.perf_counter()
            value = fn()
            pieces.setdefault(name, []).append((time.perf_counter() - t0) * 1000)
            return value

        def call_tool(query: str, request_id: int) -> Any:
            result = tool.call({"query": query}, ToolContext(endpoint="brain", request_id=request_id))
            return result.model_dump(mode="json")  # the engine dumps the result model at the wire

        def schema_errors(structured: Any) -> list[Any]:
            return list(tool.output_validator.iter_errors(structured))

        def encode(structured: Any) -> str:
            text = json.dumps(structured, ensure_ascii=False, separators=(",", ":"))
            return json.dumps(
                {"result": {"structuredContent": structured, "content": [{"type": "text", "text": text}]}}
            )

        def dispatch(message: dict[str, Any], request_id: int) -> Any:
            return Dispatcher(endpoint).handle(
                message, ToolContext(endpoint="brain", request_id=request_id), CallRecord()
            )

        snapshot = bm25.current_index()
        for i, query in enumerate(queries):
            tokens = timed("tokenize query", partial(bm25.tokenize, query))
            timed("version query (SQL)", BrainVersion.current_with_corpus)
            ranking = timed("BM25 ranking", partial(snapshot.rank, tokens, limit=30, status="wiki"))
            ids = [note_id for note_id, _ in ranking[:10]]
            timed("hits SQL", partial(hit_rows, ids))
            timed("search() total", partial(search, query, limit=10))
            structured = timed("tool handler total", partial(call_tool, query, i))
            timed("output schema check (sampled)", partial(schema_errors, structured))
            timed("JSON encoding", partial(encode, structured))
            message = {
                "jsonrpc": "2.0",
                "id": i,
                "method": "tools/call",
                "params": {"name": "brain_query", "arguments": {"query": query}},
            }
            timed("JSON-RPC dispatch total", partial(dispatch, message, i))
            timed("JSON-RPC ping dispatch", partial(dispatch, {"jsonrpc": "2.0", "id": i, "method": "ping"}, i))
        self.stdout.write("where a brain_query call's time goes (in process, p50 / p95 ms over 200 queries):")
        for name, values in pieces.items():
            self.stdout.write(f"  {name:<26} {np.percentile(values, 50):7.2f} {np.percentile(values, 95):7.2f}")

    # -- memory at scale, no server ---------------------------------------------------------

    def memory_only(self, count: int) -> None:
        """Build a base segment of `count` synthetic notes from term counts (no database, no tokenising),
        then map it from disk in 3 processes and report what each costs."""
        started = time.perf_counter()
        segment = synthetic_segment(count)
        self.stdout.write(
            f"{count} notes: {len(segment.post_docs)} postings, {len(segment.keys)} terms, base segment arrays "
            f"{segment.nbytes / 2**20:.0f} MiB (built in {time.perf_counter() - started:.1f} s)"
        )
        with tempfile.TemporaryDirectory(dir=settings.DATA_DIR) as tmp:
            path = bm25.save_segment(segment, Path(tmp), "bench")
            del segment
            for mode in ("mapped", "private"):
                for pid, (rss, pss, uss) in segment_memory_in_processes(path, mode):
                    self.stdout.write(
                        f"  3 processes, base {mode:<7}: pid {pid} RSS {rss / 2**20:6.0f} MiB  PSS "
                        f"{pss / 2**20:6.0f} MiB  USS {uss / 2**20:6.0f} MiB"
                    )
        self.stdout.write(self.style.SUCCESS("bench_load --memory-notes done"))


if __name__ == "__main__":
    run(Command())
