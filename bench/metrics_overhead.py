"""What metrics and tracing cost the service: `bench_load --reads-only` with them off and on, interleaved.

    .venv/bin/python bench/metrics_overhead.py --rounds 3 --notes 2000 --seconds 15

"off": HYPERGUILD_METRICS=0 and no OTEL_EXPORTER_OTLP_ENDPOINT. "on": /metrics counting every
request and MCP call, and every request traced (Django, MCP, search, psycopg spans) and exported
over OTLP/HTTP to a collector on 127.0.0.1 (tests.fakes.otlp, decoding every export). Prints each
round's calls/s and server p99 and the medians.
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

from tests.fakes.otlp import FakeCollector  # noqa: E402 (after the path set-up)

LINE = re.compile(r"([\d.]+) calls/s \| client p50.*server p50\s+[\d.]+\s+p95\s+[\d.]+\s+p99\s+([\d.]+)")


def run(env: dict, args) -> tuple[float, float]:
    command = [sys.executable, "manage.py", "bench_load", "--reads-only", "--notes", str(args.notes),
               "--seconds", str(args.seconds), "--clients", str(args.clients)]  # fmt: skip
    out = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
    if out.returncode != 0:
        raise SystemExit(f"bench_load failed:\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")
    for line in out.stdout.splitlines():
        match = LINE.search(line)
        if match and "brain_query" in line:
            return float(match.group(1)), float(match.group(2))
    raise SystemExit(f"no brain_query line in:\n{out.stdout[-3000:]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--notes", type=int, default=2000)
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--clients", type=int, default=50)
    args = parser.parse_args()
    base = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    figures: dict[str, list[tuple[float, float]]] = {"off": [], "on": []}
    with FakeCollector() as collector:
        arms = {
            "off": {**base, "HYPERGUILD_METRICS": "0"},
            "on": {**base, "HYPERGUILD_METRICS": "1", "OTEL_EXPORTER_OTLP_ENDPOINT": collector.url},
        }
        for round_number in range(1, args.rounds + 1):
            for name in ("off", "on") if round_number % 2 else ("on", "off"):
                rate, p99 = run(arms[name], args)
                figures[name].append((rate, p99))
                print(f"round {round_number} {name:3}: {rate:7.1f} calls/s, server p99 {p99:6.1f} ms", flush=True)
        spans = len(collector.spans())
    for name, rows in figures.items():
        print(f"{name:3}: median {statistics.median(r for r, _ in rows):7.1f} calls/s, "
              f"median server p99 {statistics.median(p for _, p in rows):6.1f} ms")  # fmt: skip
    off, on = (statistics.median(r for r, _ in figures[n]) for n in ("off", "on"))
    print(f"on vs off: {(on / off - 1) * 100:+.1f} % calls/s; spans received by the collector: {spans}")


if __name__ == "__main__":
    main()
