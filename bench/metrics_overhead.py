"""What metrics and tracing cost the service: `bench/load.py --reads-only` with them off and on, interleaved.

    .venv/bin/python bench/metrics_overhead.py --rounds 3 --notes 2000 --seconds 15

Arms (`--arms`, default all four): "off" (HYPERGUILD_METRICS=0, no OTEL_EXPORTER_OTLP_ENDPOINT),
"metrics" (/metrics counting every request and MCP call), "tracing" (tracing on as the service
samples it by default — a hundredth of new traces, with Django, MCP, search and psycopg spans — and exported over OTLP/HTTP to a sink on 127.0.0.1 that reads and
drops each export, as a collector on another host would cost this machine nothing), "both".
`--sample R` records a share R of new traces instead (HYPERGUILD_TRACE_SAMPLE; 1: every request).
Prints each round's calls/s, server p99, the web processes' CPU and minor page faults per call, and the medians.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fakes.http import FakeHTTPServer, Response  # noqa: E402 (after the path set-up)

CPU = re.compile(r"CPU per brain_query: web processes ([\d.]+) ms.*minor page faults per call ([\d.]+)")
LINE = re.compile(r"([\d.]+) calls/s \| client p50.*server p50\s+[\d.]+\s+p95\s+[\d.]+\s+p99\s+([\d.]+)")


def run(env: dict, args) -> tuple[float, float, float, float]:
    command = [
        sys.executable,
        "bench/load.py",
        "--reads-only",
        "--notes",
        str(args.notes),
        "--seconds",
        str(args.seconds),
        "--clients",
        str(args.clients),
    ]
    out = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
    if out.returncode != 0:
        raise SystemExit(f"bench/load.py failed:\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")
    cpu = CPU.search(out.stdout)
    for line in out.stdout.splitlines():
        match = LINE.search(line)
        if match and "brain_query" in line and cpu:
            return float(match.group(1)), float(match.group(2)), float(cpu.group(1)), float(cpu.group(2))
    raise SystemExit(f"no brain_query line in:\n{out.stdout[-3000:]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--notes", type=int, default=2000)
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--arms", default="off,metrics,tracing,both")
    parser.add_argument(
        "--sample",
        type=float,
        default=None,
        help="HYPERGUILD_TRACE_SAMPLE: the share of new traces recorded (default: the service's, 0.01)",
    )
    args = parser.parse_args()
    base = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    names = args.arms.split(",")
    figures: dict[str, list[tuple[float, float, float, float]]] = {name: [] for name in names}
    exports = []
    with FakeHTTPServer(lambda request: exports.append(len(request.raw)) or Response(200, raw=b"")) as sink:
        tracing = {"OTEL_EXPORTER_OTLP_ENDPOINT": sink.url}
        if args.sample is not None:
            tracing |= {"HYPERGUILD_TRACE_SAMPLE": str(args.sample)}
        arms = {
            "off": {**base, "HYPERGUILD_METRICS": "0"},
            "metrics": {**base, "HYPERGUILD_METRICS": "1"},
            "tracing": {**base, "HYPERGUILD_METRICS": "0", **tracing},
            "both": {**base, "HYPERGUILD_METRICS": "1", **tracing},
        }
        for round_number in range(1, args.rounds + 1):
            order = names if round_number % 2 else list(reversed(names))
            for name in order:
                rate, p99, cpu, faults = run(arms[name], args)
                figures[name].append((rate, p99, cpu, faults))
                print(
                    f"round {round_number} {name:7}: {rate:7.1f} calls/s, server p99 {p99:6.1f} ms, "
                    f"web CPU {cpu:.2f} ms and {faults:.1f} page faults per call",
                    flush=True,
                )
    off = statistics.median(r[0] for r in figures[names[0]])
    off_cpu = statistics.median(r[2] for r in figures[names[0]])
    for name, rows in figures.items():
        rate, cpu = statistics.median(r[0] for r in rows), statistics.median(r[2] for r in rows)
        print(
            f"{name:7}: median {rate:7.1f} calls/s ({(rate / off - 1) * 100:+.1f} % vs {names[0]}), "
            f"median server p99 {statistics.median(r[1] for r in rows):6.1f} ms, "
            f"median web CPU per call {cpu:.2f} ms ({(cpu / off_cpu - 1) * 100:+.1f} %)"
        )
    print(f"OTLP exports received: {len(exports)} ({sum(exports) / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()
